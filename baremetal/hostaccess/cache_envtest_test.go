package hostaccess

import (
	"context"
	"runtime"
	"strings"
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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/internal/testenv"
)

// twoClusters is a management API server, where Metal3 objects and identity
// Secrets live, and a pool API server, where the BareMetalHosts are.
type twoClusters struct {
	mgmt, pool *testenv.Env
	cache      *Cache
	ctx        context.Context
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

// startTwoClusters runs both API servers and a manager on the management one
// with a Cache. Probes are fast so outages show within seconds.
func startTwoClusters(t *testing.T) *twoClusters {
	t.Helper()
	scheme := newScheme(t)
	mgmt := testenv.Start(t, testenv.Options{Scheme: scheme})
	pool := testenv.Start(t, testenv.Options{Scheme: scheme, CRDDirectoryPaths: []string{testenv.BMOCRDPath(t)}})
	mgr, err := ctrl.NewManager(mgmt.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	cache, err := New(Options{
		SecretReader: mgr.GetAPIReader(), ManagementCache: mgr.GetCache(), InClusterClient: mgr.GetClient(), Scheme: scheme,
		ProbeInterval: 500 * time.Millisecond, ProbeTimeout: 500 * time.Millisecond, FailureThreshold: 2,
		MinBackoff: 200 * time.Millisecond, MaxBackoff: time.Second, ConnectTimeout: 5 * time.Second,
		// envtest's API servers listen on loopback.
		Policy: ServerPolicy{AllowLoopback: true},
	})
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
	return &twoClusters{mgmt: mgmt, pool: pool, cache: cache, ctx: ctx}
}

// tenant creates, for user, a pool namespace with the provider's Role and an
// identity Secret in the management namespace, and returns the identity.
func (tc *twoClusters) tenant(t *testing.T, user, mgmtNamespace, poolNamespace string, rules ...testenv.Rule) identity.Identity {
	t.Helper()
	if len(rules) == 0 {
		rules = testenv.HostProviderRules()
	}
	tc.pool.GrantInNamespace(t, poolNamespace, user, rules...)
	tc.mgmt.GrantInNamespace(t, mgmtNamespace, "unused-"+user) // creates the namespace
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-kubeconfig", Namespace: mgmtNamespace},
		Data:       map[string][]byte{"kubeconfig": tc.pool.UserKubeconfig(t, user, "pool", poolNamespace)},
	}
	if err := tc.mgmt.Client.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	return identity.Identity{Key: identity.Key{SecretNamespace: mgmtNamespace, SecretName: secret.Name}, ObjectNamespace: mgmtNamespace}
}

// hostAccess retries while the management cache catches up with a Secret
// the test just wrote.
func (tc *twoClusters) hostAccess(t *testing.T, user client.Object, id identity.Identity) HostAccess {
	t.Helper()
	var access HostAccess
	NewWithT(t).Eventually(func() error {
		var err error
		access, err = tc.cache.HostAccess(tc.ctx, user, id)
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

func consumedBy(h *bmov1alpha1.BareMetalHost, namespace, name string) {
	h.Spec.ConsumerRef = &corev1.ObjectReference{
		APIVersion: infrav1.GroupVersion.String(), Kind: "Metal3Machine", Namespace: namespace, Name: name,
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

// TestHostsThroughRemoteIdentity: hosts in the pool are seen through the
// identity; a host event reaches exactly the Metal3Machine of its
// consumerRef, and never a machine of another identity.
func TestHostsThroughRemoteIdentity(t *testing.T) {
	g := NewWithT(t)
	tc := startTwoClusters(t)
	tenantA := tc.tenant(t, "tenant-a", "tenant-a", "pool-a")
	tenantB := tc.tenant(t, "tenant-b", "tenant-b", "pool-b")

	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()
	g.Expect(tc.cache.Source("Metal3Machine").Start(tc.ctx, queue)).To(Succeed())

	workerA := machine("tenant-a", "worker-0")
	workerB := machine("tenant-b", "worker-0") // same name, other tenant
	accessA := tc.hostAccess(t, workerA, tenantA)
	tc.hostAccess(t, workerB, tenantB)
	g.Expect(accessA.Namespace()).To(Equal("pool-a"), "the hosts' namespace comes from the kubeconfig context")

	h := host("pool-a", "host-0")
	g.Expect(tc.pool.Client.Create(tc.ctx, h)).To(Succeed())
	g.Eventually(func() error {
		return accessA.Client().Get(tc.ctx, client.ObjectKeyFromObject(h), &bmov1alpha1.BareMetalHost{})
	}).Should(Succeed(), "a host created in the pool is visible through the identity")

	g.Eventually(func() []types.NamespacedName { return drain(queue) }).Should(BeEmpty())
	g.Expect(tc.pool.Client.Get(tc.ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
	consumedBy(h, "tenant-a", "worker-0")
	g.Expect(tc.pool.Client.Update(tc.ctx, h)).To(Succeed())
	g.Eventually(queue.Len).Should(Equal(1), "the host update should enqueue its consumer")
	g.Consistently(func() []types.NamespacedName { return drain(queue) }).
		WithTimeout(2 * time.Second).Should(Or(BeEmpty(), Equal([]types.NamespacedName{{Namespace: "tenant-a", Name: "worker-0"}})))
	g.Expect(queue.Len()).To(Equal(0))

	// A host in tenant A's pool naming tenant B's machine: B's identity
	// cannot see pool-a, A's must not wake B's machine.
	other := host("pool-a", "host-1")
	consumedBy(other, "tenant-b", "worker-0")
	g.Expect(tc.pool.Client.Create(tc.ctx, other)).To(Succeed())
	g.Eventually(func() error {
		return accessA.Client().Get(tc.ctx, client.ObjectKeyFromObject(other), &bmov1alpha1.BareMetalHost{})
	}).Should(Succeed())
	g.Consistently(queue.Len).WithTimeout(2*time.Second).Should(Equal(0), "no machine of another identity is enqueued")
}

// TestRotationStopsOldAccessor: a new kubeconfig in the Secret is used by
// the next HostAccess, and the old accessor's informers and probe stop.
func TestRotationStopsOldAccessor(t *testing.T) {
	g := NewWithT(t)
	tc := startTwoClusters(t)
	id := tc.tenant(t, "tenant-a", "tenant-a", "pool-a")
	worker := machine("tenant-a", "worker-0")
	access := tc.hostAccess(t, worker, id)
	g.Expect(whoAmI(tc.ctx, t, access)).To(Equal("tenant-a"))

	tc.cache.mu.Lock()
	old := tc.cache.states[id.Key].accessor
	tc.cache.mu.Unlock()

	tc.pool.GrantInNamespace(t, "pool-a", "tenant-a-rotated", testenv.HostProviderRules()...)
	secret := &corev1.Secret{}
	g.Expect(tc.mgmt.Client.Get(tc.ctx, id.Key.Secret(), secret)).To(Succeed())
	secret.Data["kubeconfig"] = tc.pool.UserKubeconfig(t, "tenant-a-rotated", "pool", "pool-a")
	g.Expect(tc.mgmt.Client.Update(tc.ctx, secret)).To(Succeed())

	g.Eventually(func() (string, error) {
		a, err := tc.cache.HostAccess(tc.ctx, worker, id)
		if err != nil {
			return "", err
		}
		return whoAmI(tc.ctx, t, a), nil
	}).WithTimeout(20*time.Second).Should(Equal("tenant-a-rotated"), "the next use sees the new credentials")

	g.Expect(old.stopped()).To(BeTrue(), "the old accessor's informers and probe are stopped")
	g.Expect(tc.cache.ConnectedKeys()).To(ConsistOf(id.Key), "one accessor per identity")
}

func whoAmI(ctx context.Context, t *testing.T, access HostAccess) string {
	t.Helper()
	review := &authenticationv1.SelfSubjectReview{}
	if err := access.Client().Create(ctx, review); err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	return review.Status.UserInfo.Username
}

// TestIdentityLifetime: an identity nobody uses any longer, or whose Secret
// is deleted, is stopped, and none of its goroutines outlive it.
func TestIdentityLifetime(t *testing.T) {
	g := NewWithT(t)
	tc := startTwoClusters(t)
	id := tc.tenant(t, "tenant-a", "tenant-a", "pool-a")
	worker := machine("tenant-a", "worker-0")

	before := runtime.NumGoroutine()
	tc.hostAccess(t, worker, id)
	g.Expect(tc.cache.ConnectedKeys()).To(ConsistOf(id.Key))
	g.Expect(runtime.NumGoroutine()).To(BeNumerically(">", before), "a connected identity runs informers and a probe")

	tc.cache.Release(worker)
	g.Expect(tc.cache.ConnectedKeys()).To(BeEmpty(), "an identity nobody uses is stopped")
	g.Eventually(runtime.NumGoroutine).WithTimeout(15*time.Second).Should(BeNumerically("<=", before+2),
		"no goroutine of the stopped identity remains")

	tc.hostAccess(t, worker, id)
	g.Expect(tc.cache.ConnectedKeys()).To(ConsistOf(id.Key))
	g.Expect(tc.mgmt.Client.Delete(tc.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: id.Key.SecretNamespace, Name: id.Key.SecretName,
	}})).To(Succeed())
	g.Eventually(func() string {
		_, err := tc.cache.HostAccess(tc.ctx, worker, id)
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
			_, err := tc.cache.HostAccess(tc.ctx, machine("tenant-limited", "m"), id)
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
		access := tc.hostAccess(t, machine("tenant-curious", "m"), id)
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
			_, err := tc.cache.HostAccess(tc.ctx, machine("tenant-revoked", "m"), id)
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
			_, err := tc.cache.HostAccess(tc.ctx, machine("tenant-lost", "m"), id)
			return reasonAndMessage(err)
		}).WithTimeout(20 * time.Second).Should(HavePrefix(infrav1.IdentityUnreachableReason))
	})

	t.Run("ContextNotFound for a context the kubeconfig lacks", func(t *testing.T) {
		g := NewWithT(t)
		id := tc.tenant(t, "tenant-ctx", "tenant-ctx", "pool-ctx")
		id.Key.Context = "elsewhere"
		g.Eventually(func() string {
			_, err := tc.cache.HostAccess(tc.ctx, machine("tenant-ctx", "m"), id)
			return reasonAndMessage(err)
		}).WithTimeout(20 * time.Second).Should(And(HavePrefix(infrav1.IdentityContextNotFoundReason), ContainSubstring("tenant-ctx/tenant-ctx-kubeconfig")))
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
	if _, err := parseKubeconfig(testKey, out); err != nil {
		t.Fatalf("rewritten kubeconfig does not parse: %v\n%s", err, out)
	}
	return out
}
