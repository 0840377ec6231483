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
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
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
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, bmov1alpha1.AddToScheme, infrav1.AddToScheme, clusterv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

func availableHost(name string) *bmov1alpha1.BareMetalHost {
	return &bmov1alpha1.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{Namespace: poolNamespace, Name: name, UID: k8stypes.UID("uid-" + name)},
		Status: bmov1alpha1.BareMetalHostStatus{
			Provisioning:      bmov1alpha1.ProvisionStatus{State: bmov1alpha1.StateAvailable},
			OperationalStatus: bmov1alpha1.OperationalStatusOK,
		},
	}
}

// bindingFixture is one machine of tenant-a and a pool whose client the
// test intercepts: the management cluster holds the bootstrap data.
type bindingFixture struct {
	pool    client.Client
	binding Binding
	m3m     *infrav1.Metal3Machine
}

func newBindingFixture(t *testing.T, funcs interceptor.Funcs, hosts ...client.Object) *bindingFixture {
	t.Helper()
	scheme := testScheme(t)
	m3m := &infrav1.Metal3Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "worker-0", UID: "uid-worker-0"},
		Spec:       infrav1.Metal3MachineSpec{Image: infrav1.Image{URL: "http://images/node.qcow2", Checksum: ptr.To("abc")}},
	}
	// The controller persists the consumer ID before binding.
	infrav1.EnsureConsumerID(m3m)
	pool := fake.NewClientBuilder().WithScheme(scheme).WithObjects(hosts...).WithInterceptorFuncs(funcs).Build()
	return &bindingFixture{pool: pool, m3m: m3m, binding: bmhBindingFor(t, pool, m3m)}
}

// bmhBindingFor binds m3m of tenant-a, whose Machine takes its bootstrap
// data from the management cluster, to hosts in pool.
func bmhBindingFor(t *testing.T, pool client.Client, m3m *infrav1.Metal3Machine) Binding {
	t.Helper()
	return ForBareMetalHosts(bindingOptions(t, pool, m3m))
}

// bindingOptions are the options binding m3m of tenant-a, whose Machine
// takes its bootstrap data from the management cluster, to pool.
func bindingOptions(t *testing.T, pool client.Client, m3m *infrav1.Metal3Machine) Options {
	t.Helper()
	scheme := testScheme(t)
	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "worker-0"},
		Spec:       clusterv1.MachineSpec{Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To("worker-0-bootstrap")}},
	}
	mgmt := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "worker-0-bootstrap"},
		Data:       map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
	}).Build()
	access := &fakeaccess.HostAccess{IdentityKey: identity.InCluster, HostNamespace: poolNamespace, HostClient: pool}
	return Options{
		Client: mgmt, Access: access, Cluster: &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "c"}},
		Machine: machine, M3Machine: m3m,
	}
}

func (f *bindingFixture) host(t *testing.T, name string) *bmov1alpha1.BareMetalHost {
	t.Helper()
	host := &bmov1alpha1.BareMetalHost{}
	if err := f.pool.Get(context.Background(), client.ObjectKey{Namespace: poolNamespace, Name: name}, host); err != nil {
		t.Fatal(err)
	}
	return host
}

// confirmAssociation does what the reconcile's status write does after a
// claim: it confirms the machine's host record (infrav1.HostRecordConfirmed).
func confirmAssociation(m3m *infrav1.Metal3Machine) {
	m3m.Status.Conditions = append(m3m.Status.Conditions, metav1.Condition{
		Type: infrav1.HostAssociatedCondition, Status: metav1.ConditionTrue, Reason: infrav1.AssociatedReason,
	})
}

// claimedBy is the consumerRef of a machine of another tenant.
func claimedBy(host *bmov1alpha1.BareMetalHost, namespace, name string) *bmov1alpha1.BareMetalHost {
	host.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: namespace, Name: name, UID: "uid-other"}
	return host
}

