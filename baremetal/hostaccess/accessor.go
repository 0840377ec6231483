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
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
)

// accessNeed is one resource the provider acts on in the hosts' namespace.
type accessNeed struct {
	group, resource string
	verbs           []string
}

// requiredAccess is what the provider does in the hosts' namespace, in each
// host mode. An identity lacking any of it is reported Forbidden before
// anything is provisioned, rather than failing half-way through. In
// HostClaim mode nothing of BareMetalHosts is needed: that is the point.
var requiredAccess = map[infrav1.HostMode][]accessNeed{
	infrav1.HostModeBareMetalHost: {
		{group: bmov1alpha1.GroupVersion.Group, resource: "baremetalhosts", verbs: []string{"get", "list", "watch", "update", "patch"}},
		{group: "", resource: "secrets", verbs: []string{"get", "create", "update", "delete"}},
	},
	infrav1.HostModeHostClaim: {
		{group: bmov1alpha1.GroupVersion.Group, resource: "hostclaims", verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{group: bmov1alpha1.GroupVersion.Group, resource: "hardwaredata", verbs: []string{"get", "list", "watch"}},
		{group: "", resource: "secrets", verbs: []string{"get", "create", "update", "delete"}},
	},
}

// cachedKinds are the kinds each host mode reads through the cache: their
// informers start when an identity is first used in that mode.
var cachedKinds = map[infrav1.HostMode][]client.Object{
	infrav1.HostModeBareMetalHost: {&bmov1alpha1.BareMetalHost{}},
	infrav1.HostModeHostClaim:     {&bmov1alpha1.HostClaim{}, &bmov1alpha1.HardwareData{}},
}

// accessor is one connection to the hosts of a set of credentials: its
// clients, its namespace-scoped informer cache of hosts, and the probe
// watching its API server, shared by every identity holding those
// credentials (shared.go).
type accessor struct {
	// key is the identity that connected the accessor: the errors of
	// connecting, preparing and probing name it, and are turned into each
	// other identity's own (identity.Error.For) where they reach it.
	key identity.Key
	// fingerprint names the credentials (credentialFingerprint).
	fingerprint string
	namespace   string
	client      client.Client
	reader      client.Reader
	cache       cache.Cache
	// endpoint is the server as kubeguard let it through: the client every
	// request goes through, over connections of this accessor alone, and
	// its Server, which names it in messages.
	endpoint *kubeguard.Endpoint
	owner    *IdentityCache
	// budget bounds what the informers of cache hold (budget.go);
	// overBudget is why it tripped, once it has.
	budget     *cacheBudget
	overBudget atomic.Pointer[identity.Error]

	// users are the identities the accessor serves, and watches the
	// controllers' watches started on cache, by watcher name, each
	// dispatching to the watchers of the identities that registered it
	// (watches.go).
	usersMu sync.Mutex
	users   map[identity.Key]bool
	watches map[string]*dispatch
	// lastProbe is the Unix time of the last successful handshake or probe.
	lastProbe atomic.Int64

	// modes are the host modes the accessor is ready for (prepare), the
	// last refusal of each other mode, retried after its time, and the
	// preparations under way, each closed when it ends.
	modesMu   sync.Mutex
	modes     map[infrav1.HostMode]bool
	modeFails map[infrav1.HostMode]modeFailure
	preparing map[infrav1.HostMode]chan struct{}
	direct    client.Client

	// ctx is the accessor's lifetime, which stop ends: its informers, its
	// probe and its preparations run in it.
	ctx    context.Context //nolint:containedctx // the accessor's lifetime, parent of its goroutines
	cancel context.CancelFunc
	// running counts the accessor's goroutines; stop waits for all of them.
	running  sync.WaitGroup
	stopOnce sync.Once
}

// hostAccess is the accessor as key's callers use it: its clients, and key
// for conditions and logs.
func (a *accessor) hostAccess(key identity.Key) HostAccess {
	return &hostAccess{key: key, namespace: a.namespace, client: a.client, reader: a.reader, accessor: a}
}

// modeFailure is why an accessor could not be made ready for a mode, and
// until when that answer stands.
type modeFailure struct {
	err   error
	until time.Time
}

// prepare makes the accessor ready for mode, once, for a caller that waits
// until deadline at most. The preparation (prepareMode) runs on a
// goroutine of the accessor, once for all its callers: a caller that gives
// up before it ends gets the previous refusal of mode if there was one,
// else reason Connecting, and the accessor's users are told when it ends.
func (a *accessor) prepare(ctx context.Context, mode infrav1.HostMode, deadline time.Time) error {
	mode = mode.OrDefault()
	for {
		a.modesMu.Lock()
		if a.modes[mode] {
			a.modesMu.Unlock()
			return nil
		}
		failed, hasFailed := a.modeFails[mode]
		if hasFailed && time.Now().Before(failed.until) {
			a.modesMu.Unlock()
			return failed.err
		}
		done, preparing := a.preparing[mode]
		if !preparing {
			if a.ctx.Err() != nil {
				a.modesMu.Unlock()
				// Stopped since the caller got it: the next use reconnects.
				return identity.NewError(a.key, infrav1.IdentityConnectingReason, false, nil,
					"the connection to %s was just closed; retried", a.endpoint.Server.Display)
			}
			done = make(chan struct{})
			a.preparing[mode] = done
			a.running.Go(func() { a.prepareInBackground(mode, done) })
		}
		a.modesMu.Unlock()
		if err := kubeguard.AwaitConnect(ctx, done, deadline); err != nil {
			if errors.Is(err, kubeguard.ErrStillConnecting) && hasFailed {
				// The last verdict stands until the preparation under way
				// gives another.
				return failed.err
			}
			return a.stillPreparing(mode, err)
		}
	}
}

// stillPreparing is the error of a caller that stopped waiting for the
// preparation of mode: why it stopped.
func (a *accessor) stillPreparing(mode infrav1.HostMode, waitErr error) error {
	if !errors.Is(waitErr, kubeguard.ErrStillConnecting) {
		return waitErr
	}
	return identity.NewError(a.key, infrav1.IdentityConnectingReason, false, nil,
		"%s in namespace %s of %s are being checked and listed, which takes longer than %s; retried once done",
		modeKinds(mode), a.namespace, a.endpoint.Server.Display, a.owner.opts.ConnectWait)
}

// prepareInBackground prepares mode on a goroutine of the accessor for the
// callers of prepare, who wait for done. The accessor's users are told when
// it ends, for the callers that stopped waiting: it happens once per mode.
func (a *accessor) prepareInBackground(mode infrav1.HostMode, done chan struct{}) {
	_ = a.prepareMode(a.ctx, mode)
	a.modesMu.Lock()
	delete(a.preparing, mode)
	close(done)
	a.modesMu.Unlock()
	if a.ctx.Err() == nil {
		for _, key := range a.userKeys() {
			a.owner.routes.notify(key.Secret())
		}
	}
}

// prepareMode makes the accessor ready for mode within ctx: the identity
// must be allowed what the mode needs, and the mode's kinds must be listed
// into the cache, within the connect timeout. A refusal stands for
// MinBackoff, so a busy controller does not ask the server again at every
// reconcile.
func (a *accessor) prepareMode(ctx context.Context, mode infrav1.HostMode) error {
	err := a.prepareNow(ctx, mode)
	a.modesMu.Lock()
	defer a.modesMu.Unlock()
	if err != nil {
		a.modeFails[mode] = modeFailure{err: err, until: time.Now().Add(a.owner.opts.MinBackoff)}
		return err
	}
	delete(a.modeFails, mode)
	a.modes[mode] = true
	return nil
}

func (a *accessor) prepareNow(ctx context.Context, mode infrav1.HostMode) error {
	ctx, cancel := context.WithTimeout(ctx, a.owner.opts.ConnectTimeout)
	defer cancel()
	if err := checkAccess(ctx, a.key, a.endpoint.Server, a.direct, a.namespace, mode); err != nil {
		return err
	}
	// These are the only kinds the cache holds (nothing else is read
	// through it): each is accounted in the accessor's budget.
	for _, kind := range cachedKinds[mode] {
		informer, err := a.cache.GetInformer(ctx, kind)
		if err != nil {
			if ctx.Err() == nil {
				return classify(a.key, a.endpoint.Server.Display, err)
			}
			continue
		}
		if _, err := informer.AddEventHandler(a.budget.deletions()); err != nil {
			return classify(a.key, a.endpoint.Server.Display, err)
		}
	}
	// The cache may not have started yet, in which case GetInformer did
	// not wait for the listing.
	synced := ctx.Err() == nil && a.cache.WaitForCacheSync(ctx)
	if over := a.overBudget.Load(); over != nil {
		return over
	}
	if !synced {
		return identity.NewError(a.key, infrav1.IdentityUnreachableReason, false, nil,
			"%s in namespace %s of %s could not be listed within %s",
			modeKinds(mode), a.namespace, a.endpoint.Server.Display, a.owner.opts.ConnectTimeout)
	}
	return nil
}

// tripBudget disconnects the accessor, for every identity it serves,
// because its informers hold more than the budget allows.
func (a *accessor) tripBudget(problem string) {
	ie := identity.NewError(a.key, infrav1.IdentityLimitExceededReason, false, nil,
		"namespace %s of %s holds more than the provider caches for one set of credentials, %s: disconnected, and retried in %s",
		a.namespace, a.endpoint.Server.Display, problem, a.owner.opts.MaxBackoff)
	a.overBudget.Store(ie)
	// disconnect stops the accessor, and so the informer calling us.
	go a.owner.disconnect(a, ie)
}

// modeKinds names, for messages, what mode lists.
func modeKinds(mode infrav1.HostMode) string {
	if mode == infrav1.HostModeHostClaim {
		return "HostClaims and HardwareData"
	}
	return "BareMetalHosts"
}

// connect builds and starts an accessor, or says why the identity cannot be
// used: the server must pass kubeguard (kubeconfig.Connect: its guarded
// client and discovery handshake), grant every permission the provider
// needs in mode, and list what mode reads (the hosts, or the HostClaims),
// all within the connect timeout. It runs on a goroutine of the cache
// (IdentityCache.attempt), never a caller's: parent is the cache's
// lifetime. Every connection it makes is judged by the server policy when
// dialled.
func connect(parent context.Context, owner *IdentityCache, key identity.Key, kubeconfig *kubeguard.Kubeconfig, namespace, fingerprint string,
	mode infrav1.HostMode,
) (*accessor, error) {
	opts := owner.opts
	connectCtx, cancelConnect := context.WithTimeout(parent, opts.ConnectTimeout)
	defer cancelConnect()
	endpoint, err := kubeconfig.Connect(connectCtx, opts.clientOptions())
	if err != nil {
		return nil, classify(key, "", err)
	}
	srv, cfg, httpClient := endpoint.Server, endpoint.Config, endpoint.HTTPClient
	connected := false
	defer func() {
		if !connected {
			// Nothing of a failed attempt uses its connections any longer.
			endpoint.Close()
		}
	}()

	mapper, err := newRESTMapper(key, srv, cfg, httpClient)
	if err != nil {
		return nil, classify(key, srv.Display, err)
	}
	direct, err := client.New(cfg, client.Options{HTTPClient: httpClient, Scheme: opts.Scheme, Mapper: mapper})
	if err != nil {
		return nil, classify(key, srv.Display, err)
	}
	// What the cache holds is counted against the accessor's budget as it
	// arrives (budget.go); the accessor is made below, once connected.
	var acc *accessor
	budget := newCacheBudget(opts.MaxCachedObjects, opts.MaxCachedBytes, func(problem string) { acc.tripBudget(problem) })
	hostCache, err := cache.New(cfg, cache.Options{
		HTTPClient:        httpClient,
		Scheme:            opts.Scheme,
		Mapper:            mapper,
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		// Hosts keep only what the provider reads; other kinds lose their
		// managedFields, which it never reads.
		DefaultTransform: budget.transform(cache.TransformStripManagedFields()),
		ByObject:         map[client.Object]cache.ByObject{&bmov1alpha1.BareMetalHost{}: {Transform: budget.transform(TransformHost())}},
	})
	if err != nil {
		return nil, classify(key, srv.Display, err)
	}
	cached, err := client.New(cfg, client.Options{
		HTTPClient: httpClient, Scheme: opts.Scheme, Mapper: mapper,
		// Secrets hold user data and credentials: never cached.
		Cache: &client.CacheOptions{Reader: hostCache, DisableFor: []client.Object{&corev1.Secret{}}},
	})
	if err != nil {
		return nil, classify(key, srv.Display, err)
	}

	ctx, cancel := context.WithCancel(parent)
	acc = &accessor{
		key: key, fingerprint: fingerprint, namespace: namespace, client: cached, reader: direct, direct: direct, cache: hostCache,
		endpoint: endpoint, owner: owner, ctx: ctx, cancel: cancel, budget: budget,
		users: map[identity.Key]bool{}, watches: map[string]*dispatch{},
		modes: map[infrav1.HostMode]bool{}, modeFails: map[infrav1.HostMode]modeFailure{}, preparing: map[infrav1.HostMode]chan struct{}{},
	}
	acc.lastProbe.Store(time.Now().Unix())
	acc.running.Go(func() { _ = hostCache.Start(ctx) })
	// The first user's mode is made ready now: an identity that cannot
	// serve it does not count as connected.
	if err := acc.prepareMode(connectCtx, mode); err != nil {
		acc.stop()
		return nil, err
	}
	acc.running.Go(func() { acc.probeLoop(ctx) })
	connected = true
	return acc, nil
}

// stop ends the accessor's informers, with the watches on them, its probe
// and its preparations, waits until they are gone, and closes its
// connections. ctx ends under modesMu, where prepare starts preparations
// only in a live ctx: none starts once running is waited for.
func (a *accessor) stop() {
	a.stopOnce.Do(func() {
		a.modesMu.Lock()
		a.cancel()
		a.modesMu.Unlock()
		a.running.Wait()
		a.endpoint.Close()
	})
}

// probeLoop checks the API server every ProbeInterval. FailureThreshold
// failures in a row, or credentials the server rejects, disconnect it for
// every identity it serves; their users are told and the next use
// reconnects after backoff.
func (a *accessor) probeLoop(ctx context.Context) {
	opts := a.owner.opts
	ticker := time.NewTicker(opts.ProbeInterval)
	defer ticker.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		err := a.probeOnce(ctx, opts.ProbeTimeout)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			failures = 0
			a.probed(true)
			continue
		}
		a.probed(false)
		failures++
		ie := classify(a.key, a.endpoint.Server.Display, err)
		if failures >= opts.FailureThreshold || ie.Reason == infrav1.IdentityUnauthorizedReason {
			// disconnect stops this accessor and waits for this goroutine,
			// so it runs on its own.
			go a.owner.disconnect(a, ie)
			return
		}
	}
}

