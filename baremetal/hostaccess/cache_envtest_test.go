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

package hostaccess

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// twoClusters is a management API server, where Metal3 objects and identity
// Secrets live, and a pool API server, where the BareMetalHosts are.
type twoClusters struct {
	mgmt, pool *testenv.Env
	mgr        ctrl.Manager
	cache      *IdentityCache
	ctx        context.Context
	namespaces map[string]string
}

// ns is the test's name for the namespace it calls base: the API servers
// are shared with the package's other tests.
func (tc *twoClusters) ns(base string) string {
	if name, ok := tc.namespaces[base]; ok {
		return name
	}
	name := uniqueNamespace(base)
	tc.namespaces[base] = name
	return name
}

func newScheme(t *testing.T) *k8sruntime.Scheme {
	t.Helper()
	scheme := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme, bmov1alpha1.AddToScheme, infrav1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

// startTwoClusters runs a manager with a Cache on the (shared) management
// API server. Probes are fast so outages show within seconds.
func startTwoClusters(t *testing.T) *twoClusters {
	t.Helper()
	return startTwoClustersWithPool(t, nil)
}

// startTwoClustersWithPool is startTwoClusters with pool, when not nil, as
// the pool API server instead of the shared one: for a test that counts
// what the server sees.
func startTwoClustersWithPool(t *testing.T, pool *testenv.Env) *twoClusters {
	t.Helper()
	return startTwoClustersWith(t, pool, nil)
}

// startTwoClustersWith is startTwoClustersWithPool with the cache's options
// adjusted by adjust, if set.
func startTwoClustersWith(t *testing.T, pool *testenv.Env, adjust func(*Options)) *twoClusters {
	t.Helper()
	scheme := newScheme(t)
	mgmt := sharedMgmt.Get(t, &suite, func(s testenv.T) *testenv.Env {
		return testenv.Start(s, testenv.Options{Scheme: scheme, CRDs: testenv.ProviderCRDs(s)})
	})
	if pool == nil {
		pool = sharedPool.Get(t, &suite, func(s testenv.T) *testenv.Env {
			return testenv.Start(s, testenv.Options{Scheme: scheme, CRDDirectoryPaths: []string{testenv.BMOCRDPath(s)}})
		})
	}
	mgr, err := ctrl.NewManager(mgmt.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := identity.Indexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	opts := Options{
		SecretReader: mgr.GetAPIReader(), ManagementCache: mgr.GetCache(), InClusterClient: mgr.GetClient(), Scheme: scheme,
		ProbeInterval: 500 * time.Millisecond, ProbeTimeout: 500 * time.Millisecond, FailureThreshold: 2,
		MinBackoff: 200 * time.Millisecond, MaxBackoff: time.Second, ConnectTimeout: 5 * time.Second,
		// envtest's API servers listen on loopback.
		Policy: kubeguard.ServerPolicy{AllowLoopback: true},
		Users:  []func() client.ObjectList{func() client.ObjectList { return &infrav1.Metal3MachineList{} }},
	}
	if adjust != nil {
		adjust(&opts)
	}
	cache, err := NewIdentityCache(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(cache); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("management cache did not sync")
	}
	NewWithT(t).Eventually(func() bool {
		cache.mu.Lock()
		defer cache.mu.Unlock()
		return cache.ctx != nil
	}).Should(BeTrue(), "remote cache should start")
	return &twoClusters{mgmt: mgmt, pool: pool, mgr: mgr, cache: cache, ctx: ctx, namespaces: map[string]string{}}
}

// tenant creates, for user, a pool namespace with the provider's Role and an
// identity Secret in the management namespace, and returns the identity.
// The namespaces are named as tc.ns names them.
func (tc *twoClusters) tenant(t *testing.T, user, mgmtNamespace, poolNamespace string, rules ...testenv.Rule) identity.Identity {
	t.Helper()
	mgmtNamespace, poolNamespace = tc.ns(mgmtNamespace), tc.ns(poolNamespace)
	if len(rules) == 0 {
		rules = testenv.HostProviderRules()
	}
	tc.pool.GrantInNamespace(t, poolNamespace, user, rules...)
	tc.mgmt.GrantInNamespace(t, mgmtNamespace, "unused-"+user) // creates the namespace
	secret := testenv.IdentitySecret(mgmtNamespace, user+"-kubeconfig", tc.pool.UserKubeconfig(t, user, "pool", poolNamespace))
	if err := tc.mgmt.Client.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	return identity.Identity{Key: identity.Key{SecretNamespace: mgmtNamespace, SecretName: secret.Name}, ObjectNamespace: mgmtNamespace}
}

// hostAccess retries while the management cache catches up with a Secret
// the test just wrote.
func (tc *twoClusters) hostAccess(t *testing.T, id identity.Identity) HostAccess {
	t.Helper()
	var access HostAccess
	NewWithT(t).Eventually(func() error {
		var err error
		access, err = tc.cache.HostAccess(tc.ctx, id)
		return err
	}).WithTimeout(20 * time.Second).Should(Succeed())
	return access
}

func machine(namespace, name string) *infrav1.Metal3Machine {
	return &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

func host(namespace, name string) *bmov1alpha1.BareMetalHost {
	return &bmov1alpha1.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       bmov1alpha1.BareMetalHostSpec{Online: true, BootMACAddress: "00:11:22:33:44:55"},
	}
}

// drain empties q and returns what it held.
func drain(q workqueue.TypedRateLimitingInterface[reconcile.Request]) []types.NamespacedName {
	var got []types.NamespacedName
	for q.Len() > 0 {
		req, _ := q.Get()
		got = append(got, req.NamespacedName)
		q.Done(req)
		q.Forget(req)
	}
	return got
}

// hostRecorder is a controller of the test's own, as remediation or label
// sync will be: it watches hosts through identities with Cache.Watch, and
// the cache knows nothing about it.
type hostRecorder struct {
	mu   sync.Mutex
	seen []types.NamespacedName
}

func (r *hostRecorder) Reconcile(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, req.NamespacedName)
	return reconcile.Result{}, nil
}

func (r *hostRecorder) saw() []types.NamespacedName {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// startHostRecorder adds a hostRecorder controller to the manager and
// returns it with the Watcher it registers through identities.
func (tc *twoClusters) startHostRecorder(t *testing.T) (*hostRecorder, Watcher) {
	t.Helper()
	recorder := &hostRecorder{}
	c, err := controller.New("test-host-recorder", tc.mgr, controller.Options{
		Reconciler: recorder, SkipNameValidation: ptr.To(true), UsePriorityQueue: ptr.To(false),
	})
	if err != nil {
		t.Fatal(err)
	}
	return recorder, NewWatcher(WatcherOptions{
		Name: "test-host-recorder", Watcher: c, Kind: &bmov1alpha1.BareMetalHost{}, EventHandler: &handler.EnqueueRequestForObject{},
	})
}

// TestControllersWatchHostsThroughIdentities: a controller the cache does
// not know watches hosts through an identity: it hears about the hosts of
// that identity's namespace only, once however often it registers, and
// again after the identity reconnects with a rotated kubeconfig.
func TestControllersWatchHostsThroughIdentities(t *testing.T) {
	g := NewWithT(t)
	tc := startTwoClusters(t)
	recorder, watcher := tc.startHostRecorder(t)
	tenantA := tc.tenant(t, "tenant-a", "tenant-a", "pool-a")
	tc.tenant(t, "tenant-b", "tenant-b", "pool-b")

	accessA := tc.hostAccess(t, tenantA)
	g.Expect(accessA.Namespace()).To(Equal(tc.ns("pool-a")), "the hosts' namespace comes from the kubeconfig context")
	g.Expect(tc.cache.Watch(tc.ctx, tenantA.Key, watcher)).To(Succeed())
	g.Expect(tc.cache.Watch(tc.ctx, tenantA.Key, watcher)).To(Succeed(), "registering again is harmless")

	g.Expect(tc.pool.Client.Create(tc.ctx, host(tc.ns("pool-a"), "host-0"))).To(Succeed())
	g.Expect(tc.pool.Client.Create(tc.ctx, host(tc.ns("pool-b"), "host-0"))).To(Succeed())
	g.Eventually(recorder.saw).WithTimeout(20*time.Second).Should(ContainElement(types.NamespacedName{Namespace: tc.ns("pool-a"), Name: "host-0"}),
		"a host of the identity's namespace reaches the controller")
	g.Consistently(recorder.saw).WithTimeout(2*time.Second).Should(HaveEach(types.NamespacedName{Namespace: tc.ns("pool-a"), Name: "host-0"}),
		"only hosts the identity sees, and one watch however often it is registered")

	// Rotation replaces the connection; the controller registers its watch
	// again, as it does on every use of the identity.
	tc.pool.GrantInNamespace(t, tc.ns("pool-a"), "tenant-a-rotated", testenv.HostProviderRules()...)
	secret := &corev1.Secret{}
	g.Expect(tc.mgmt.Client.Get(tc.ctx, tenantA.Key.Secret(), secret)).To(Succeed())
	secret.Data["kubeconfig"] = tc.pool.UserKubeconfig(t, "tenant-a-rotated", "pool", tc.ns("pool-a"))
	g.Expect(tc.mgmt.Client.Update(tc.ctx, secret)).To(Succeed())
	g.Eventually(func() (string, error) {
		a, err := tc.cache.HostAccess(tc.ctx, tenantA)
		if err != nil {
			return "", err
		}
		return whoAmI(tc.ctx, t, a), nil
	}).WithTimeout(20 * time.Second).Should(Equal("tenant-a-rotated"))
	g.Expect(tc.cache.Watch(tc.ctx, tenantA.Key, watcher)).To(Succeed())
	g.Expect(tc.pool.Client.Create(tc.ctx, host(tc.ns("pool-a"), "host-1"))).To(Succeed())
	g.Eventually(recorder.saw).WithTimeout(20*time.Second).Should(ContainElement(types.NamespacedName{Namespace: tc.ns("pool-a"), Name: "host-1"}),
		"host events flow through the new connection")
}

// TestSourcesHearIdentitySecrets: a controller's source gets the Secret of
// an identity when it changes, and when its identity connects.
func TestSourcesHearIdentitySecrets(t *testing.T) {
	g := NewWithT(t)
	tc := startTwoClusters(t)
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()
	// Map every Secret to a request named after it, to see what arrives.
	g.Expect(tc.cache.Source("test", func(_ context.Context, secret types.NamespacedName) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: secret}}
	}).Start(tc.ctx, queue)).To(Succeed())

	id := tc.tenant(t, "tenant-a", "tenant-a", "pool-a")
	g.Eventually(func() []types.NamespacedName { return drain(queue) }).Should(ContainElement(id.Key.Secret()),
		"the Secret's creation is heard")
	tc.hostAccess(t, id)
	g.Eventually(func() []types.NamespacedName { return drain(queue) }).Should(ContainElement(id.Key.Secret()),
		"the identity's connection is heard")
}

