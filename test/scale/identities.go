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

package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// rotationInterval is how often the rotated identity gets a new kubeconfig.
const rotationInterval = 5 * time.Second

// identitiesResult is what many identities cost when they connect at once,
// stop, and rotate their credentials.
type identitiesResult struct {
	Identities, HostsPerIdentity int
	// ConnectAll is the time from asking for every identity at once until
	// each has a usable HostAccess (host cache synced) and its watches.
	ConnectAll time.Duration
	// HeapPerIdentity is the live heap one connected identity adds: its
	// clients, REST mapper, informer and watches, with only a few hosts.
	HeapPerIdentity float64
	// Rotations of one identity's kubeconfig, every rotationInterval.
	Rotations int
	// RotationConverge is the longest time from writing a rotated Secret
	// until HostAccess answers with the new ServiceAccount's credentials
	// (the old one deleted) and lists the hosts.
	RotationConverge time.Duration
	// LoadOps are the reconcile-shaped uses of all identities made during
	// the rotations; LoadErrors those that failed.
	LoadOps, LoadErrors int64
	// MaxWatches is the most watches open at once for one (identity, kind)
	// over the whole run, rotations included.
	MaxWatches int
	// Goroutines before connecting, at most while connected (rotations
	// included), and once every identity is released.
	GoroutinesBaseline, GoroutinesPeak, GoroutinesAfter int
	// Drain is how long the goroutines took to come back (or the wait
	// that gave up).
	Drain time.Duration
}

// runIdentities connects identities at once, each a ServiceAccount allowed
// only its pool namespace, then rotates the first identity's kubeconfig to
// a new ServiceAccount every rotationInterval for rotateFor while every
// identity is in use, and finally releases them all.
func runIdentities(ctx context.Context, t testenv.T, identities int, rotateFor time.Duration) (identitiesResult, error) {
	const hostsPerIdentity = 3
	res := identitiesResult{Identities: identities, HostsPerIdentity: hostsPerIdentity}
	f, err := startTenantFleet(ctx, t, identities, hostsPerIdentity)
	if err != nil {
		return res, err
	}
	if err := f.startManager(); err != nil {
		return res, err
	}
	before := settledHeap()
	res.GoroutinesBaseline = runtime.NumGoroutine()
	peak := sampleGoroutines()

	start := time.Now()
	if err := f.connect(f.ids); err != nil {
		return res, err
	}
	res.ConnectAll = time.Since(start)
	if err := f.waitInitialEvents(); err != nil {
		return res, err
	}
	res.HeapPerIdentity = float64(int64(settledHeap().HeapAlloc)-int64(before.HeapAlloc)) / float64(identities)

	// Rotations, while every identity is used as reconciles use them.
	load := f.startLoad(4)
	res.Rotations, res.RotationConverge, err = f.rotate(rotateFor)
	res.LoadOps, res.LoadErrors = load.stop()
	if err != nil {
		return res, err
	}
	res.GoroutinesPeak = peak()
	res.MaxWatches = f.watches.maxPerKey()

	for _, id := range f.ids {
		if err := f.cache.Release(f.ctx, id.Key, nil); err != nil {
			return res, fmt.Errorf("release %s: %w", id.Key, err)
		}
	}
	if n := len(f.cache.ConnectedKeys()); n != 0 {
		return res, fmt.Errorf("%d identities still connected after releasing all", n)
	}
	res.GoroutinesAfter, res.Drain = drainGoroutines(res.GoroutinesBaseline, 10*time.Second)
	return res, nil
}

// rows are the scenario's figures for the Markdown table, with the targets
// of the issue.
func (r identitiesResult) rows() [][2]string {
	return [][2]string{
		{"identities connecting at once", fmt.Sprintf("%d (%d hosts each)", r.Identities, r.HostsPerIdentity)},
		{"time until all are usable", r.ConnectAll.Round(time.Millisecond).String()},
		{"heap per connected identity", kib(r.HeapPerIdentity)},
		{"max open watches per (identity, kind)", fmt.Sprintf("%d (target ≤ 1)", r.MaxWatches)},
		{"goroutines baseline / peak / after release", fmt.Sprintf("%d / %d / %d (target: after = baseline ± 2; drained in %s)",
			r.GoroutinesBaseline, r.GoroutinesPeak, r.GoroutinesAfter, r.Drain.Round(10*time.Millisecond))},
		{"kubeconfig rotations (new ServiceAccount, old deleted)", fmt.Sprintf("%d, every %s, under load (%d uses, %d failed)",
			r.Rotations, rotationInterval, r.LoadOps, r.LoadErrors)},
		{"rotation to new credentials (max)", r.RotationConverge.Round(time.Millisecond).String()},
	}
}