var errConflict = apierrors.NewConflict(schema.GroupResource{Group: "metal3.io", Resource: "baremetalhosts"}, "host", errors.New("the object has been modified"))

// TestBind covers the claim: the machine's own consumerRef written in one
// guarded update, a lost race settled by reading the host live, and a claim
// whose update failed but landed.
func TestBind(t *testing.T) {
	tests := []struct {
		name string
		// racing makes the first update of each host conflict; liveOwner,
		// when set, is who the live read then shows as the consumer.
		racing    bool
		liveOwner string
		hosts     []client.Object
		wantHost  string
		wantErr   error
	}{
		{name: "claims an available host", hosts: []client.Object{availableHost("host-0")}, wantHost: "host-0"},
		{name: "no available host", hosts: []client.Object{claimedBy(availableHost("host-0"), "tenant-b", "worker-0")}, wantErr: ErrNoAvailableHost},
		{
			name: "a lost race moves on to the next host", racing: true, liveOwner: "tenant-b",
			hosts: []client.Object{availableHost("host-0"), availableHost("host-1")}, wantErr: ErrNoAvailableHost,
		},
		{
			name: "a conflict whose update landed is a claim", racing: true, liveOwner: "tenant-a",
			hosts: []client.Object{availableHost("host-0")}, wantHost: "host-0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			var funcs interceptor.Funcs
			if tt.racing {
				funcs.Update = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					host, ok := obj.(*bmov1alpha1.BareMetalHost)
					if !ok {
						return c.Update(ctx, obj, opts...)
					}
					// Someone else wins (or our write lands) before our
					// update returns a conflict.
					live := host.DeepCopy()
					if tt.liveOwner == "tenant-a" {
						return errors.Join(c.Update(ctx, live, opts...), errConflict)
					}
					claimedBy(live, tt.liveOwner, "worker-0")
					if err := c.Update(ctx, live, opts...); err != nil {
						return err
					}
					return errConflict
				}
			}
			f := newBindingFixture(t, funcs, tt.hosts...)
			host, err := f.binding.Bind(ctx)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Bind = %v, want %v", err, tt.wantErr)
				}
				secrets := &corev1.SecretList{}
				if err := f.pool.List(ctx, secrets); err != nil {
					t.Fatal(err)
				}
				if len(secrets.Items) != 0 {
					t.Errorf("a failed claim leaves %d Secrets next to the hosts", len(secrets.Items))
				}
				return
			}
			if err != nil {
				t.Fatalf("Bind: %v", err)
			}
			if host.Name != tt.wantHost || f.m3m.Annotations[infrav1.HostAnnotation] != poolNamespace+"/"+tt.wantHost {
				t.Fatalf("bound %s, annotation %q; want %s", host, f.m3m.Annotations[infrav1.HostAnnotation], tt.wantHost)
			}
			claimed := f.host(t, tt.wantHost)
			ref := claimed.Spec.ConsumerRef
			if ref == nil || ref.Namespace != "tenant-a" || ref.Name != "worker-0" {
				t.Fatalf("host consumerRef %+v, want tenant-a/worker-0", ref)
			}
			if claimed.Spec.UserData == nil {
				t.Fatal("a machine without data template is given its user data in the claim")
			}
			secret := &corev1.Secret{}
			if err := f.pool.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: claimed.Spec.UserData.Name}, secret); err != nil {
				t.Fatalf("user data next to the host: %v", err)
			}
			if secret.Labels[OwnerUIDLabel] != string(f.m3m.UID) {
				t.Errorf("user data labelled %v, want the machine's UID", secret.Labels)
			}
		})
	}
}

