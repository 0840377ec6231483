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

package readiness

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

func TestSet(t *testing.T) {
	const first, second, optional = "First", "Second", "Optional"
	cond := func(condType string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: condType, Status: status, Reason: reason, Message: message}
	}
	tests := []struct {
		name         string
		conditions   []metav1.Condition
		deleting     bool
		wantStatus   metav1.ConditionStatus
		wantReason   string
		wantMessages []string
	}{
		{
			name:       "nothing reported is not ready, never unknown",
			wantStatus: metav1.ConditionFalse, wantReason: infrav1.NotReadyReason,
			wantMessages: []string{"* First: Condition not yet reported", "* Second: Condition not yet reported"},
		},
		{
			name: "all met",
			conditions: []metav1.Condition{
				cond(first, metav1.ConditionTrue, "FirstDone", ""), cond(second, metav1.ConditionTrue, "SecondDone", "second is done"),
			},
			wantStatus: metav1.ConditionTrue, wantReason: infrav1.ReadyReason,
		},
		{
			name: "the first unmet condition gives the reason",
			conditions: []metav1.Condition{
				cond(second, metav1.ConditionFalse, "SecondBlocked", "second is blocked"),
				cond(first, metav1.ConditionFalse, "FirstBlocked", "first is blocked"),
			},
			wantStatus: metav1.ConditionFalse, wantReason: "FirstBlocked",
			wantMessages: []string{"* First: first is blocked", "* Second: second is blocked"},
		},
		{
			name: "a failing condition comes before one not reported yet",
			conditions: []metav1.Condition{
				cond(second, metav1.ConditionFalse, "SecondBlocked", "second is blocked"),
			},
			wantStatus: metav1.ConditionFalse, wantReason: "SecondBlocked",
		},
		{
			name: "an unknown condition gives its own reason",
			conditions: []metav1.Condition{
				cond(first, metav1.ConditionTrue, "FirstDone", ""), cond(second, metav1.ConditionUnknown, "SecondUnsure", "cannot tell"),
			},
			wantStatus: metav1.ConditionFalse, wantReason: "SecondUnsure",
		},
		{
			name: "an optional condition counts once reported",
			conditions: []metav1.Condition{
				cond(first, metav1.ConditionTrue, "FirstDone", ""), cond(second, metav1.ConditionTrue, "SecondDone", ""),
				cond(optional, metav1.ConditionFalse, "OptionalBlocked", "optional is blocked"),
			},
			wantStatus: metav1.ConditionFalse, wantReason: "OptionalBlocked",
		},
		{
			name:     "deleting",
			deleting: true,
			conditions: []metav1.Condition{
				cond(first, metav1.ConditionTrue, "FirstDone", ""), cond(second, metav1.ConditionFalse, "SecondBlocked", "waiting for the hosts to go"),
			},
			wantStatus: metav1.ConditionFalse, wantReason: infrav1.DeletingReason,
			wantMessages: []string{"* Second: waiting for the hosts to go"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &infrav1.Metal3Data{}
			for _, c := range tt.conditions {
				conditions.Set(obj, c)
			}
			err := Set(obj, Summary{Conditions: []string{first, second, optional}, Optional: []string{optional}, Deleting: tt.deleting})
			if err != nil {
				t.Fatal(err)
			}
			ready := conditions.Get(obj, infrav1.ReadyCondition)
			if ready == nil {
				t.Fatal("no Ready condition")
			}
			if ready.Status != tt.wantStatus || ready.Reason != tt.wantReason {
				t.Errorf("Ready = %s/%s, want %s/%s", ready.Status, ready.Reason, tt.wantStatus, tt.wantReason)
			}
			for _, m := range tt.wantMessages {
				if !strings.Contains(ready.Message, m) {
					t.Errorf("Ready message %q does not say %q", ready.Message, m)
				}
			}
		})
	}
}