// rotate gives the first identity a kubeconfig for a new ServiceAccount
// every rotationInterval for rotateFor, deleting the previous one as an
// admin revoking it would, and returns how many rotations were made and the
// longest until HostAccess used the new credentials.
func (f *tenantFleet) rotate(rotateFor time.Duration) (int, time.Duration, error) {
	id, poolNamespace := f.ids[0], f.poolNamespaces[0]
	current := f.serviceAccounts[0]
	var slowest time.Duration
	rotations := 0
	end := time.Now().Add(rotateFor)
	for next := time.Now(); next.Before(end); next = next.Add(rotationInterval) {
		select {
		case <-f.ctx.Done():
			return rotations, slowest, f.ctx.Err()
		case <-time.After(time.Until(next)):
		}
		rotated := fmt.Sprintf("%s-r%d", f.serviceAccounts[0], rotations+1)
		kubeconfig := f.pool.ServiceAccountKubeconfig(f.t, poolNamespace, rotated, time.Hour, testenv.HostProviderRules()...)
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			secret := &corev1.Secret{}
			if err := f.mgmt.Client.Get(f.ctx, id.Key.Secret(), secret); err != nil {
				return err
			}
			secret.Data = map[string][]byte{"kubeconfig": kubeconfig}
			return f.mgmt.Client.Update(f.ctx, secret)
		}); err != nil {
			return rotations, slowest, fmt.Errorf("rotate %s: %w", id.Key, err)
		}
		written := time.Now()
		if err := f.pool.Client.Delete(f.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: poolNamespace, Name: current}}); err != nil {
			return rotations, slowest, fmt.Errorf("delete ServiceAccount %s: %w", current, err)
		}
		want := "system:serviceaccount:" + poolNamespace + ":" + rotated
		if err := pollUntil(f.ctx, 30*time.Second, 20*time.Millisecond, "rotated credentials in use", func() (bool, error) {
			return f.usesCredentials(id, want)
		}); err != nil {
			return rotations, slowest, err
		}
		slowest = max(slowest, time.Since(written))
		current = rotated
		rotations++
	}
	return rotations, slowest, nil
}