// TestHostAndRelease: a machine finds its host by its annotation only while
// the host still names it; releasing deprovisions first, then frees the
// host and deletes the machine's Secrets, and never touches a host someone
// else consumes now.
func TestHostAndRelease(t *testing.T) {
	ctx := context.Background()
	f := newBindingFixture(t, interceptor.Funcs{}, availableHost("host-0"))
	if _, err := f.binding.Bind(ctx); err != nil {
		t.Fatal(err)
	}
	confirmAssociation(f.m3m)
	host, err := f.binding.Host(ctx)
	if err != nil || host == nil || host.Name != "host-0" {
		t.Fatalf("Host = %v, %v; want host-0", host, err)
	}

	bmh := f.host(t, "host-0")
	bmh.Status.Provisioning.State = bmov1alpha1.StateProvisioned
	if err := f.pool.Update(ctx, bmh); err != nil {
		t.Fatal(err)
	}
	done, err := f.binding.Release(ctx)
	if err != nil || done {
		t.Fatalf("Release of a provisioned host = %v, %v; want deprovisioning first", done, err)
	}
	if bmh = f.host(t, "host-0"); bmh.Spec.Image != nil || bmh.Spec.UserData != nil || bmh.Spec.ConsumerRef == nil {
		t.Fatalf("deprovisioning clears the image and user data and keeps the claim: %+v", bmh.Spec)
	}

	bmh.Status.Provisioning.State = bmov1alpha1.StateAvailable
	if err := f.pool.Update(ctx, bmh); err != nil {
		t.Fatal(err)
	}
	if done, err = f.binding.Release(ctx); err != nil || !done {
		t.Fatalf("Release of a deprovisioned host = %v, %v; want released", done, err)
	}
	if bmh = f.host(t, "host-0"); bmh.Spec.ConsumerRef != nil || bmh.Spec.Online {
		t.Fatalf("released host still claimed or online: %+v", bmh.Spec)
	}
	secrets := &corev1.SecretList{}
	if err := f.pool.List(ctx, secrets); err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 0 {
		t.Errorf("%d Secrets of the machine left next to the host", len(secrets.Items))
	}

	// Someone else takes the host: the machine does not see it as its own.
	claimedBy(bmh, "tenant-b", "worker-0")
	if err := f.pool.Update(ctx, bmh); err != nil {
		t.Fatal(err)
	}
	if _, err := f.binding.Host(ctx); !errors.Is(err, ErrHostNotFound) {
		t.Fatalf("Host of a host consumed by another machine = %v, want ErrHostNotFound", err)
	}
	if done, err := f.binding.Release(ctx); err != nil || !done {
		t.Fatalf("Release = %v, %v; want done without touching someone else's host", done, err)
	}
	if f.host(t, "host-0").Spec.ConsumerRef.Namespace != "tenant-b" {
		t.Fatal("releasing touched another machine's host")
	}
}

// TestReleaseFindsUnrecordedClaim: a claim whose annotation was never
// recorded (a crash between the two writes) is found and released.
func TestReleaseFindsUnrecordedClaim(t *testing.T) {
	ctx := context.Background()
	host := availableHost("host-0")
	host.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: "tenant-a", Name: "worker-0", UID: "uid-worker-0"}
	f := newBindingFixture(t, interceptor.Funcs{}, host)
	done, err := f.binding.Release(ctx)
	if err != nil || !done {
		t.Fatalf("Release = %v, %v", done, err)
	}
	if f.host(t, "host-0").Spec.ConsumerRef != nil {
		t.Fatal("the unrecorded claim is not released")
	}
}

