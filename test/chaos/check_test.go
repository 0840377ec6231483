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

package chaos

import (
	"slices"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
)

// fixture is one machine provisioned on one host as the provider leaves it:
// every invariant holds. Cases break one thing each.
type fixture struct {
	o       *observed
	records []hostRecord
}

func newFixture() fixture {
	m := &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{
		Namespace: "tenant", Name: "worker-0", UID: "m-uid",
		Annotations:     map[string]string{infrav1.HostAnnotation: "pool/host-0"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Machine", Name: "machine-0"}},
	}, Spec: infrav1.Metal3MachineSpec{
		DataTemplate: &infrav1.Metal3ObjectRef{Name: "nodes"},
		ProviderID:   "metal3://pool/host-0/worker-0",
	}}
	data := &infrav1.Metal3Data{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "nodes-0", UID: "d-uid"},
		Spec:       infrav1.Metal3DataSpec{Claim: &infrav1.Metal3ObjectRef{Name: "worker-0"}},
	}
	host := bmov1alpha1.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{Namespace: "pool", Name: "host-0", UID: "h-uid"},
		Spec: bmov1alpha1.BareMetalHostSpec{
			ConsumerRef: &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: "tenant", Name: "worker-0", UID: "m-uid"},
			UserData:    &corev1.SecretReference{Name: "worker-0-user-data"},
			MetaData:    &corev1.SecretReference{Name: "nodes-0-metadata"},
		},
	}
	owner := []metav1.OwnerReference{{Kind: "BareMetalHost", Name: "host-0", UID: "h-uid"}}
	secret := func(name, ownerUID, owner string, data map[string][]byte, refs []metav1.OwnerReference) corev1.Secret {
		return corev1.Secret{ObjectMeta: metav1.ObjectMeta{
			Namespace: "pool", Name: name, OwnerReferences: refs,
			Labels:      map[string]string{hostbinding.OwnerUIDLabel: ownerUID},
			Annotations: map[string]string{hostbinding.OwnerAnnotation: owner},
		}, Data: data}
	}
	return fixture{
		o: &observed{
			hosts: []bmov1alpha1.BareMetalHost{host},
			secrets: []corev1.Secret{
				secret("worker-0-user-data", "m-uid", "Metal3Machine tenant/worker-0", nil, owner),
				secret("nodes-0-metadata", "d-uid", "Metal3Data tenant/nodes-0", map[string][]byte{"metaData": []byte("name: machine-0\n")}, owner),
			},
			machines: map[types.UID]*infrav1.Metal3Machine{"m-uid": m},
			data:     map[types.NamespacedName]*infrav1.Metal3Data{{Namespace: "tenant", Name: "nodes-0"}: data},
		},
		records: []hostRecord{{
			host:      types.NamespacedName{Namespace: "pool", Name: "host-0"},
			episodes:  []episode{{consumer: "tenant/worker-0 (m-uid)", consumerUID: "m-uid"}},
			consumers: map[types.UID]string{"m-uid": "tenant/worker-0 (m-uid)"},
		}},
	}
}

