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
	"sync"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// serverMetric is testenv.ServerMetric inside an assertion.
func serverMetric(g Gomega, cfg *rest.Config, name string, labels ...string) float64 {
	value, err := testenv.ServerMetric(context.Background(), cfg, name, labels...)
	g.Expect(err).NotTo(HaveOccurred())
	return value
}

// hostCreations counts, per identity and host, the creation events each
// identity's watcher handler received.
type hostCreations struct {
	mu  sync.Mutex
	got map[string]int
}

func (h *hostCreations) handler(key identity.Key) handler.EventHandler {
	return handler.Funcs{CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.got[key.String()+" "+e.Object.GetName()]++
	}}
}

// of returns, for host, how many creations each of keys heard.
func (h *hostCreations) of(host string, keys ...identity.Key) func() []int {
	return func() []int {
		h.mu.Lock()
		defer h.mu.Unlock()
		counts := make([]int, len(keys))
		for i, key := range keys {
			counts[i] = h.got[key.String()+" "+host]
		}
		return counts
	}
}

// TestSharedAccessorPerCredential: identities whose Secrets (in different
// namespaces, or behind a Metal3ClusterIdentity) hold the same kubeconfig
// share one accessor: the pool API server sees one connection's access
// review and one watch of hosts, and each identity's watcher still hears
// every host. Rotating one Secret to another ServiceAccount splits that
// identity off to an accessor of its own while the others keep theirs, and
// releasing every identity leaves no accessor, no watch on the server and
// no goroutine behind.
func TestSharedAccessorPerCredential(t *testing.T) {
	g := NewWithT(t)
	// A pool API server of its own: its metrics count this test's watches
	// and access reviews alone.
	pool := testenv.Start(t, testenv.Options{Scheme: newScheme(t), CRDDirectoryPaths: []string{testenv.BMOCRDPath(t)}})
	tc := startTwoClustersWithPool(t, pool)
	poolNamespace := tc.ns("pool-shared")
	hostWatches := func() float64 {
		return serverMetric(g, pool.Config, "apiserver_longrunning_requests", `resource="baremetalhosts"`, `verb="WATCH"`)
	}
	accessReviews := func() float64 {
		return serverMetric(g, pool.Config, "apiserver_request_total", `resource="selfsubjectaccessreviews"`, `verb="POST"`)
	}
	reviewsPerConnection := 0
	for _, need := range requiredAccess[infrav1.HostModeBareMetalHost] {
		reviewsPerConnection += len(need.verbs)
	}

	// The same kubeconfig in three tenants' namespaces, and in the
	// admin's namespace behind a Metal3ClusterIdentity admitting a fourth.
	kubeconfig := pool.ServiceAccountKubeconfig(t, poolNamespace, "shared", time.Hour, testenv.HostProviderRules()...)
	newSecret := func(namespace string) identity.Identity {
		namespace = tc.ns(namespace)
		tc.mgmt.GrantInNamespace(t, namespace, "nobody") // creates the namespace
		g.Expect(tc.mgmt.Client.Create(tc.ctx, testenv.IdentitySecret(namespace, "pool-kubeconfig", kubeconfig))).To(Succeed())
		return identity.Identity{Key: identity.Key{SecretNamespace: namespace, SecretName: "pool-kubeconfig"}, ObjectNamespace: namespace}
	}
	tenants := []identity.Identity{newSecret("shared-a"), newSecret("shared-b"), newSecret("shared-c")}
	admin := newSecret("shared-admin")
	admitted := tc.ns("shared-d")
	tc.mgmt.GrantInNamespace(t, admitted, "nobody")
	clusterIdentity := uniqueNamespace("shared-pool")
	g.Expect(tc.mgmt.Client.Create(tc.ctx, &infrav1.Metal3ClusterIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: clusterIdentity},
		Spec: infrav1.Metal3ClusterIdentitySpec{
			SecretRef:         infrav1.KubeconfigSecretReference{Name: admin.Key.SecretName, Namespace: admin.Key.SecretNamespace},
			AllowedNamespaces: &infrav1.AllowedNamespaces{List: []string{admitted}},
		},
	})).To(Succeed())
	t.Cleanup(func() {
		_ = tc.mgmt.Client.Delete(context.Background(), &infrav1.Metal3ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterIdentity}})
	})
	var viaIdentity identity.Identity
	g.Eventually(func() error {
		var err error
		viaIdentity, err = tc.cache.Resolve(tc.ctx, identity.Identity{Key: identity.Key{ClusterIdentity: clusterIdentity}, ObjectNamespace: admitted})
		return err
	}).WithTimeout(10 * time.Second).Should(Succeed())
	users := append(slices.Clone(tenants), viaIdentity)
	keys := make([]identity.Key, len(users))
	for i, id := range users {
		keys[i] = id.Key
	}

	// A controller of the test's own, whose watcher for each identity
	// counts the hosts it hears about. It has reconciled once before the
	// goroutines are counted: its own are not the identities'.
	creations := &hostCreations{got: map[string]int{}}
	reconciled := make(chan struct{}, 1)
	recorder, err := controller.New("test-shared-hosts", tc.mgr, controller.Options{
		Reconciler: reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			select {
			case reconciled <- struct{}{}:
			default:
			}
			return reconcile.Result{}, nil
		}),
		SkipNameValidation: ptr.To(true),
	})
	g.Expect(err).NotTo(HaveOccurred())
	started := make(chan event.GenericEvent, 1)
	g.Expect(recorder.Watch(source.Channel(started, &handler.EnqueueRequestForObject{}))).To(Succeed())
	started <- event.GenericEvent{Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "any", Name: "started"}}}
	g.Eventually(reconciled).WithTimeout(10*time.Second).Should(Receive(), "the recorder runs")
	watcher := func(key identity.Key) Watcher {
		return NewWatcher(WatcherOptions{Name: "test-shared-hosts", Watcher: recorder, Kind: &bmov1alpha1.BareMetalHost{}, EventHandler: creations.handler(key)})
	}
	gauge := func(name string) float64 {
		v := metricValue(g, name, identity.Key{})
		g.Expect(v).NotTo(BeNil(), "%s is registered", name)
		return *v
	}
	// Earlier tests of the package moved the gauges.
	accessorsBefore, identitiesBefore := gauge(connectedMetric), gauge(identitiesMetric)
	g.Expect(hostWatches()).To(BeZero(), "nothing watches the new pool server yet")
	g.Expect(accessReviews()).To(BeZero())
	goroutinesBefore := runtime.NumGoroutine()

	for _, id := range users {
		access := tc.hostAccess(t, id)
		g.Expect(access.Key()).To(Equal(id.Key), "each access carries its caller's identity")
		g.Expect(access.Namespace()).To(Equal(poolNamespace))
		g.Expect(tc.cache.Watch(tc.ctx, id.Key, watcher(id.Key))).To(Succeed())
		g.Expect(tc.cache.Watch(tc.ctx, id.Key, watcher(id.Key))).To(Succeed(), "registering again is harmless")
	}
	g.Expect(tc.cache.sharedAccessors()).To(Equal(1), "one accessor for one set of credentials")
	g.Expect(tc.cache.ConnectedKeys()).To(HaveLen(len(users)), "each Secret is an identity of its own")
	g.Expect(accessReviews()).To(BeNumerically("==", reviewsPerConnection), "the pool server reviewed the access of one connection")
	g.Expect(gauge(connectedMetric)-accessorsBefore).To(Equal(1.0), "%s counts connections", connectedMetric)
	g.Expect(gauge(identitiesMetric)-identitiesBefore).To(Equal(4.0), "%s counts identities", identitiesMetric)
	g.Expect(metricValue(g, creationsMetric, keys[0])).To(HaveValue(Equal(1.0)), "the first identity created the accessor")
	// The cache's metrics name a cluster identity's Secret and context.
	for _, key := range keys[1:] {
		g.Expect(metricValue(g, creationsMetric, key.Connection())).To(BeNil(), "%s joined it", key)
	}
	for _, key := range keys {
		g.Expect(metricValue(g, lastProbeMetric, key.Connection())).NotTo(BeNil(), "%s reports its accessor's probe", key)
	}
	g.Eventually(hostWatches).Should(BeNumerically("==", 1), "the pool server sees one watch of hosts")

	g.Expect(pool.Client.Create(tc.ctx, host(poolNamespace, "host-0"))).To(Succeed())
	g.Eventually(creations.of("host-0", keys...)).WithTimeout(10*time.Second).Should(Equal([]int{1, 1, 1, 1}),
		"every identity's watcher hears of the host")
	g.Consistently(creations.of("host-0", keys...)).WithTimeout(time.Second).Should(Equal([]int{1, 1, 1, 1}), "once")
	g.Expect(hostWatches()).To(BeNumerically("==", 1))

	// An identity joining the running accessor hears of the hosts it
	// already holds, as a new watch would.
	late := newSecret("shared-late")
	tc.hostAccess(t, late)
	g.Expect(tc.cache.Watch(tc.ctx, late.Key, watcher(late.Key))).To(Succeed())
	g.Eventually(creations.of("host-0", late.Key)).WithTimeout(10*time.Second).Should(Equal([]int{1}), "the late identity hears of host-0")
	keys = append(keys, late.Key)
	g.Expect(tc.cache.sharedAccessors()).To(Equal(1))
	g.Expect(accessReviews()).To(BeNumerically("==", reviewsPerConnection), "joining costs the server nothing")
	g.Consistently(creations.of("host-0", keys...)).WithTimeout(time.Second).Should(Equal([]int{1, 1, 1, 1, 1}),
		"only the late identity's watcher hears of host-0 again, once")

	// Rotation of one Secret to another ServiceAccount: that identity moves
	// to an accessor of its own, the others keep theirs and its watch.
	tc.cache.mu.Lock()
	shared := tc.cache.states[keys[0]].accessor
	tc.cache.mu.Unlock()
	rotatedUser := "system:serviceaccount:" + poolNamespace + ":rotated"
	rotated := tenants[1]
	secret := &corev1.Secret{}
	g.Expect(tc.mgmt.Client.Get(tc.ctx, rotated.Key.Secret(), secret)).To(Succeed())
	secret.Data["kubeconfig"] = pool.ServiceAccountKubeconfig(t, poolNamespace, "rotated", time.Hour, testenv.HostProviderRules()...)
	g.Expect(tc.mgmt.Client.Update(tc.ctx, secret)).To(Succeed())
	g.Eventually(func() (string, error) {
		access, err := tc.cache.HostAccess(tc.ctx, rotated)
		if err != nil {
			return "", err
		}
		return whoAmI(tc.ctx, t, access), nil
	}).WithTimeout(20 * time.Second).Should(Equal(rotatedUser))
	g.Expect(tc.cache.Watch(tc.ctx, rotated.Key, watcher(rotated.Key))).To(Succeed())
	g.Expect(tc.cache.sharedAccessors()).To(Equal(2), "the rotated identity has an accessor of its own")
	g.Expect(gauge(connectedMetric) - accessorsBefore).To(Equal(2.0))
	g.Expect(metricValue(g, rotationsMetric, rotated.Key)).To(HaveValue(Equal(1.0)))
	g.Expect(metricValue(g, rotationsMetric, keys[0])).To(BeNil(), "the others were not rotated")
	g.Expect(shared.userKeys()).To(ConsistOf(keys[0], keys[2], viaIdentity.Key.Connection(), late.Key), "the others keep the first")
	g.Eventually(creations.of("host-0", rotated.Key)).WithTimeout(10*time.Second).Should(Equal([]int{2}),
		"the rotated identity hears of host-0 again, from its new accessor's first list")
	for _, id := range []identity.Identity{tenants[0], tenants[2], viaIdentity, late} {
		access := tc.hostAccess(t, id)
		g.Expect(access.(*hostAccess).accessor).To(BeIdenticalTo(shared), "%s keeps its accessor", id.Key)
		g.Expect(whoAmI(tc.ctx, t, access)).To(Equal("system:serviceaccount:" + poolNamespace + ":shared"))
	}
	g.Expect(accessReviews()).To(BeNumerically("==", 2*reviewsPerConnection), "one more connection, reviewed once")
	g.Eventually(hostWatches).Should(BeNumerically("==", 2), "one watch per accessor")

	g.Expect(pool.Client.Create(tc.ctx, host(poolNamespace, "host-1"))).To(Succeed())
	g.Eventually(creations.of("host-1", keys...)).WithTimeout(10*time.Second).Should(Equal([]int{1, 1, 1, 1, 1}),
		"every identity still hears of hosts, the rotated one through its new accessor")
	g.Consistently(creations.of("host-1", keys...)).WithTimeout(time.Second).Should(Equal([]int{1, 1, 1, 1, 1}),
		"the rotated identity's watcher left the shared accessor's watch")

	// Releasing every identity stops both accessors.
	tc.cache.mu.Lock()
	own := tc.cache.states[rotated.Key].accessor
	tc.cache.mu.Unlock()
	for _, key := range keys {
		g.Expect(tc.cache.Release(tc.ctx, key, nil)).To(Succeed())
	}
	g.Expect(tc.cache.ConnectedKeys()).To(BeEmpty())
	g.Expect(tc.cache.sharedAccessors()).To(BeZero())
	g.Expect(gauge(connectedMetric)).To(Equal(accessorsBefore))
	g.Expect(gauge(identitiesMetric)).To(Equal(identitiesBefore))
	g.Expect(metricValue(g, lastProbeMetric, keys[0])).To(BeNil(), "a released identity reports no probe time")
	g.Eventually(goroutinesEnded(shared)).Should(BeClosed(), "the shared accessor stopped with its last identity")
	g.Eventually(goroutinesEnded(own)).Should(BeClosed())
	g.Eventually(hostWatches).WithTimeout(10*time.Second).Should(BeZero(), "no watch is left on the pool server")
	g.Eventually(runtime.NumGoroutine).WithTimeout(15*time.Second).Should(BeNumerically("<=", goroutinesBefore+2),
		"no goroutine of the identities or their watches remains")
	g.Expect(tc.cache.Watch(tc.ctx, keys[0], watcher(keys[0]))).To(MatchError(ContainSubstring("not connected")))
}
