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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	fakeaccess "github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess/fake"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

const poolNamespace = "pool"

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, bmov1alpha1.AddToScheme, infrav1.AddToScheme, clusterv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

func testMetal3Machine() *infrav1.Metal3Machine {
	return &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{
		Namespace: "tenant", Name: "worker-0", UID: "m3m-uid",
		Annotations: map[string]string{
			infrav1.HostAnnotation: poolNamespace + "/host-0", infrav1.ConsumerIDAnnotation: "consumer-id",
		},
	}}
}

func testHost(consumer *corev1.ObjectReference) *bmov1alpha1.BareMetalHost {
	return &bmov1alpha1.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{Namespace: poolNamespace, Name: "host-0", UID: "host-uid"},
		Spec:       bmov1alpha1.BareMetalHostSpec{ConsumerRef: consumer},
		Status:     bmov1alpha1.BareMetalHostStatus{PoweredOn: true},
	}
}

func consumer(name, uid string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: "tenant", Name: name, UID: types.UID(uid)}
}

func access(c client.Client) *fakeaccess.HostAccess {
	return &fakeaccess.HostAccess{
		IdentityKey: identity.Key{SecretNamespace: "tenant", SecretName: "pool-identity"}, HostNamespace: poolNamespace, HostClient: c,
	}
}

func TestFindHost(t *testing.T) {
	tests := []struct {
		name       string
		host       *bmov1alpha1.BareMetalHost
		annotation *string
		wantReason string
	}{
		{name: "the host consumed by the machine", host: testHost(consumer("worker-0", "consumer-id"))},
		{name: "a host without the consumer's UID (written by an older provider)", host: testHost(consumer("worker-0", ""))},
		{name: "a machine without a host", annotation: new(string), wantReason: infrav1.RemediationHostNotAssociatedReason},
		{
			// Hosts moved to the namespace the identity names now
			// (docs/move.md): the machine still records the old one.
			name: "a host moved to the identity's namespace", host: testHost(consumer("worker-0", "consumer-id")),
			annotation: ptrString("tenant/host-0"),
		},
		{name: "a malformed host annotation", annotation: ptrString("host-0"), wantReason: infrav1.HostNotFoundReason},
		{name: "a host gone", wantReason: infrav1.HostNotFoundReason},
		{name: "a host released", host: testHost(nil), wantReason: infrav1.HostNotFoundReason},
		{name: "a host taken by another machine", host: testHost(consumer("worker-1", "other")), wantReason: infrav1.HostNotFoundReason},
		{
			name: "a host of a same-named machine of another management cluster",
			host: testHost(consumer("worker-0", "other")), wantReason: infrav1.HostNotFoundReason,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(testScheme(t))
			if tt.host != nil {
				b = b.WithObjects(tt.host)
			}
			m3m := testMetal3Machine()
			if tt.annotation != nil {
				m3m.Annotations[infrav1.HostAnnotation] = *tt.annotation
			}
			host, err := FindHost(context.Background(), access(b.Build()), m3m)
			if tt.wantReason == "" {
				if err != nil || host.String() != poolNamespace+"/host-0" || host.UID() != "host-uid" {
					t.Fatalf("FindHost = %v, %v; want host-0", host, err)
				}
				return
			}
			te, ok := AsTargetError(err)
			if !ok || te.Reason != tt.wantReason {
				t.Fatalf("FindHost error %v, want reason %s", err, tt.wantReason)
			}
		})
	}
}

func TestHostAnnotations(t *testing.T) {
	ctx := context.Background()
	h := testHost(consumer("worker-0", "consumer-id"))
	// An operator's mark under the deprecated name, which stays.
	h.Annotations = map[string]string{pool.DeprecatedUnhealthyAnnotation: "operator"}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(h).Build()
	m3m := testMetal3Machine()
	host, err := FindHost(ctx, access(c), m3m)
	if err != nil {
		t.Fatal(err)
	}
	stored := func() *bmov1alpha1.BareMetalHost {
		h := &bmov1alpha1.BareMetalHost{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: "host-0"}, h); err != nil {
			t.Fatal(err)
		}
		return h
	}

	if err := host.RequestReboot(ctx); err != nil {
		t.Fatal(err)
	}
	key := "reboot.metal3.io/capm3-remediation-consumer-id"
	if got := stored().Annotations[key]; got != `{"mode":"hard"}` || !host.RebootRequested() {
		t.Fatalf("reboot annotation %q = %q, requested %v; want a hard reboot", key, got, host.RebootRequested())
	}
	if err := host.ReleaseReboot(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := stored().Annotations[key]; ok || host.RebootRequested() {
		t.Fatal("the reboot annotation is still there")
	}
	if err := host.MarkUnhealthy(ctx); err != nil {
		t.Fatal(err)
	}
	// Upstream CAPM3 v1.13+'s name and value; the operator's mark is kept.
	if got := stored().Annotations; got[pool.UnhealthyAnnotation] != pool.UnhealthyValue || got[pool.DeprecatedUnhealthyAnnotation] != "operator" {
		t.Fatalf("annotations %v: want %s=%s and the operator's %s kept", got,
			pool.UnhealthyAnnotation, pool.UnhealthyValue, pool.DeprecatedUnhealthyAnnotation)
	}
}

// A remediation upstream CAPM3 had in flight when this provider replaced it
// left upstream's power-off on the host (keyed by the Metal3Remediation's
// UID): the adopting remediation counts it as its own reboot request and
// lifts it, else the Bare Metal Operator would keep the host off for good.
func TestUpstreamRebootAnnotationIsAdopted(t *testing.T) {
	ctx := context.Background()
	upstreamKey := infrav1.UpstreamRemediationRebootAnnotationPrefix + "remediation-uid"
	h := testHost(consumer("worker-0", ""))
	h.Annotations = map[string]string{upstreamKey: `{"mode":"hard"}`, "unrelated": "kept"}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(h).Build()
	host, err := FindHost(ctx, access(c), testMetal3Machine())
	if err != nil {
		t.Fatal(err)
	}
	if !host.RebootRequested() {
		t.Fatal("upstream's power-off is not seen as the remediation's reboot request")
	}
	if err := host.ReleaseReboot(ctx); err != nil {
		t.Fatal(err)
	}
	stored := &bmov1alpha1.BareMetalHost{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: "host-0"}, stored); err != nil {
		t.Fatal(err)
	}
	if _, ok := stored.Annotations[upstreamKey]; ok || host.RebootRequested() {
		t.Fatalf("upstream's power-off is still on the host: %v", stored.Annotations)
	}
	if stored.Annotations["unrelated"] != "kept" {
		t.Fatalf("another annotation went: %v", stored.Annotations)
	}
}

// A host changed since it was read (its consumer may have changed) is not
// written: the write fails and the next reconcile reads it again.
func TestHostWriteIsGuardedByResourceVersion(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(testHost(consumer("worker-0", "consumer-id"))).
		WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			if !strings.Contains(string(data), `"resourceVersion"`) {
				t.Errorf("patch %s carries no resourceVersion", data)
			}
			return apierrors.NewConflict(schema.GroupResource{Group: "metal3.io", Resource: "baremetalhosts"}, obj.GetName(), nil)
		}}).Build()
	host, err := FindHost(ctx, access(c), testMetal3Machine())
	if err != nil {
		t.Fatal(err)
	}
	if err := host.RequestReboot(ctx); !apierrors.IsConflict(err) {
		t.Fatalf("RequestReboot = %v, want the conflict", err)
	}
	if host.RebootRequested() {
		t.Fatal("a failed write shows as done")
	}
}

func ptrString(s string) *string { return &s }
