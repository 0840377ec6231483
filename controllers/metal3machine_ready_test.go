/*
Copyright The Metal3 Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// TestSetMachineReady checks how the machine's conditions sum up to Ready:
// the first unmet one says why; IdentityReady and DataReady count only when
// reported, and DataReady no longer once the host is provisioned.
func TestSetMachineReady(t *testing.T) {
	type cond struct {
		condType string
		status   metav1.ConditionStatus
		reason   string
	}
	tests := []struct {
		name       string
		conditions []cond
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{
			name:       "nothing reported",
			wantStatus: metav1.ConditionFalse, wantReason: infrav1.NotReadyReason,
		},
		{
			name: "provisioned without identity or data conditions",
			conditions: []cond{
				{infrav1.HostAssociatedCondition, metav1.ConditionTrue, infrav1.AssociatedReason},
				{infrav1.HostProvisionedCondition, metav1.ConditionTrue, infrav1.ProvisionedReason},
			},
			wantStatus: metav1.ConditionTrue, wantReason: infrav1.ReadyReason,
		},
		{
			name: "identity first",
			conditions: []cond{
				{infrav1.IdentityReadyCondition, metav1.ConditionFalse, infrav1.IdentityUnreachableReason},
				{infrav1.HostAssociatedCondition, metav1.ConditionFalse, infrav1.NoAvailableHostReason},
			},
			wantStatus: metav1.ConditionFalse, wantReason: infrav1.IdentityUnreachableReason,
		},
		{
			name: "waiting for data before provisioning",
			conditions: []cond{
				{infrav1.HostAssociatedCondition, metav1.ConditionTrue, infrav1.AssociatedReason},
				{infrav1.DataReadyCondition, metav1.ConditionFalse, infrav1.Metal3DataClaimDataFailedReason},
				{infrav1.HostProvisionedCondition, metav1.ConditionFalse, infrav1.WaitingForDataReason},
			},
			wantStatus: metav1.ConditionFalse, wantReason: infrav1.Metal3DataClaimDataFailedReason,
		},
		{
			name: "data failing after provisioning leaves the node ready",
			conditions: []cond{
				{infrav1.HostAssociatedCondition, metav1.ConditionTrue, infrav1.AssociatedReason},
				{infrav1.DataReadyCondition, metav1.ConditionFalse, infrav1.Metal3DataClaimDataFailedReason},
				{infrav1.HostProvisionedCondition, metav1.ConditionTrue, infrav1.ProvisionedReason},
			},
			wantStatus: metav1.ConditionTrue, wantReason: infrav1.ReadyReason,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m3m := &infrav1.Metal3Machine{}
			for _, c := range tt.conditions {
				setCondition(m3m, c.condType, c.status, c.reason, "")
			}
			if err := setMachineReady(m3m); err != nil {
				t.Fatalf("setMachineReady: %v", err)
			}
			ready := conditions.Get(m3m, infrav1.ReadyCondition)
			if ready == nil {
				t.Fatal("no Ready condition")
			}
			if ready.Status != tt.wantStatus || ready.Reason != tt.wantReason {
				t.Errorf("Ready = %s/%s, want %s/%s", ready.Status, ready.Reason, tt.wantStatus, tt.wantReason)
			}
		})
	}
}