func TestCheckFindsEachViolation(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(f *fixture)
		want   []Invariant
		once   int
	}{
		{name: "nothing broken", mutate: func(*fixture) {}, once: 1},
		{
			name: "a host provisioned twice for its machine",
			mutate: func(f *fixture) {
				f.records[0].episodes = append(f.records[0].episodes, f.records[0].episodes[0])
			},
			want: []Invariant{ProvisionedOnce},
		},
		{
			name: "a host bound to another machine before",
			mutate: func(f *fixture) {
				f.records[0].consumers["gone-uid"] = "tenant/worker-9 (gone-uid)"
			},
			want: []Invariant{BoundOnce}, once: 1,
		},
		{
			name: "a machine recording a host it does not consume",
			mutate: func(f *fixture) {
				f.o.machines["m-uid"].Annotations[infrav1.HostAnnotation] = "pool/host-1"
				f.o.hosts = append(f.o.hosts, bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "pool", Name: "host-1"}})
			},
			// host-0 is then claimed by a machine that does not record it.
			want: []Invariant{BoundOnce, HostsClaimed}, once: 1,
		},
		{
			// The host it wrote with its finalizer, about to be claimed
			// (or lost to another consumer): not a record yet.
			name: "a machine intending a host it does not consume yet",
			mutate: func(f *fixture) {
				f.o.machines["m-uid"].Spec.ProviderID = ""
				f.o.machines["m-uid"].Annotations[infrav1.HostAnnotation] = "pool/host-1"
				f.o.hosts[0].Spec.ConsumerRef = nil
				f.o.hosts[0].Spec.UserData, f.o.hosts[0].Spec.MetaData = nil, nil
				f.o.secrets = nil
				f.o.hosts = append(f.o.hosts, bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "pool", Name: "host-1"}})
			},
			once: 1,
		},
		{
			name: "a Secret of ours used by no host",
			mutate: func(f *fixture) {
				f.o.hosts[0].Spec.MetaData = nil
				f.o.machines["m-uid"].Spec.DataTemplate = nil
			},
			want: []Invariant{SecretsHaveConsumer}, once: 1,
		},
		{
			name: "a Secret of ours owned by another host",
			mutate: func(f *fixture) {
				f.o.secrets[0].OwnerReferences = []metav1.OwnerReference{{Kind: "BareMetalHost", Name: "host-1", UID: "other"}}
			},
			want: []Invariant{SecretsOwnedByHost}, once: 1,
		},
		{
			name: "a host claimed by a machine that does not exist",
			mutate: func(f *fixture) {
				f.o.hosts[0].Spec.ConsumerRef.Name = "worker-9"
			},
			want: []Invariant{HostsClaimed}, once: 1,
		},
		{
			// A same-named machine of another tenant on host-1, whose user
			// data host-0 was given (and host-1 host-0's), each Secret owned
			// by the host using it.
			name: "a host given another machine's user data",
			mutate: func(f *fixture) {
				other := f.o.machines["m-uid"].DeepCopy()
				other.Namespace, other.UID = "other-tenant", "m2-uid"
				other.Spec.DataTemplate = nil
				other.Annotations[infrav1.HostAnnotation] = "pool/host-1"
				f.o.machines["m2-uid"] = other
				host := f.o.hosts[0].DeepCopy()
				host.Name, host.UID = "host-1", "h1-uid"
				host.Spec.ConsumerRef = &corev1.ObjectReference{Namespace: "other-tenant", Name: "worker-0", UID: "m2-uid"}
				host.Spec.UserData, host.Spec.MetaData = f.o.hosts[0].Spec.UserData, nil
				f.o.hosts[0].Spec.UserData = &corev1.SecretReference{Name: "worker-0-user-data-other"}
				f.o.hosts = append(f.o.hosts, *host)
				secret := f.o.secrets[0].DeepCopy()
				secret.Name = "worker-0-user-data-other"
				secret.Labels[hostbinding.OwnerUIDLabel] = "m2-uid"
				secret.Annotations[hostbinding.OwnerAnnotation] = "Metal3Machine other-tenant/worker-0"
				f.o.secrets[0].OwnerReferences = []metav1.OwnerReference{{Name: "host-1", UID: "h1-uid"}}
				f.o.secrets = append(f.o.secrets, *secret)
				f.records[0].host.Name = "host-1"
				f.records[0].episodes[0].consumerUID = "m2-uid"
				f.records[0].consumers = map[types.UID]string{"m2-uid": "other-tenant/worker-0 (m2-uid)"}
				f.records = append(f.records, newFixture().records...)
			},
			want: []Invariant{OwnData}, once: 2,
		},
		// Cluster API deletes machines of its own accord (a MachineSet
		// scaling down after creating one too many): their hosts, once
		// released, are rightly provisioned again for another machine.
		{
			name:   "a host provisioned again after its machine was deleted and released it",
			mutate: func(f *fixture) { reuseAfter(f, true, true) },
			once:   1,
		},
		{
			name:   "a host provisioned again after its machine was deleted, never released",
			mutate: func(f *fixture) { reuseAfter(f, true, false) },
			want:   []Invariant{ProvisionedOnce, BoundOnce}, once: 1,
		},
		{
			name:   "a host provisioned again while its machine still exists",
			mutate: func(f *fixture) { reuseAfter(f, false, true) },
			// Each machine's one entry into provisioning was on host-0.
			want: []Invariant{ProvisionedOnce, BoundOnce}, once: 2,
		},
		{
			name: "a deleted machine provisioned twice on one host before another",
			mutate: func(f *fixture) {
				reuseAfter(f, true, true)
				f.records[0].episodes = append([]episode{f.records[0].episodes[0]}, f.records[0].episodes...)
			},
			want: []Invariant{ProvisionedOnce}, once: 1,
		},
		{
			name: "a live machine's host provisioned for a deleted machine after it",
			mutate: func(f *fixture) {
				reuseAfter(f, true, true)
				e := f.records[0].episodes
				f.records[0].episodes = []episode{e[1], e[0]}
			},
			want: []Invariant{ProvisionedOnce}, once: 1,
		},
		{
			name: "a host given metadata rendered for another machine",
			mutate: func(f *fixture) {
				f.o.secrets[1].Data["metaData"] = []byte("name: machine-9\n")
			},
			want: []Invariant{OwnData}, once: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture()
			tt.mutate(&f)
			history, once := checkHistory(f.records, f.o)
			violations := slices.Concat(history, checkState(f.o))
			if once != tt.once {
				t.Errorf("%d machines provisioned once, want %d", once, tt.once)
			}
			report := Report{Violations: violations}
			for _, inv := range Invariants {
				if got := report.Count(inv); slices.Contains(tt.want, inv) != (got > 0) {
					t.Errorf("%s: %d violations, want them only for %q; all: %+v", inv, got, tt.want, violations)
				}
			}
		})
	}
}