// TestRotationStopsOldAccessor: a new kubeconfig in the Secret is used by
// the next HostAccess, and the old accessor's informers and probe stop.
func TestRotationStopsOldAccessor(t *testing.T) {
	g := NewWithT(t)
	tc := startTwoClusters(t)
	id := tc.tenant(t, "tenant-a", "tenant-a", "pool-a")
	access := tc.hostAccess(t, id)
	g.Expect(whoAmI(tc.ctx, t, access)).To(Equal("tenant-a"))

	tc.cache.mu.Lock()
	old := tc.cache.states[id.Key].accessor
	tc.cache.mu.Unlock()

	tc.pool.GrantInNamespace(t, tc.ns("pool-a"), "tenant-a-rotated", testenv.HostProviderRules()...)
	secret := &corev1.Secret{}
	g.Expect(tc.mgmt.Client.Get(tc.ctx, id.Key.Secret(), secret)).To(Succeed())
	secret.Data["kubeconfig"] = tc.pool.UserKubeconfig(t, "tenant-a-rotated", "pool", tc.ns("pool-a"))
	g.Expect(tc.mgmt.Client.Update(tc.ctx, secret)).To(Succeed())

	g.Eventually(func() (string, error) {
		a, err := tc.cache.HostAccess(tc.ctx, id)
		if err != nil {
			return "", err
		}
		return whoAmI(tc.ctx, t, a), nil
	}).WithTimeout(20*time.Second).Should(Equal("tenant-a-rotated"), "the next use sees the new credentials")

	g.Eventually(goroutinesEnded(old)).Should(BeClosed(), "the old accessor's informers and probe are stopped")
	g.Expect(tc.cache.ConnectedKeys()).To(ConsistOf(id.Key), "one accessor per identity")
}

