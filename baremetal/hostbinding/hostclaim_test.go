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
	"strings"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// TestClaimViewTellsRefusals: what the binder refuses to pass to a claim's
// host reaches the machine as a host error, naming the reason; a pause
// does not, nor a Secret the provider has not written yet.
func TestClaimViewTellsRefusals(t *testing.T) {
	tests := []struct {
		name   string
		synced metav1.Condition
		want   string
	}{
		{name: "refused image", synced: metav1.Condition{Status: metav1.ConditionFalse, Reason: hostclaim.ImageNotAllowedReason,
			Message: `spec.image.url: scheme "file" is not one the pool allows`}, want: `ImageNotAllowed): spec.image.url: scheme "file"`},
		{name: "paused", synced: metav1.Condition{Status: metav1.ConditionFalse, Reason: bmov1alpha1.HostPausedReason}},
		{name: "Secret not written yet", synced: metav1.Condition{Status: metav1.ConditionFalse, Reason: hostclaim.WaitingForSecretReason,
			Message: "waiting for Secret worker-0-userdata of namespace pool-a, which does not exist"}},
		{name: "synchronized", synced: metav1.Condition{Status: metav1.ConditionTrue, Reason: bmov1alpha1.ConfigurationSyncedReason}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.synced.Type = bmov1alpha1.SynchronizedCondition
			claim := &bmov1alpha1.HostClaim{Status: bmov1alpha1.HostClaimStatus{Conditions: []metav1.Condition{tt.synced}}}
			got := claimView(claim, &bmov1alpha1.HardwareData{}).ErrorMessage
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("error message %q, want one containing %q", got, tt.want)
			}
		})
	}
}

// claimFixture is one machine of tenant-a in HostClaim mode, whose pool
// client the test intercepts, counting what it writes.
type claimFixture struct {
	pool                        client.Client
	claimCreates, claimPatches  int
	failSecretCreates           int
	secretCreates               int
	noBootstrapData             bool
	m3m                         *infrav1.Metal3Machine
	claimKey, userDataSecretKey client.ObjectKey
}

