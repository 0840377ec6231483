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
	"context"
	"errors"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	fakeaccess "github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess/fake"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// TestConcurrentMachinesDoNotRaceForAHost: two machines of one process
// whose host cache does not show each other's claims yet (both see the one
// host available): the second does not send a claim bound to conflict, and
// waits for a host instead.
func TestConcurrentMachinesDoNotRaceForAHost(t *testing.T) {
	for _, shared := range []bool{true, false} {
		t.Run(map[bool]string{true: "claims in flight shared", false: "no claims in flight"}[shared], func(t *testing.T) {
			ctx := context.Background()
			var updates, conflicts int
			hosts := []client.Object{availableHost("host-0")}
			f := newBindingFixture(t, interceptor.Funcs{
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					err := c.Update(ctx, obj, opts...)
					if _, isHost := obj.(*bmov1alpha1.BareMetalHost); isHost {
						updates++
						if err != nil {
							conflicts++
						}
					}
					return err
				},
			}, hosts...)
			// The lagging cache: every List answers with the hosts as they were.
			stale := &staleHostList{Client: f.pool, hosts: hosts}
			var claims *ClaimsInFlight
			if shared {
				claims = &ClaimsInFlight{}
			}
			var errs []error
			for _, name := range []string{"worker-0", "worker-1"} {
				m3m := &infrav1.Metal3Machine{
					ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name, UID: types.UID("uid-" + name)},
					Spec:       infrav1.Metal3MachineSpec{Image: infrav1.Image{URL: "http://images/node.qcow2", Checksum: ptr.To("abc")}},
				}
				infrav1.EnsureConsumerID(m3m)
				binding := bmhBindingFor(t, f.pool, m3m).(*bmhBinding)
				binding.Access = &fakeaccess.HostAccess{IdentityKey: identity.InCluster, HostNamespace: poolNamespace, HostClient: stale}
				binding.InFlight = claims
				_, err := binding.Bind(ctx)
				errs = append(errs, err)
			}
			if errs[0] != nil || !errors.Is(errs[1], ErrNoAvailableHost) {
				t.Fatalf("Bind errors %v, want the first to bind and the second to find no host", errs)
			}
			wantUpdates, wantConflicts := 1, 0
			if !shared {
				wantUpdates, wantConflicts = 2, 1 // what the shared set saves
			}
			if updates != wantUpdates || conflicts != wantConflicts {
				t.Errorf("host updates %d (conflicts %d), want %d (%d)", updates, conflicts, wantUpdates, wantConflicts)
			}
		})
	}
}

// staleHostList lists hosts as a lagging cache would: as they were.
type staleHostList struct {
	client.Client
	hosts []client.Object
}

func (s *staleHostList) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	hosts, ok := list.(*bmov1alpha1.BareMetalHostList)
	if !ok {
		return s.Client.List(ctx, list, opts...)
	}
	hosts.Items = nil
	for _, h := range s.hosts {
		live := &bmov1alpha1.BareMetalHost{}
		if err := s.Get(ctx, client.ObjectKeyFromObject(h), live); err != nil {
			return err
		}
		// The stale copy: the resourceVersion is current (so a claim is not
		// refused for it), but not the consumer.
		old := h.(*bmov1alpha1.BareMetalHost).DeepCopy()
		old.ResourceVersion = live.ResourceVersion
		if live.Spec.ConsumerRef != nil {
			// Cache lag shows the host available; a guarded update of it
			// would be refused by the API server, which the fake client
			// models with the live resourceVersion.
			old.ResourceVersion = "stale"
		}
		hosts.Items = append(hosts.Items, *old)
	}
	return nil
}

// TestWriteSecretCreatesOrReads: a new Secret is created without a read;
// an existing one of the same owner is updated; someone else's is never
// overwritten, whichever way it is written.
func TestWriteSecretCreatesOrReads(t *testing.T) {
	owner := &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "worker-0", UID: "uid-worker-0"}}
	infrav1.EnsureConsumerID(owner)
	host := hostView(availableHost("host-0"))
	name := hostSecretName(owner, pool.UserDataPurpose)
	existing := func(ownerUID string, data string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: poolNamespace, Name: name, Labels: map[string]string{OwnerUIDLabel: ownerUID},
				OwnerReferences: []metav1.OwnerReference{host.Owner},
			},
			Data: map[string][]byte{"value": []byte(data)},
		}
	}
	// Left from a claim of another host: same data, another owner.
	leftBehind := existing("uid-worker-0", "new")
	leftBehind.OwnerReferences = []metav1.OwnerReference{hostView(availableHost("host-9")).Owner}
	tests := []struct {
		name      string
		createNew bool
		existing  *corev1.Secret
		wantReads int
		wantErr   bool
	}{
		{name: "new, created first", createNew: true, wantReads: 0},
		{name: "new, read first", createNew: false, wantReads: 1},
		{name: "ours, created first, updated", createNew: true, existing: existing("uid-worker-0", "old"), wantReads: 1},
		{name: "ours, read first, updated", existing: existing("uid-worker-0", "old"), wantReads: 1},
		{name: "someone else's, created first", createNew: true, existing: existing("uid-other", "theirs"), wantReads: 1, wantErr: true},
		{name: "someone else's, read first", existing: existing("uid-other", "theirs"), wantReads: 1, wantErr: true},
		{name: "ours, left by a claim of another host, goes with this host", createNew: true, existing: leftBehind, wantReads: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			reads := 0
			var objs []client.Object
			if tt.existing != nil {
				objs = append(objs, tt.existing)
			}
			f := newBindingFixture(t, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, isSecret := obj.(*corev1.Secret); isSecret {
					reads++
				}
				return c.Get(ctx, key, obj, opts...)
			}}, objs...)
			access := &fakeaccess.HostAccess{IdentityKey: identity.InCluster, HostNamespace: poolNamespace, HostClient: f.pool}
			write := WriteSecret
			if tt.createNew {
				write = WriteNewSecret
			}
			_, err := write(ctx, access, host, owner, "Metal3Machine", pool.UserDataPurpose, map[string][]byte{"value": []byte("new")})
			if (err != nil) != tt.wantErr {
				t.Fatalf("write: %v, want error %v", err, tt.wantErr)
			}
			if reads != tt.wantReads {
				t.Errorf("Secret reads %d, want %d", reads, tt.wantReads)
			}
			got := &corev1.Secret{}
			if err := f.pool.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: name}, got); err != nil {
				t.Fatal(err)
			}
			want := "new"
			if tt.wantErr {
				want = "theirs"
			}
			if string(got.Data["value"]) != want {
				t.Errorf("Secret holds %q, want %q", got.Data["value"], want)
			}
			if !tt.wantErr && !ownedByOnly(got, host.Owner) {
				t.Errorf("Secret owned by %v, want only host-0", got.OwnerReferences)
			}
		})
	}
}