// reuseAfter makes the fixture's host first provisioned for an earlier
// machine, worker-9, which was deleted during the run (retired) or still
// exists, and which the host was released by (released) or not.
func reuseAfter(f *fixture, retired, released bool) {
	const earlier = types.UID("gone-uid")
	name := "tenant/worker-9 (gone-uid)"
	r := &f.records[0]
	r.episodes = append([]episode{{consumer: name, consumerUID: earlier}}, r.episodes...)
	r.consumers[earlier] = name
	if released {
		r.releasedFrom = sets.New(earlier)
	}
	if retired {
		f.o.retired = map[types.UID]string{earlier: name}
		return
	}
	m := f.o.machines["m-uid"].DeepCopy()
	m.Name, m.UID = "worker-9", earlier
	m.Annotations[infrav1.HostAnnotation] = "pool/host-9"
	f.o.machines[earlier] = m
}

// TestHistorianCountsEntriesIntoProvisioning feeds the historian the
// versions of a host a watch delivers.
func TestHistorianCountsEntriesIntoProvisioning(t *testing.T) {
	h := &historian{namespaces: sets.New("pool"), firstClaim: make(chan struct{}), hosts: map[types.NamespacedName]*hostHistory{}}
	version := func(state bmov1alpha1.ProvisioningState, consumer types.UID) *bmov1alpha1.BareMetalHost {
		host := &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "pool", Name: "host-0"}}
		host.Status.Provisioning.State = state
		if consumer != "" {
			host.Spec.ConsumerRef = &corev1.ObjectReference{Namespace: "tenant", Name: string(consumer), UID: consumer}
		}
		return host
	}
	for _, v := range []*bmov1alpha1.BareMetalHost{
		version(bmov1alpha1.StateAvailable, ""),
		version(bmov1alpha1.StateAvailable, "a"),
		version(bmov1alpha1.StateProvisioning, "a"),
		version(bmov1alpha1.StateProvisioning, "a"), // a status update
		version(bmov1alpha1.StateProvisioned, "a"),
		// Given to another machine without deprovisioning: a second entry.
		version(bmov1alpha1.StateProvisioned, "b"),
		version(bmov1alpha1.StateDeprovisioning, "b"),
		version(bmov1alpha1.StateAvailable, ""),
		// A watch gap hid provisioning: provisioned still counts.
		version(bmov1alpha1.StateProvisioned, "c"),
	} {
		h.saw(v)
	}
	select {
	case <-h.firstClaim:
	default:
		t.Errorf("the first claim was not signalled")
	}
	records := h.records()
	if len(records) != 1 {
		t.Fatalf("%d hosts recorded, want 1", len(records))
	}
	var consumers []types.UID
	for _, e := range records[0].episodes {
		consumers = append(consumers, e.consumerUID)
	}
	if want := []types.UID{"a", "b", "c"}; !sets.New(consumers...).Equal(sets.New(want...)) || len(consumers) != len(want) {
		t.Errorf("entries into provisioning for %v, want %v", consumers, want)
	}
	if len(records[0].consumers) != 3 {
		t.Errorf("consumers %v, want a, b and c", records[0].consumers)
	}
	// a was replaced by b without a release; b was released.
	if want := sets.New[types.UID]("b"); !records[0].releasedFrom.Equal(want) {
		t.Errorf("released by %v, want %v", sets.List(records[0].releasedFrom), sets.List(want))
	}
}
