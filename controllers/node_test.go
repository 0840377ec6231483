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
	"context"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
)

func TestAwaitNodeRef(t *testing.T) {
	const providerID = "metal3://ns/host/m3m"
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	longAgo := metav1.NewTime(now.Add(-nodeRefWait))
	justNow := metav1.NewTime(now.Add(-time.Second))
	deleted := metav1.NewTime(now)

	tests := []struct {
		name string
		// published is the providerID the Metal3Machine had before this
		// reconcile; machineProviderID what Cluster API copied to the
		// Machine.
		published         string
		machineProviderID string
		nodeRef           string
		deleting          bool
		lastUpdated       *metav1.Time
		// provisionedAgo is how long ago the host was seen provisioned
		// (0: not known).
		provisionedAgo time.Duration
		result         ctrl.Result
		wantNudge      bool
		wantRequeue    time.Duration
	}{
		{
			name:      "linked: nothing to wait for",
			published: providerID, machineProviderID: providerID, nodeRef: "node-0",
			lastUpdated: &longAgo,
		},
		{
			name:      "published in this reconcile: Cluster API has not looked yet",
			published: "", lastUpdated: &longAgo,
			wantRequeue: nodeRefWait,
		},
		{
			name:      "Cluster API has not copied the providerID yet",
			published: providerID, lastUpdated: &longAgo,
			wantRequeue: nodeRefWait,
		},
		{
			name:      "Cluster API looked and missed, long ago: asked to look again",
			published: providerID, machineProviderID: providerID, lastUpdated: &longAgo,
			wantNudge: true, wantRequeue: nodeRefWait,
		},
		{
			name:      "Cluster API looked and missed, status never stamped",
			published: providerID, machineProviderID: providerID,
			wantNudge: true, wantRequeue: nodeRefWait,
		},
		{
			name:      "Cluster API looked a moment ago: no new event yet",
			published: providerID, machineProviderID: providerID, lastUpdated: &justNow,
			wantRequeue: nodeRefWait,
		},
		{
			name:      "a sooner requeue is kept",
			published: providerID, machineProviderID: providerID, lastUpdated: &justNow,
			result:      ctrl.Result{RequeueAfter: time.Second},
			wantRequeue: time.Second,
		},
		{
			name:      "a later requeue is brought forward",
			published: providerID, machineProviderID: providerID, lastUpdated: &justNow,
			result:      ctrl.Result{RequeueAfter: nodeRequeue},
			wantRequeue: nodeRefWait,
		},
		{
			name:      "host provisioned a moment ago, published in this reconcile: looks again soon",
			published: "", lastUpdated: &justNow, provisionedAgo: 2 * time.Second,
			wantRequeue: bootWaitFloor,
		},
		{
			name:      "host provisioned a moment ago, Cluster API looked and missed a second ago: asked to look again",
			published: providerID, machineProviderID: providerID, lastUpdated: &justNow, provisionedAgo: 2 * time.Second,
			wantNudge: true, wantRequeue: bootWaitFloor,
		},
		{
			name:      "host provisioned 8 s ago, stamped a second ago: not asked again yet, waits 4 s",
			published: providerID, machineProviderID: providerID, lastUpdated: &justNow, provisionedAgo: 8 * time.Second,
			wantRequeue: 4 * time.Second,
		},
		{
			name:      "the Machine is being deleted",
			published: providerID, machineProviderID: providerID, deleting: true, lastUpdated: &longAgo,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			machine := &clusterv1.Machine{Spec: clusterv1.MachineSpec{ProviderID: tt.machineProviderID}}
			machine.Status.NodeRef.Name = tt.nodeRef
			if tt.deleting {
				machine.DeletionTimestamp = &deleted
				machine.Finalizers = []string{clusterv1.MachineFinalizer}
			}
			m3m := &infrav1.Metal3Machine{}
			m3m.Status.LastUpdated = tt.lastUpdated.DeepCopy()
			if tt.provisionedAgo > 0 {
				m3m.Status.Conditions = []metav1.Condition{{Type: infrav1.HostProvisionedCondition, Status: metav1.ConditionTrue,
					Reason: infrav1.ProvisionedReason, LastTransitionTime: metav1.NewTime(now.Add(-tt.provisionedAgo))}}
			}
			s := &machineScope{machine: machine, m3m: m3m}

			result := awaitNodeRef(context.Background(), s, tt.published, tt.result, now)

			if result.RequeueAfter != tt.wantRequeue {
				t.Errorf("RequeueAfter = %s, want %s", result.RequeueAfter, tt.wantRequeue)
			}
			nudged := m3m.Status.LastUpdated != nil && m3m.Status.LastUpdated.Time.Equal(now)
			if nudged != tt.wantNudge {
				t.Errorf("lastUpdated = %v, nudged %t, want %t", m3m.Status.LastUpdated, nudged, tt.wantNudge)
			}
		})
	}
}

func TestBootWait(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		since   time.Time
		ceiling time.Duration
		want    time.Duration
	}{
		{name: "not known: the ceiling", ceiling: nodeRequeue, want: nodeRequeue},
		{name: "just provisioned: the floor", since: now.Add(-500 * time.Millisecond), ceiling: nodeRequeue, want: bootWaitFloor},
		{name: "half the time since", since: now.Add(-10 * time.Second), ceiling: nodeRequeue, want: 5 * time.Second},
		{name: "a long boot: the ceiling", since: now.Add(-10 * time.Minute), ceiling: nodeRefWait, want: nodeRefWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bootWait(tt.since, now, tt.ceiling); got != tt.want {
				t.Errorf("bootWait = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestProvisioningProgress(t *testing.T) {
	tests := []struct {
		state bmov1alpha1.ProvisioningState
		want  string
	}{
		{state: "", want: "registering"},
		{state: bmov1alpha1.StateAvailable, want: "provisioning"},
		{state: bmov1alpha1.StatePreparing, want: "provisioning"},
		{state: bmov1alpha1.StateProvisioning, want: "provisioning"},
		{state: bmov1alpha1.StateInspecting, want: "inspecting"},
		{state: bmov1alpha1.StateDeprovisioning, want: "deprovisioning"},
	}
	for _, tt := range tests {
		t.Run(string(tt.state), func(t *testing.T) {
			if got := provisioningProgress(&hostbinding.Host{State: tt.state}); got != tt.want {
				t.Errorf("provisioningProgress(%q) = %q, want %q", tt.state, got, tt.want)
			}
		})
	}
}