// probed records a probe's outcome for every identity the accessor serves,
// under usersMu so that none is recorded for an identity that has left.
func (a *accessor) probed(ok bool) {
	a.usersMu.Lock()
	defer a.usersMu.Unlock()
	if ok {
		a.lastProbe.Store(time.Now().Unix())
	}
	for key := range a.users {
		if ok {
			recordProbeSuccess(key, a.lastProbe.Load())
		} else {
			recordProbeFailure(key)
		}
	}
}

// probeOnce repeats the discovery handshake: every authenticated user may
// list the API versions, so success means reachable, still an API server,
// and credentials accepted.
func (a *accessor) probeOnce(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return a.endpoint.Probe(ctx)
}

// checkAccess asks the API server, one SelfSubjectAccessReview per verb,
// whether the identity may do what the provider needs in namespace.
func checkAccess(ctx context.Context, key identity.Key, srv kubeguard.Server, c client.Client, namespace string, mode infrav1.HostMode) error {
	var missing []string
	for _, need := range requiredAccess[mode] {
		for _, verb := range need.verbs {
			review := &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{
					ResourceAttributes: &authorizationv1.ResourceAttributes{
						Namespace: namespace, Verb: verb, Group: need.group, Resource: need.resource,
					},
				},
			}
			if err := c.Create(ctx, review); err != nil {
				return classify(key, srv.Display, err)
			}
			if !review.Status.Allowed {
				resource := need.resource
				if need.group != "" {
					resource += "." + need.group
				}
				missing = append(missing, verb+" "+resource)
			}
		}
	}
	if len(missing) > 0 {
		return identity.NewError(key, infrav1.IdentityForbiddenReason, false, nil,
			"not allowed to %s in namespace %s (needed in %s mode)", strings.Join(missing, ", "), namespace, mode)
	}
	return nil
}