// usesCredentials says whether id's HostAccess authenticates as user and
// lists its hosts.
func (f *tenantFleet) usesCredentials(id identity.Identity, user string) (bool, error) {
	access, err := f.cache.HostAccess(f.ctx, id)
	if err != nil {
		return false, err
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := access.Client().Create(f.ctx, review); err != nil {
		return false, err
	}
	if review.Status.UserInfo.Username != user {
		return false, fmt.Errorf("authenticated as %s", review.Status.UserInfo.Username)
	}
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := access.Reader().List(f.ctx, hosts, client.InNamespace(access.Namespace())); err != nil {
		return false, err
	}
	return true, nil
}

// fleetLoad is reconcile-shaped use of every identity in the background.
type fleetLoad struct {
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	ops, errors atomic.Int64
}

// startLoad has workers use the identities in turn, as Metal3Machine
// reconciles do: HostAccess, the watch registration that follows every
// use, a cached list of the hosts and an uncached read of a Secret.
func (f *tenantFleet) startLoad(workers int) *fleetLoad {
	ctx, cancel := context.WithCancel(f.ctx)
	load := &fleetLoad{cancel: cancel}
	for w := range workers {
		load.wg.Go(func() {
			for i := w; ctx.Err() == nil; i += workers {
				err := f.useOnce(ctx, f.ids[i%len(f.ids)])
				if ctx.Err() != nil {
					return
				}
				load.ops.Add(1)
				if err != nil {
					load.errors.Add(1)
				}
				// A few hundred uses a second in all: the two cores are
				// shared with the API servers whose answers are measured.
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	return load
}

func (l *fleetLoad) stop() (ops, errs int64) {
	l.cancel()
	l.wg.Wait()
	return l.ops.Load(), l.errors.Load()
}

func (f *tenantFleet) useOnce(ctx context.Context, id identity.Identity) error {
	access, err := f.cache.HostAccess(ctx, id)
	if err != nil {
		return err
	}
	if err := f.watch(id.Key); err != nil {
		return err
	}
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := access.Client().List(ctx, hosts, client.InNamespace(access.Namespace())); err != nil {
		return err
	}
	if len(hosts.Items) == 0 {
		return errors.New("no hosts listed")
	}
	secret := &corev1.Secret{}
	err = access.Client().Get(ctx, client.ObjectKey{Namespace: access.Namespace(), Name: hosts.Items[0].Name + "-user-data"}, secret)
	return client.IgnoreNotFound(err)
}

// sampleGoroutines samples the goroutine count until the returned function
// is called, which returns the highest count seen (the sampler excluded).
func sampleGoroutines() (peak func() int) {
	var highest atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(5 * time.Millisecond)
		defer ticker.Stop()
		for {
			if n := int64(runtime.NumGoroutine() - 1); n > highest.Load() {
				highest.Store(n)
			}
			select {
			case <-stop:
				return
			case <-ticker.C:
			}
		}
	}()
	return func() int {
		close(stop)
		<-done
		return int(highest.Load())
	}
}

// drainGoroutines waits up to limit for the goroutine count to come back
// within 2 of baseline (goroutines end asynchronously after their
// context), and returns the count it settled at and how long it took.
func drainGoroutines(baseline int, limit time.Duration) (int, time.Duration) {
	start := time.Now()
	for {
		n := runtime.NumGoroutine()
		if n <= baseline+2 || time.Since(start) > limit {
			return n, time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// flowPoll is how often the flow scenario looks at the objects it waits on.
const flowPoll = 200 * time.Millisecond

// pollUntil calls done every interval until it reports true, or fails with
// its last error once timeout has passed.
func pollUntil(ctx context.Context, timeout, interval time.Duration, what string, done func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := done()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("not yet")
			}
			return fmt.Errorf("waiting %s for %s: %w", timeout, what, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// ignoreExists makes creating what a previous step created harmless.
func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// tenantFleet is a management API server holding one identity Secret per
// tenant, a pool API server holding each tenant's hosts in a namespace of
// its own, and, once started, a manager running the IdentityCache with the
// host watches of the Metal3Machine and Metal3Remediation controllers.
type tenantFleet struct {
	t   testenv.T
	ctx context.Context //nolint:containedctx // the scenario's lifetime, which every step shares

	mgmt, pool *testenv.Env
	scheme     *k8sruntime.Scheme
	// ids[i] is the tenant whose hosts are in poolNamespaces[i], reached as
	// serviceAccounts[i] (until rotated).
	ids                             []identity.Identity
	poolNamespaces, serviceAccounts []string
	hosts                           int

	mgr      manager.Manager
	cache    *hostaccess.IdentityCache
	watchers []hostaccess.Watcher
	watches  *watchCounter
	// events counts the host events the watchers' handlers received.
	events atomic.Int64
}

// startTenantFleet starts both API servers and creates the tenants, each
// with hostsPerIdentity hosts as the Bare Metal Operator leaves them after
// inspection. The servers stop with t.
func startTenantFleet(ctx context.Context, t testenv.T, identities, hostsPerIdentity int) (*tenantFleet, error) {
	scheme := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme, bmov1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	f := &tenantFleet{t: t, ctx: ctx, scheme: scheme, watches: newWatchCounter()}
	f.mgmt = testenv.Start(t, testenv.Options{Scheme: scheme})
	f.pool = testenv.Start(t, testenv.Options{Scheme: scheme, CRDDirectoryPaths: []string{testenv.BMOCRDPath(t)}})
	for i := range identities {
		poolNamespace, serviceAccount, tenant := fmt.Sprintf("pool-%02d", i), fmt.Sprintf("capm3-%02d", i), fmt.Sprintf("tenant-%02d", i)
		// What a pool admin hands a tenant: a token of a ServiceAccount
		// allowed only the provider's verbs in the tenant's pool namespace.
		kubeconfig := f.pool.ServiceAccountKubeconfig(t, poolNamespace, serviceAccount, time.Hour, testenv.HostProviderRules()...)
		if err := f.addTenant(ctx, tenant, poolNamespace, serviceAccount, kubeconfig); err != nil {
			return nil, err
		}
	}
	if err := createInspectedHosts(ctx, f.pool.Client, f.poolNamespaces, hostsPerIdentity); err != nil {
		return nil, err
	}
	f.hosts = identities * hostsPerIdentity
	return f, nil
}

// startManager runs a manager on the management server with the
// IdentityCache, configured as main.go configures them, and the two
// controllers that watch hosts through identities. It stops with t.
func (f *tenantFleet) startManager() error {
	mgr, err := ctrl.NewManager(f.mgmt.Config, ctrl.Options{
		Scheme: f.scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	})
	if err != nil {
		return err
	}
	cache, err := hostaccess.NewIdentityCache(hostaccess.Options{
		SecretReader: mgr.GetAPIReader(), ManagementCache: mgr.GetCache(), InClusterClient: mgr.GetClient(), Scheme: f.scheme,
		WrapTransport: f.watches.wrap,
		// envtest's API servers listen on loopback.
		Policy: kubeguard.ServerPolicy{AllowLoopback: true},
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(cache); err != nil {
		return err
	}
	// Stand-ins for the Metal3Machine and Metal3Remediation controllers:
	// their host watches, mapping hosts to nothing (none is consumed).
	for _, name := range []string{"metal3machine", "metal3remediation"} {
		c, err := controller.New(name, mgr, controller.Options{
			Reconciler:         reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil }),
			SkipNameValidation: ptr.To(true),
		})
		if err != nil {
			return err
		}
		f.watchers = append(f.watchers, hostaccess.NewWatcher(hostaccess.WatcherOptions{
			Name: name + "-hosts", Watcher: c, Kind: &bmov1alpha1.BareMetalHost{},
			EventHandler: handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
				f.events.Add(1)
				return nil
			}),
		}))
	}

	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	f.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			f.t.Errorf("manager: %v", err)
		}
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return errors.New("management cache did not sync")
	}
	f.mgr, f.cache, f.ctx = mgr, cache, ctx
	// The cache's informer on identity Secrets' metadata belongs to the
	// idle baseline: start it before anything is measured.
	return pollUntil(ctx, 30*time.Second, 20*time.Millisecond, "identity Secret metadata", func() (bool, error) {
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		err := cache.SecretMetadata().Get(ctx, f.ids[0].Key.Secret(), meta)
		return err == nil, err
	})
}

// watch registers the controllers' host watches for key, as each of them
// does after every successful HostAccess.
func (f *tenantFleet) watch(key identity.Key) error {
	for _, w := range f.watchers {
		if err := f.cache.Watch(f.ctx, key, w); err != nil {
			return err
		}
	}
	return nil
}

// waitInitialEvents waits until every watch has delivered every host it
// holds: the watches are then as idle as they get.
func (f *tenantFleet) waitInitialEvents() error {
	want := int64(f.hosts * len(f.watchers))
	return pollUntil(f.ctx, 2*time.Minute, 20*time.Millisecond, "initial host events", func() (bool, error) {
		return f.events.Load() >= want, nil
	})
}

// addTenant gives the fleet a tenant namespace holding an identity Secret
// with kubeconfig, for the ServiceAccount serviceAccount of poolNamespace.
func (f *tenantFleet) addTenant(ctx context.Context, tenant, poolNamespace, serviceAccount string, kubeconfig []byte) error {
	if err := ignoreExists(f.mgmt.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}})); err != nil {
		return err
	}
	secret := testenv.IdentitySecret(tenant, "pool-kubeconfig", kubeconfig)
	if err := f.mgmt.Client.Create(ctx, secret); err != nil {
		return fmt.Errorf("identity Secret of %s: %w", tenant, err)
	}
	f.ids = append(f.ids, identity.Identity{
		Key:             identity.Key{SecretNamespace: tenant, SecretName: secret.Name},
		ObjectNamespace: tenant,
	})
	f.poolNamespaces = append(f.poolNamespaces, poolNamespace)
	f.serviceAccounts = append(f.serviceAccounts, serviceAccount)
	return nil
}