// goroutinesEnded returns a channel closed once every goroutine of acc
// (its informers and probe, which acc.running counts) has returned.
func goroutinesEnded(acc *accessor) <-chan struct{} {
	ended := make(chan struct{})
	go func() {
		acc.running.Wait()
		close(ended)
	}()
	return ended
}

func whoAmI(ctx context.Context, t *testing.T, access HostAccess) string {
	t.Helper()
	review := &authenticationv1.SelfSubjectReview{}
	if err := access.Client().Create(ctx, review); err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	return review.Status.UserInfo.Username
}

// TestIdentityLifetime: an identity stops once no object records using it
// (the users come from an index of what the objects record, not from
// memory), or when its Secret is deleted, and none of its goroutines
// outlive it.
func TestIdentityLifetime(t *testing.T) {
	g := NewWithT(t)
	tc := startTwoClusters(t)
	id := tc.tenant(t, "tenant-a", "tenant-a", "pool-a")

	// A machine recording the identity in its status, as the Metal3Machine
	// controller does, and another one leaving it.
	user := machine(tc.ns("tenant-a"), "worker-0")
	g.Expect(tc.mgmt.Client.Create(tc.ctx, user)).To(Succeed())
	user.Status.Identity = identity.Status(id, tc.ns("pool-a"))
	g.Expect(tc.mgmt.Client.Status().Update(tc.ctx, user)).To(Succeed())
	leaving := machine(tc.ns("tenant-a"), "worker-1")
	g.Expect(tc.mgmt.Client.Create(tc.ctx, leaving)).To(Succeed())

	before := runtime.NumGoroutine()
	tc.hostAccess(t, id)
	g.Expect(tc.cache.ConnectedKeys()).To(ConsistOf(id.Key))
	g.Expect(runtime.NumGoroutine()).To(BeNumerically(">", before), "a connected identity runs informers and a probe")

	g.Eventually(func(g Gomega) {
		m := &infrav1.Metal3MachineList{}
		g.Expect(tc.mgr.GetCache().List(tc.ctx, m, client.MatchingFields{identity.UsedIndex: identity.UsedKey(id.Key)})).To(Succeed())
		g.Expect(m.Items).To(HaveLen(1))
	}).Should(Succeed(), "the manager's cache indexes the machine by the identity it records")
	g.Expect(tc.cache.Release(tc.ctx, id.Key, leaving)).To(Succeed())
	g.Expect(tc.cache.ConnectedKeys()).To(ConsistOf(id.Key), "an identity a machine records is kept")

	g.Expect(tc.mgmt.Client.Delete(tc.ctx, user)).To(Succeed())
	g.Eventually(func() []identity.Key {
		g.Expect(tc.cache.Release(tc.ctx, id.Key, user)).To(Succeed())
		return tc.cache.ConnectedKeys()
	}).Should(BeEmpty(), "an identity nobody uses is stopped")
	g.Eventually(runtime.NumGoroutine).WithTimeout(15*time.Second).Should(BeNumerically("<=", before+2),
		"no goroutine of the stopped identity remains")

	tc.hostAccess(t, id)
	g.Expect(tc.cache.ConnectedKeys()).To(ConsistOf(id.Key))
	g.Expect(tc.mgmt.Client.Delete(tc.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: id.Key.SecretNamespace, Name: id.Key.SecretName,
	}})).To(Succeed())
	g.Eventually(func() string {
		_, err := tc.cache.HostAccess(tc.ctx, id)
		if ie, ok := identity.AsError(err); ok {
			return ie.Reason
		}
		return ""
	}).WithTimeout(15 * time.Second).Should(Equal(infrav1.IdentitySecretNotFoundReason))
	g.Expect(tc.cache.ConnectedKeys()).To(BeEmpty(), "a deleted Secret stops its identity")
	g.Eventually(runtime.NumGoroutine).WithTimeout(15 * time.Second).Should(BeNumerically("<=", before+2))
}

