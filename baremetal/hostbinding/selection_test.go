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

package hostbinding

import (
	"slices"
	"strings"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

func testHost(name string, state bmov1alpha1.ProvisioningState, labels, annotations map[string]string) bmov1alpha1.BareMetalHost {
	return bmov1alpha1.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{Namespace: "pool", Name: name, Labels: labels, Annotations: annotations},
		Status:     bmov1alpha1.BareMetalHostStatus{Provisioning: bmov1alpha1.ProvisionStatus{State: state}},
	}
}

func names(hosts []*bmov1alpha1.BareMetalHost) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = h.Name
	}
	return out
}

func TestChoose(t *testing.T) {
	consumed := testHost("consumed", bmov1alpha1.StateAvailable, nil, nil)
	consumed.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "Metal3Machine", Name: "other"}
	hosts := []bmov1alpha1.BareMetalHost{
		testHost("available", bmov1alpha1.StateAvailable, map[string]string{"role": "worker"}, nil),
		testHost("ready", bmov1alpha1.StateReady, map[string]string{"role": "worker"}, nil),
		testHost("in-fd", bmov1alpha1.StateAvailable, map[string]string{"role": "worker", pool.FailureDomainLabel: "rack-1"}, nil),
		testHost("reusable", bmov1alpha1.StateAvailable, map[string]string{"role": "worker", NodeReuseLabel: "md-workers"},
			map[string]string{NodeReuseClusterAnnotation: "tenant-a/c1"}),
		testHost("kept-for-other-tenant", bmov1alpha1.StateAvailable, map[string]string{"role": "worker", NodeReuseLabel: "md-workers"},
			map[string]string{NodeReuseClusterAnnotation: "tenant-b/c1"}),
		testHost("kept-for-other-owner", bmov1alpha1.StateAvailable, map[string]string{"role": "worker", NodeReuseLabel: "md-big"},
			map[string]string{NodeReuseClusterAnnotation: "tenant-a/c1"}),
		testHost("kept-by-upstream", bmov1alpha1.StateAvailable, map[string]string{"role": "worker", NodeReuseLabel: "md-workers"}, nil),
		testHost("kept-cleaning", bmov1alpha1.StatePreparing, map[string]string{"role": "worker", NodeReuseLabel: "md-workers"},
			map[string]string{NodeReuseClusterAnnotation: "tenant-a/c1"}),
		testHost("control", bmov1alpha1.StateAvailable, map[string]string{"role": "control-plane"}, nil),
		testHost("inspecting", bmov1alpha1.StateInspecting, map[string]string{"role": "worker"}, nil),
		testHost("provisioned", bmov1alpha1.StateProvisioned, map[string]string{"role": "worker"}, nil),
		testHost("unhealthy", bmov1alpha1.StateAvailable, map[string]string{"role": "worker"}, map[string]string{pool.UnhealthyAnnotation: ""}),
		testHost("paused", bmov1alpha1.StateAvailable, map[string]string{"role": "worker"}, map[string]string{bmov1alpha1.PausedAnnotation: ""}),
		testHost("detached", bmov1alpha1.StateAvailable, map[string]string{"role": "worker"}, map[string]string{bmov1alpha1.DetachedAnnotation: ""}),
		consumed,
	}
	errored := testHost("error", bmov1alpha1.StateAvailable, map[string]string{"role": "worker"}, nil)
	errored.Status.ErrorMessage = "power management failed"
	hosts = append(hosts, errored)
	// Reuse of a machine of MachineDeployment "workers" of cluster
	// tenant-a/c1, whose other owners ("md-big") still exist.
	workersReuse := Reuse{Owner: "md-workers", Cluster: "tenant-a/c1", LiveOwners: []string{"md-workers", "md-big"}}
	machine := func(uid string, sel *infrav1.HostSelector) *infrav1.Metal3Machine {
		return &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Spec: infrav1.Metal3MachineSpec{HostSelector: sel}}
	}
	workers := &infrav1.HostSelector{MatchLabels: map[string]string{"role": "worker"}}
	tests := []struct {
		name          string
		machine       *infrav1.Metal3Machine
		failureDomain string
		reuse         Reuse
		wantFirst     string // "a|b": either
		wantSet       []string
		wantWait      string // the kept host waited for
	}{
		{name: "only free, healthy, unpaused, inspected, unreserved hosts matching the selector, none with an error", machine: machine("a", workers),
			wantSet: []string{"available", "ready", "in-fd"}},
		{name: "matchExpressions", machine: machine("a", &infrav1.HostSelector{MatchExpressions: []infrav1.HostSelectorRequirement{
			{Key: "role", Operator: selection.In, Values: []string{"control-plane"}},
		}}), wantSet: []string{"control"}},
		{name: "matchExpressions operators are case-insensitive, as upstream", machine: machine("a", &infrav1.HostSelector{MatchExpressions: []infrav1.HostSelectorRequirement{
			{Key: "role", Operator: "In", Values: []string{"control-plane"}},
		}}), wantSet: []string{"control"}},
		{name: "failure domain first", machine: machine("a", workers), failureDomain: "rack-1", wantFirst: "in-fd"},
		{name: "a host kept for the machine's owner before all", machine: machine("a", workers), failureDomain: "rack-1", reuse: workersReuse,
			wantFirst: "reusable|kept-by-upstream", wantSet: []string{"available", "ready", "in-fd", "reusable", "kept-by-upstream"}},
		{name: "a reservation for an owner that is gone is free", machine: machine("a", workers),
			reuse:   Reuse{Owner: "md-workers", Cluster: "tenant-a/c1", LiveOwners: []string{"md-workers"}},
			wantSet: []string{"available", "ready", "in-fd", "reusable", "kept-by-upstream", "kept-for-other-owner"}},
		{name: "another tenant's owner of the same name does not match", machine: machine("a", workers),
			reuse:   Reuse{Owner: "md-workers", Cluster: "tenant-c/c1", LiveOwners: []string{"md-workers"}},
			wantSet: []string{"available", "ready", "in-fd", "kept-by-upstream"}},
		{name: "no selector: every available unreserved host", machine: machine("a", nil),
			wantSet: []string{"available", "ready", "in-fd", "control"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chosen, err := Choose(hosts, tt.machine, tt.failureDomain, tt.reuse)
			if err != nil {
				t.Fatal(err)
			}
			got := chosen.Candidates
			if waited := chosen.WaitFor; waited == nil && tt.wantWait != "" || waited != nil && waited.Name != tt.wantWait {
				t.Errorf("waits for %v, want %q", waited, tt.wantWait)
			}
			if tt.wantFirst != "" && (len(got) == 0 || !slices.Contains(strings.Split(tt.wantFirst, "|"), got[0].Name)) {
				t.Errorf("first = %v, want %s", names(got), tt.wantFirst)
			}
			if tt.wantSet != nil {
				want := map[string]bool{}
				for _, n := range tt.wantSet {
					want[n] = true
				}
				if len(got) != len(want) {
					t.Fatalf("got %v, want %v", names(got), tt.wantSet)
				}
				for _, h := range got {
					if !want[h.Name] {
						t.Errorf("unexpected host %s in %v", h.Name, names(got))
					}
				}
			}
		})
	}
}