// TestMovedMachineKeepsItsHost: clusterctl move gives a Metal3Machine a new
// UID and keeps its annotations. The moved machine finds its host and its
// Secrets by its consumer ID; a same-named machine of another management
// cluster (its own UID, its own consumer ID) never does.
func TestMovedMachineKeepsItsHost(t *testing.T) {
	ctx := context.Background()
	f := newBindingFixture(t, interceptor.Funcs{}, availableHost("host-0"))
	if _, err := f.binding.Bind(ctx); err != nil {
		t.Fatal(err)
	}
	userData := f.host(t, "host-0").Spec.UserData

	moved := f.m3m.DeepCopy()
	moved.UID = "uid-worker-0-after-move"
	elsewhere := &infrav1.Metal3Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "worker-0", UID: "uid-worker-0-other-management"},
		Spec:       f.m3m.Spec,
	}
	infrav1.EnsureConsumerID(elsewhere)

	host, err := bmhBindingFor(t, f.pool, moved).Host(ctx)
	if err != nil || host == nil || host.Name != "host-0" {
		t.Fatalf("moved machine: Host = %v, %v; want host-0", host, err)
	}
	if got := hostSecretName(moved, pool.UserDataPurpose); got != userData.Name {
		t.Errorf("moved machine names its user data %s, the host has %s", got, userData.Name)
	}

	other := bmhBindingFor(t, f.pool, elsewhere)
	if host, err := other.Host(ctx); host != nil || err != nil {
		t.Fatalf("same-named machine elsewhere: Host = %v, %v; want none yet", host, err)
	}
	if _, err := other.Bind(ctx); !errors.Is(err, ErrNoAvailableHost) {
		t.Fatalf("same-named machine elsewhere: Bind = %v, want ErrNoAvailableHost (the only host is taken)", err)
	}
	if done, err := other.Release(ctx); err != nil || !done {
		t.Fatalf("same-named machine elsewhere: Release = %v, %v", done, err)
	}
	// Even pointed at the host by hand, it is not its host: as an intent,
	// the host is not offered to it (someone consumes it) ...
	elsewhere.Annotations[infrav1.HostAnnotation] = poolNamespace + "/host-0"
	if host, err := other.Host(ctx); host != nil || err != nil {
		t.Fatalf("same-named machine elsewhere, intending the host: Host = %v, %v; want none", host, err)
	}
	if _, err := other.Bind(ctx); !errors.Is(err, ErrNoAvailableHost) {
		t.Fatalf("same-named machine elsewhere, intending the host: Bind = %v, want ErrNoAvailableHost", err)
	}
	if done, err := other.Release(ctx); err != nil || !done {
		t.Fatalf("same-named machine elsewhere, intending the host: Release = %v, %v", done, err)
	}
	// ... and as a confirmed record, it is missing, not found in another's.
	elsewhere.Annotations[infrav1.HostAnnotation] = poolNamespace + "/host-0"
	confirmAssociation(elsewhere)
	if _, err := other.Host(ctx); !errors.Is(err, ErrHostNotFound) {
		t.Fatalf("same-named machine elsewhere, annotated: Host = %v, want ErrHostNotFound", err)
	}
	if done, err := other.Release(ctx); err != nil || !done {
		t.Fatalf("same-named machine elsewhere, annotated: Release = %v, %v", done, err)
	}
	if bmh := f.host(t, "host-0"); bmh.Spec.ConsumerRef == nil || bmh.Spec.ConsumerRef.UID != "uid-worker-0" || bmh.Spec.UserData == nil {
		t.Fatalf("another management cluster's machine changed the host: %+v", bmh.Spec)
	}
	secret := &corev1.Secret{}
	if err := f.pool.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: userData.Name}, secret); err != nil {
		t.Fatalf("the moved machine's user data is gone: %v", err)
	}
}