// TestIdentityErrors: credentials that lack a permission, are rejected, or
// point nowhere, each give their own reason, before anything is provisioned.
func TestIdentityErrors(t *testing.T) {
	tc := startTwoClusters(t)

	t.Run("Forbidden names the missing verb", func(t *testing.T) {
		g := NewWithT(t)
		rules := testenv.HostProviderRules()
		rules[0].Verbs = []string{"get", "list", "watch", "patch"} // no update
		id := tc.tenant(t, "tenant-limited", "tenant-limited", "pool-limited", rules...)
		g.Eventually(func() string {
			_, err := tc.cache.HostAccess(tc.ctx, id)
			return reasonAndMessage(err)
		}).WithTimeout(20 * time.Second).Should(And(
			HavePrefix(infrav1.IdentityForbiddenReason),
			ContainSubstring("update baremetalhosts.metal3.io"),
			Not(ContainSubstring("patch baremetalhosts")),
		))
	})

	t.Run("a real API server's Forbidden message reaches callers", func(t *testing.T) {
		g := NewWithT(t)
		id := tc.tenant(t, "tenant-curious", "tenant-curious", "pool-curious")
		access := tc.hostAccess(t, id)
		err := access.Client().Get(tc.ctx, types.NamespacedName{Namespace: "kube-system", Name: "anything"}, &corev1.Secret{})
		g.Expect(reasonAndMessage(classify(id.Key, "", err))).To(And(
			HavePrefix(infrav1.IdentityForbiddenReason),
			ContainSubstring(`User "tenant-curious" cannot get resource "secrets" in API group "" in the namespace "kube-system"`),
		), "the API server passed the handshake: its Status message is what makes Forbidden actionable")
	})

	t.Run("Unauthorized for credentials the server rejects", func(t *testing.T) {
		g := NewWithT(t)
		id := tc.tenant(t, "tenant-revoked", "tenant-revoked", "pool-revoked")
		secret := &corev1.Secret{}
		g.Expect(tc.mgmt.Client.Get(tc.ctx, id.Key.Secret(), secret)).To(Succeed())
		// Keep the server and CA, swap the client certificate for a token nobody issued.
		secret.Data["kubeconfig"] = withToken(t, secret.Data["kubeconfig"], "not-a-valid-token")
		g.Expect(tc.mgmt.Client.Update(tc.ctx, secret)).To(Succeed())
		g.Eventually(func() string {
			_, err := tc.cache.HostAccess(tc.ctx, id)
			return reasonAndMessage(err)
		}).WithTimeout(20 * time.Second).Should(HavePrefix(infrav1.IdentityUnauthorizedReason))
	})

	t.Run("Unreachable for a server that is not there", func(t *testing.T) {
		g := NewWithT(t)
		id := tc.tenant(t, "tenant-lost", "tenant-lost", "pool-lost")
		secret := &corev1.Secret{}
		g.Expect(tc.mgmt.Client.Get(tc.ctx, id.Key.Secret(), secret)).To(Succeed())
		secret.Data["kubeconfig"] = withServer(t, secret.Data["kubeconfig"], "https://"+testenv.FreeLoopbackAddr(t))
		g.Expect(tc.mgmt.Client.Update(tc.ctx, secret)).To(Succeed())
		g.Eventually(func() string {
			_, err := tc.cache.HostAccess(tc.ctx, id)
			return reasonAndMessage(err)
		}).WithTimeout(20 * time.Second).Should(HavePrefix(infrav1.IdentityUnreachableReason))
	})

	t.Run("ContextNotFound for a context the kubeconfig lacks", func(t *testing.T) {
		g := NewWithT(t)
		id := tc.tenant(t, "tenant-ctx", "tenant-ctx", "pool-ctx")
		id.Key.Context = "elsewhere"
		g.Eventually(func() string {
			_, err := tc.cache.HostAccess(tc.ctx, id)
			return reasonAndMessage(err)
		}).WithTimeout(20 * time.Second).Should(And(HavePrefix(infrav1.IdentityContextNotFoundReason), ContainSubstring(tc.ns("tenant-ctx")+"/tenant-ctx-kubeconfig")))
	})
}