// TestChooseSpreadsMachines: equal hosts are ordered per machine, stably,
// so concurrent machines mostly try different hosts first.
func TestChooseSpreadsMachines(t *testing.T) {
	var hosts []bmov1alpha1.BareMetalHost
	for _, n := range []string{"h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"} {
		hosts = append(hosts, testHost(n, bmov1alpha1.StateAvailable, nil, nil))
	}
	first := map[string]bool{}
	for _, uid := range []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"} {
		m := &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
		a, _ := Choose(hosts, m, "", Reuse{})
		b, _ := Choose(hosts, m, "", Reuse{})
		if a.Candidates[0].Name != b.Candidates[0].Name {
			t.Fatalf("machine %s: order not stable", uid)
		}
		first[a.Candidates[0].Name] = true
	}
	if len(first) < 3 {
		t.Errorf("8 machines all start with one of %v: no spread", first)
	}
}

func TestHostSecretName(t *testing.T) {
	owner := func(namespace, name, uid string) metav1.Object {
		return &metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(uid)}
	}
	a := hostSecretName(owner("tenant-a", "worker-0", "uid-a"), pool.UserDataPurpose)
	b := hostSecretName(owner("tenant-b", "worker-0", "uid-b"), pool.UserDataPurpose)
	if a == b {
		t.Errorf("two tenants' worker-0 share Secret name %s", a)
	}
	if a != hostSecretName(owner("tenant-a", "worker-0", "uid-a"), pool.UserDataPurpose) {
		t.Error("name is not stable")
	}
	if hostSecretName(owner("tenant-a", "worker-0", "uid-a"), pool.MetaDataPurpose) == a {
		t.Error("purposes share a name")
	}
	long := hostSecretName(owner("t", string(make([]byte, 300)), "u"), pool.UserDataPurpose)
	if len(long) > 253 {
		t.Errorf("name of %d characters is too long for a Secret", len(long))
	}
}

// TestOnlineWhenReleased: the power a released host is left in, as
// upstream CAPM3 decides it, and never off for a host whose power off is
// disabled (the Bare Metal Operator refuses that).
func TestOnlineWhenReleased(t *testing.T) {
	for _, tt := range []struct {
		name            string
		fastTrack       bool
		cleaning        bmov1alpha1.AutomatedCleaningMode
		disablePowerOff bool
		want            bool
	}{
		{name: "off by default", cleaning: bmov1alpha1.CleaningModeMetadata, want: false},
		{name: "fast track keeps it on", fastTrack: true, cleaning: bmov1alpha1.CleaningModeMetadata, want: true},
		{name: "fast track needs cleaning to boot the agent", fastTrack: true, cleaning: bmov1alpha1.CleaningModeDisabled, want: false},
		{name: "power off disabled", cleaning: bmov1alpha1.CleaningModeDisabled, disablePowerOff: true, want: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			host := &bmov1alpha1.BareMetalHost{Spec: bmov1alpha1.BareMetalHostSpec{
				AutomatedCleaningMode: tt.cleaning, DisablePowerOff: tt.disablePowerOff,
			}}
			binding := &bmhBinding{machineSide: machineSide{Options{FastTrack: tt.fastTrack}}}
			if got := binding.onlineWhenReleased(host); got != tt.want {
				t.Errorf("online = %v, want %v", got, tt.want)
			}
		})
	}
}