// TestReleaseTrustsThePoolNotTheAnnotation: the machine's host annotation
// is on the tenant's own object. Each case is a record the tenant rewrote
// (with the webhook off, or before it ran) and then deleted its machine:
// the host the pool says the machine consumes is released all the same, and
// a machine whose host cannot be found keeps waiting until an operator says
// the host is lost.
func TestReleaseTrustsThePoolNotTheAnnotation(t *testing.T) {
	ctx := context.Background()
	provisioned := func(name string) *bmov1alpha1.BareMetalHost {
		host := availableHost(name)
		host.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: "tenant-a", Name: "worker-0", UID: "uid-worker-0"}
		host.Spec.Image = &bmov1alpha1.Image{URL: "http://images/node.qcow2"}
		host.Status.Provisioning.State = bmov1alpha1.StateProvisioned
		return host
	}
	tests := []struct {
		name     string
		hosts    []client.Object
		recorded string
		// intent: the record is not confirmed by the machine's status.
		intent bool
		lost   bool
		// wantDeprovisioned is the host Release must deprovision.
		wantDeprovisioned string
		wantDone          bool
		wantErr           error
	}{
		{name: "record rewritten to a host that does not exist", recorded: poolNamespace + "/does-not-exist",
			hosts: []client.Object{provisioned("host-0")}, wantDeprovisioned: "host-0"},
		{name: "record rewritten to another tenant's host", recorded: poolNamespace + "/host-1",
			hosts: []client.Object{provisioned("host-0"), claimedBy(availableHost("host-1"), "tenant-b", "worker-9")}, wantDeprovisioned: "host-0"},
		{name: "record rewritten to another namespace", recorded: "elsewhere/host-0",
			hosts: []client.Object{provisioned("host-0")}, wantDeprovisioned: "host-0"},
		{name: "recorded host released before a crash", recorded: poolNamespace + "/host-0",
			hosts: []client.Object{availableHost("host-0")}, wantDone: true},
		{name: "recorded host nowhere to be found", recorded: poolNamespace + "/gone", wantErr: ErrHostNotFound},
		// A crash between the write of the intent and the claim.
		{name: "intended host, never claimed", recorded: poolNamespace + "/host-0", intent: true,
			hosts: []client.Object{availableHost("host-0")}, wantDone: true},
		{name: "intended host, gone", recorded: poolNamespace + "/gone", intent: true, wantDone: true},
		{name: "intended host, claimed before a crash: released", recorded: poolNamespace + "/host-0", intent: true,
			hosts: []client.Object{provisioned("host-0")}, wantDeprovisioned: "host-0"},
		{name: "recorded host nowhere to be found, said lost by an operator", recorded: poolNamespace + "/gone", lost: true, wantDone: true},
		{name: "said lost, but the pool still has it: released all the same", recorded: poolNamespace + "/gone", lost: true,
			hosts: []client.Object{provisioned("host-0")}, wantDeprovisioned: "host-0"},
		{name: "never bound", wantDone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newBindingFixture(t, interceptor.Funcs{}, tt.hosts...)
			if tt.recorded != "" {
				f.m3m.Annotations[infrav1.HostAnnotation] = tt.recorded
				if !tt.intent {
					confirmAssociation(f.m3m)
				}
			}
			if tt.lost {
				f.m3m.Annotations[infrav1.HostLostAnnotation] = "pool admin: BMH deleted"
			}
			done, err := f.binding.Release(ctx)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || done {
					t.Fatalf("Release = %v, %v; want %v", done, err, tt.wantErr)
				}
				return
			}
			if err != nil || done != tt.wantDone {
				t.Fatalf("Release = %v, %v; want done=%v", done, err, tt.wantDone)
			}
			if tt.wantDeprovisioned != "" {
				if host := f.host(t, tt.wantDeprovisioned); host.Spec.Image != nil || host.Spec.ConsumerRef == nil {
					t.Fatalf("host %s: image %v, consumerRef %v; want deprovisioning under the machine's claim",
						tt.wantDeprovisioned, host.Spec.Image, host.Spec.ConsumerRef)
				}
			}
			for _, obj := range tt.hosts {
				if before := obj.(*bmov1alpha1.BareMetalHost); before.Spec.ConsumerRef != nil && before.Spec.ConsumerRef.Namespace == "tenant-b" {
					if after := f.host(t, before.Name); !equality.Semantic.DeepEqual(after.Spec, before.Spec) {
						t.Errorf("another tenant's host %s was changed: %+v", before.Name, after.Spec)
					}
				}
			}
			if got := f.m3m.Annotations[infrav1.HostAnnotation]; got != tt.recorded {
				t.Errorf("the record became %q; it is written once and never rewritten", got)
			}
		})
	}
}

