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

package remediation

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

func testMachine(infraKind string) *clusterv1.Machine {
	return &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "worker-0"},
		Spec: clusterv1.MachineSpec{ClusterName: "cluster", InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: infraKind, Name: "worker-0",
		}},
	}
}

func TestFindTarget(t *testing.T) {
	tests := []struct {
		name        string
		objects     []client.Object
		wantReason  string
		wantMessage string
	}{
		{name: "the Machine and its Metal3Machine", objects: []client.Object{testMachine("Metal3Machine"), testMetal3Machine()}},
		{name: "no Machine", wantReason: infrav1.RemediationMachineNotFoundReason, wantMessage: "Machine tenant/worker-0"},
		{
			name: "no Metal3Machine", objects: []client.Object{testMachine("Metal3Machine")},
			wantReason: infrav1.RemediationMetal3MachineNotFoundReason, wantMessage: "Metal3Machine tenant/worker-0",
		},
		{
			name: "another infrastructure", objects: []client.Object{testMachine("DockerMachine")},
			wantReason: infrav1.RemediationMetal3MachineNotFoundReason, wantMessage: "not a Metal3Machine",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(tt.objects...).Build()
			r := &infrav1.Metal3Remediation{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "worker-0"}}
			target, err := FindTarget(context.Background(), c, r)
			ReportTarget(r, nil, err)
			if tt.wantReason == "" {
				if err != nil || target.Machine.Name != "worker-0" || target.M3Machine.Name != "worker-0" {
					t.Fatalf("FindTarget = %+v, %v", target, err)
				}
				return
			}
			cond := conditions.Get(r, infrav1.RemediationHostFoundCondition)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != tt.wantReason || !strings.Contains(cond.Message, tt.wantMessage) {
				t.Fatalf("HostFound = %+v, want False, %s, naming %q", cond, tt.wantReason, tt.wantMessage)
			}
		})
	}
}

func TestRequestReplacement(t *testing.T) {
	ctx := context.Background()
	machine := testMachine("Metal3Machine")
	machine.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: clusterv1.GroupVersion.String(), Kind: "MachineSet", Name: "workers", UID: "ms-uid", Controller: ptr.To(true),
	}}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(machine).WithStatusSubresource(machine).Build()
	if err := c.Get(ctx, client.ObjectKeyFromObject(machine), machine); err != nil {
		t.Fatal(err)
	}
	m := CAPIMachine(c, &Target{Machine: machine, M3Machine: testMetal3Machine()})
	if !m.Replaceable() || m.Deleting() || m.Unhealthy() {
		t.Fatalf("replaceable %v, deleting %v, unhealthy %v", m.Replaceable(), m.Deleting(), m.Unhealthy())
	}
	if err := m.RequestReplacement(ctx, "still unhealthy"); err != nil {
		t.Fatal(err)
	}
	got := &clusterv1.Machine{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(machine), got); err != nil {
		t.Fatal(err)
	}
	cond := conditions.Get(got, clusterv1.MachineOwnerRemediatedCondition)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != clusterv1.MachineOwnerRemediatedWaitingForRemediationReason {
		t.Fatalf("OwnerRemediated = %+v, want False, %s", cond, clusterv1.MachineOwnerRemediatedWaitingForRemediationReason)
	}
	if CAPIMachine(c, &Target{Machine: testMachine("Metal3Machine"), M3Machine: testMetal3Machine()}).Replaceable() {
		t.Fatal("a Machine without a controller is replaceable")
	}
}

func TestRemediationHistory(t *testing.T) {
	ctx := context.Background()
	m3m := testMetal3Machine()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(m3m).Build()
	if err := c.Get(ctx, client.ObjectKeyFromObject(m3m), m3m); err != nil {
		t.Fatal(err)
	}
	m := CAPIMachine(c, &Target{Machine: testMachine("Metal3Machine"), M3Machine: m3m})
	if _, ok := m.PreviousRemediation(); ok {
		t.Fatal("a new machine has a remediation history")
	}
	want := History{RetryCount: 2, LastRemediated: metav1.NewTime(now.Add(-time.Minute)), HealthyAt: metav1.NewTime(now)}
	if err := m.RecordRemediation(ctx, want); err != nil {
		t.Fatal(err)
	}
	stored := &infrav1.Metal3Machine{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(m3m), stored); err != nil {
		t.Fatal(err)
	}
	if stored.Annotations[infrav1.HostAnnotation] == "" {
		t.Fatal("recording the history dropped the machine's other annotations")
	}
	got, ok := CAPIMachine(c, &Target{Machine: testMachine("Metal3Machine"), M3Machine: stored}).PreviousRemediation()
	if !ok || got.RetryCount != 2 || !got.HealthyAt.Equal(&want.HealthyAt) || !got.LastRemediated.Equal(&want.LastRemediated) {
		t.Fatalf("read back %+v (%v), want %+v", got, ok, want)
	}
}