func reasonAndMessage(err error) string {
	if ie, ok := identity.AsError(err); ok {
		return ie.Reason + ": " + ie.Message
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return ""
}

func withToken(t *testing.T, raw []byte, token string) []byte {
	t.Helper()
	return rewriteKubeconfig(t, raw, func(s string) string {
		var out []string
		for _, line := range strings.Split(s, "\n") {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "client-certificate-data:") || strings.HasPrefix(trimmed, "client-key-data:") {
				continue
			}
			if trimmed == "user:" {
				line += "\n    token: " + token
			}
			out = append(out, line)
		}
		return strings.Join(out, "\n")
	})
}

func withServer(t *testing.T, raw []byte, server string) []byte {
	t.Helper()
	return rewriteKubeconfig(t, raw, func(s string) string {
		var out []string
		for _, line := range strings.Split(s, "\n") {
			if indent, _, found := strings.Cut(line, "server:"); found {
				line = indent + "server: " + server
			}
			out = append(out, line)
		}
		return strings.Join(out, "\n")
	})
}

func rewriteKubeconfig(t *testing.T, raw []byte, edit func(string) string) []byte {
	t.Helper()
	out := []byte(edit(string(raw)))
	if _, err := kubeguard.Load(kubeguard.Source{Data: out}, &kubeguard.ServerPolicy{AllowLoopback: true}); err != nil {
		t.Fatalf("rewritten kubeconfig does not parse: %v\n%s", err, out)
	}
	return out
}