// sharedCache makes a fake pool answer a List with UnsafeDisableDeepCopy as
// controller-runtime's cache does: each item a shallow copy of the object
// the cache holds, sharing its maps, slices and pointers. It remembers each
// object as it was handed out, so that a test can tell whether anyone wrote
// through what it listed.
type sharedCache struct {
	held map[string]*bmov1alpha1.BareMetalHost // by name and resourceVersion
	seen map[string]*bmov1alpha1.BareMetalHost // as first handed out
}

func (s *sharedCache) list(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.List(ctx, list, opts...); err != nil {
		return err
	}
	hosts, ok := list.(*bmov1alpha1.BareMetalHostList)
	listOpts := (&client.ListOptions{}).ApplyOptions(opts)
	if !ok || !ptr.Deref(listOpts.UnsafeDisableDeepCopy, false) {
		return nil
	}
	for i := range hosts.Items {
		key := hosts.Items[i].Name + "@" + hosts.Items[i].ResourceVersion
		if s.held[key] == nil {
			s.held[key] = hosts.Items[i].DeepCopy()
			s.seen[key] = hosts.Items[i].DeepCopy()
		}
		hosts.Items[i] = *s.held[key]
	}
	return nil
}

// TestListedHostsAreOnlyRead: a machine looks for its host and for a free
// one among hosts listed straight from the cache, without copies
// (consumedAmong). Whatever it does next (take a host, recover a claim a
// crash left unrecorded, provision, sync, pause, release), the cache's
// objects are as they were: a write through them would show every other
// machine, and the host watch, a host the API server never had.
func TestListedHostsAreOnlyRead(t *testing.T) {
	ctx := context.Background()
	unrecorded := availableHost("host-1")
	unrecorded.Labels = map[string]string{"rack": "b"}
	unrecorded.Annotations = map[string]string{bmov1alpha1.PausedAnnotation: pausedByUs}
	unrecorded.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: "tenant-a", Name: "worker-0", UID: "uid-worker-0"}
	free := availableHost("host-0")
	free.Labels = map[string]string{"rack": "a"}
	cache := &sharedCache{held: map[string]*bmov1alpha1.BareMetalHost{}, seen: map[string]*bmov1alpha1.BareMetalHost{}}
	f := newBindingFixture(t, interceptor.Funcs{List: cache.list}, free, unrecorded)

	host, err := f.binding.Host(ctx)
	if err != nil || host == nil || host.Name != "host-1" {
		t.Fatalf("Host = %v, %v; want the unrecorded claim of host-1", host, err)
	}
	if host, err = f.binding.Bind(ctx); err != nil || host.Name != "host-1" {
		t.Fatalf("Bind = %v, %v; want the unrecorded claim of host-1", host, err)
	}
	if err := f.binding.Provision(ctx, host, RenderedSecrets{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.binding.Sync(ctx, host); err != nil {
		t.Fatal(err)
	}
	if err := f.binding.Pause(ctx, host, true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.binding.Release(ctx); err != nil {
		t.Fatal(err)
	}
	other := &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "worker-1", UID: "uid-worker-1"}, Spec: f.m3m.Spec}
	infrav1.EnsureConsumerID(other)
	if host, err := bmhBindingFor(t, f.pool, other).Bind(ctx); err != nil || host.Name != "host-0" {
		t.Fatalf("another machine's Bind = %v, %v; want the free host-0", host, err)
	}

	if len(cache.held) == 0 {
		t.Fatal("nothing was listed without copies")
	}
	for key, held := range cache.held {
		if !equality.Semantic.DeepEqual(held, cache.seen[key]) {
			t.Errorf("cached host %s was changed by the binding:\n got %+v\nwant %+v", key, held, cache.seen[key])
		}
	}
}