func newClaimFixture(t *testing.T) *claimFixture {
	t.Helper()
	f := &claimFixture{m3m: &infrav1.Metal3Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "worker-0", UID: "uid-worker-0"},
		Spec:       infrav1.Metal3MachineSpec{Image: infrav1.Image{URL: "http://images/node.qcow2", Checksum: ptr.To("abc")}},
	}}
	infrav1.EnsureConsumerID(f.m3m)
	f.claimKey = client.ObjectKey{Namespace: poolNamespace, Name: claimName(f.m3m)}
	f.userDataSecretKey = client.ObjectKey{Namespace: poolNamespace, Name: hostSecretName(f.m3m, pool.UserDataPurpose)}
	f.pool = fake.NewClientBuilder().WithScheme(testScheme(t)).WithStatusSubresource(&bmov1alpha1.HostClaim{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				switch obj.(type) {
				case *bmov1alpha1.HostClaim:
					f.claimCreates++
				case *corev1.Secret:
					f.secretCreates++
					if f.failSecretCreates > 0 {
						f.failSecretCreates--
						return errors.New("connection reset by peer")
					}
				}
				return c.Create(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if _, isClaim := obj.(*bmov1alpha1.HostClaim); isClaim {
					f.claimPatches++
				}
				return c.Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	return f
}

// binding is the binding of one reconcile of m3m, as read from the server.
func (f *claimFixture) binding(t *testing.T, m3m *infrav1.Metal3Machine) Binding {
	t.Helper()
	opts := bindingOptions(t, f.pool, m3m)
	if f.noBootstrapData {
		opts.Machine.Spec.Bootstrap.DataSecretName = ptr.To("not-written-yet")
	}
	return ForHostClaims(opts)
}

func (f *claimFixture) claim(t *testing.T) *bmov1alpha1.HostClaim {
	t.Helper()
	claim := &bmov1alpha1.HostClaim{}
	if err := f.pool.Get(context.Background(), f.claimKey, claim); err != nil {
		t.Fatalf("get the machine's HostClaim: %v", err)
	}
	return claim
}

// userDataWritten checks that the claim's user-data Secret exists next to
// it, owned by it, and that the machine's status records it.
func (f *claimFixture) userDataWritten(t *testing.T, m3m *infrav1.Metal3Machine) {
	t.Helper()
	claim := f.claim(t)
	secret := &corev1.Secret{}
	if err := f.pool.Get(context.Background(), f.userDataSecretKey, secret); err != nil {
		t.Fatalf("the claim's user-data Secret: %v", err)
	}
	if len(secret.OwnerReferences) != 1 || secret.OwnerReferences[0].UID != claim.UID {
		t.Errorf("user-data Secret owned by %v, want the claim (UID %s)", secret.OwnerReferences, claim.UID)
	}
	if string(secret.Data["format"]) != "cloud-config" {
		t.Errorf("user-data Secret holds %v, want the bootstrap data", secret.Data)
	}
	if !sameSecretRef(m3m.Status.UserData, claim.Spec.UserData) {
		t.Errorf("status.userData %v, want the claim's %v", m3m.Status.UserData, claim.Spec.UserData)
	}
}

// TestClaimCreatedWhole: the claim of a machine without a dataTemplate is
// created in one request with its image, power and the name of its
// user-data Secret, and the Secret is written right after it, owned by it
// (before, a create and a patch: two requests on the pool's HostClaim
// limit, which bounds how fast machines associate). What the split may
// leave behind is repaired by the next reconcile.
func TestClaimCreatedWhole(t *testing.T) {
	ctx := context.Background()
	t.Run("one request for the claim, then its Secret", func(t *testing.T) {
		f := newClaimFixture(t)
		if _, err := f.binding(t, f.m3m).Bind(ctx); !errors.Is(err, ErrNoAvailableHost) {
			t.Fatalf("Bind: %v, want ErrNoAvailableHost until the binder binds the claim", err)
		}
		claim := f.claim(t)
		if claim.Spec.Image == nil || claim.Spec.Image.URL != "http://images/node.qcow2" || !claim.Spec.PoweredOn {
			t.Errorf("claim created with image %v, powered on %v; want the machine's image, on", claim.Spec.Image, claim.Spec.PoweredOn)
		}
		if ref := claim.Spec.UserData; ref == nil || ref.Name != f.userDataSecretKey.Name {
			t.Errorf("claim's userData %v, want Secret %s", ref, f.userDataSecretKey.Name)
		}
		if f.claimCreates != 1 || f.claimPatches != 0 {
			t.Errorf("claim created %d times, patched %d; want one create only", f.claimCreates, f.claimPatches)
		}
		f.userDataWritten(t, f.m3m)
	})
	t.Run("a crash between the claim and its Secret: the next reconcile writes it", func(t *testing.T) {
		f := newClaimFixture(t)
		f.failSecretCreates = 1
		beforeCrash := f.m3m.DeepCopy()
		if _, err := f.binding(t, f.m3m).Bind(ctx); err == nil {
			t.Fatal("Bind succeeded although the Secret could not be written")
		}
		if f.claimCreates != 1 {
			t.Fatalf("claim created %d times, want 1", f.claimCreates)
		}
		// The crashed reconcile persisted nothing of the machine.
		m3m := beforeCrash
		if _, err := f.binding(t, m3m).Bind(ctx); !errors.Is(err, ErrNoAvailableHost) {
			t.Fatalf("Bind after the crash: %v, want ErrNoAvailableHost", err)
		}
		f.userDataWritten(t, m3m)
		if f.claimCreates != 1 || f.claimPatches != 0 {
			t.Errorf("claim created %d times, patched %d; want the one create", f.claimCreates, f.claimPatches)
		}
	})
	t.Run("the Secret deleted: the binder waits for it, the provider writes it again", func(t *testing.T) {
		f := newClaimFixture(t)
		if _, err := f.binding(t, f.m3m).Bind(ctx); !errors.Is(err, ErrNoAvailableHost) {
			t.Fatalf("Bind: %v", err)
		}
		if err := f.pool.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
			Namespace: f.userDataSecretKey.Namespace, Name: f.userDataSecretKey.Name,
		}}); err != nil {
			t.Fatal(err)
		}
		claim := f.claim(t)
		claim.Status.Conditions = []metav1.Condition{{
			Type: bmov1alpha1.SynchronizedCondition, Status: metav1.ConditionFalse, Reason: hostclaim.WaitingForSecretReason,
			Message:            "waiting for Secret " + f.userDataSecretKey.Name + " of namespace pool, which does not exist",
			LastTransitionTime: metav1.Now(),
		}}
		if err := f.pool.Status().Update(ctx, claim); err != nil {
			t.Fatal(err)
		}
		creates := f.secretCreates
		if _, err := f.binding(t, f.m3m).Host(ctx); err != nil {
			t.Fatalf("Host: %v", err)
		}
		if f.secretCreates != creates+1 {
			t.Errorf("Secret creates %d, want %d", f.secretCreates, creates+1)
		}
		f.userDataWritten(t, f.m3m)
	})
	t.Run("no claim while the bootstrap data cannot be read", func(t *testing.T) {
		f := newClaimFixture(t)
		f.noBootstrapData = true
		if _, err := f.binding(t, f.m3m).Bind(ctx); err == nil || !strings.Contains(err.Error(), "not-written-yet") {
			t.Fatalf("Bind: %v, want an error naming the bootstrap Secret", err)
		}
		if f.claimCreates != 0 {
			t.Errorf("claim created %d times, want none", f.claimCreates)
		}
	})
}
