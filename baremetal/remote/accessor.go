package remote

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
)

// requiredAccess is what the provider does with hosts and their Secrets in
// the hosts' namespace. An identity lacking any of it is reported Forbidden
// before anything is provisioned, rather than failing half-way through.
var requiredAccess = []struct {
	group, resource string
	verbs           []string
}{
	{group: bmov1alpha1.GroupVersion.Group, resource: "baremetalhosts", verbs: []string{"get", "list", "watch", "update", "patch"}},
	{group: "", resource: "secrets", verbs: []string{"get", "create", "update", "delete"}},
}

// accessor is one connected identity: its clients, its namespace-scoped
// informer cache of BareMetalHosts, and the probe watching its API server.
type accessor struct {
	key       IdentityKey
	namespace string
	host      string
	client    client.Client
	reader    client.Reader
	cache     cache.Cache
	probe     *rest.RESTClient
	owner     *Cache

	cancel context.CancelFunc
	// running counts the accessor's goroutines; stop waits for all of them.
	running  sync.WaitGroup
	done     chan struct{}
	stopOnce sync.Once
}

func (a *accessor) hostAccess() HostAccess {
	return &hostAccess{key: a.key, namespace: a.namespace, client: a.client, reader: a.reader}
}

// connect builds and starts an accessor, or says why the identity cannot be
// used: the API server must answer, grant every permission the provider
// needs, and list the hosts within the connect timeout.
func connect(parent context.Context, owner *Cache, key IdentityKey, base *rest.Config, namespace string) (*accessor, error) {
	opts := owner.opts
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	if opts.UserAgent != "" {
		cfg.UserAgent = opts.UserAgent
	}
	if opts.WrapTransport != nil {
		cfg.Wrap(opts.WrapTransport)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, newIdentityError(key, infrav1.IdentityInvalidKubeconfigReason, true, err, "cannot build an HTTP client: %v", err)
	}

	probeConfig := rest.CopyConfig(cfg)
	probeConfig.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	probe, err := rest.UnversionedRESTClientForConfigAndClient(probeConfig, httpClient)
	if err != nil {
		return nil, newIdentityError(key, infrav1.IdentityInvalidKubeconfigReason, true, err, "cannot build a client: %v", err)
	}
	connectCtx, cancelConnect := context.WithTimeout(parent, opts.ConnectTimeout)
	defer cancelConnect()
	if err := probeOnce(connectCtx, probe, opts.ConnectTimeout); err != nil {
		return nil, classify(key, cfg.Host, err)
	}

	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, classify(key, cfg.Host, err)
	}
	direct, err := client.New(cfg, client.Options{HTTPClient: httpClient, Scheme: opts.Scheme, Mapper: mapper})
	if err != nil {
		return nil, classify(key, cfg.Host, err)
	}
	if err := checkAccess(connectCtx, key, direct, namespace); err != nil {
		return nil, err
	}

	hostCache, err := cache.New(cfg, cache.Options{
		HTTPClient:        httpClient,
		Scheme:            opts.Scheme,
		Mapper:            mapper,
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		// managedFields are large and never read by the provider.
		DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, classify(key, cfg.Host, err)
	}
	cached, err := client.New(cfg, client.Options{
		HTTPClient: httpClient, Scheme: opts.Scheme, Mapper: mapper,
		// Secrets hold user data and credentials: never cached.
		Cache: &client.CacheOptions{Reader: hostCache, DisableFor: []client.Object{&corev1.Secret{}}},
	})
	if err != nil {
		return nil, classify(key, cfg.Host, err)
	}

	ctx, cancel := context.WithCancel(parent)
	acc := &accessor{
		key: key, namespace: namespace, host: cfg.Host, client: cached, reader: direct, cache: hostCache, probe: probe,
		owner: owner, cancel: cancel, done: make(chan struct{}),
	}
	informer, err := hostCache.GetInformer(ctx, &bmov1alpha1.BareMetalHost{})
	if err != nil {
		cancel()
		return nil, classify(key, cfg.Host, err)
	}
	acc.running.Go(func() { _ = hostCache.Start(ctx) })
	if !hostCache.WaitForCacheSync(connectCtx) {
		acc.stop()
		return nil, newIdentityError(key, infrav1.IdentityUnreachableReason, false, nil,
			"BareMetalHosts in namespace %s of %s could not be listed within %s", namespace, cfg.Host, opts.ConnectTimeout)
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    acc.hostChanged,
		UpdateFunc: func(_, obj any) { acc.hostChanged(obj) },
		DeleteFunc: acc.hostChanged,
	}); err != nil {
		acc.stop()
		return nil, classify(key, cfg.Host, err)
	}
	acc.running.Go(func() { acc.probeLoop(ctx) })
	return acc, nil
}

// stop ends the accessor's informers and probe and waits until they are gone.
func (a *accessor) stop() {
	a.stopOnce.Do(func() {
		a.cancel()
		a.running.Wait()
		close(a.done)
	})
}

// stopped reports whether stop has completed.
func (a *accessor) stopped() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// hostChanged forwards a host event to the Metal3Machine that consumes it,
// if that machine uses this accessor's identity.
func (a *accessor) hostChanged(obj any) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	host, ok := obj.(*bmov1alpha1.BareMetalHost)
	if !ok {
		return
	}
	if req, ok := a.owner.MachineForHost(a.key, host); ok {
		a.owner.sendHostEvent(req)
	}
}

// probeLoop checks the API server every ProbeInterval. FailureThreshold
// failures in a row, or credentials the server rejects, disconnect the
// identity; its users are told and the next use reconnects after backoff.
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
		err := probeOnce(ctx, a.probe, opts.ProbeTimeout)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			failures = 0
			recordProbeSuccess(a.key)
			continue
		}
		recordProbeFailure(a.key)
		failures++
		ie := classify(a.key, a.host, err)
		if failures >= opts.FailureThreshold || ie.Reason == infrav1.IdentityUnauthorizedReason {
			// disconnect stops this accessor and waits for this goroutine,
			// so it runs on its own.
			go a.owner.disconnect(a, ie)
			return
		}
	}
}

// probeOnce asks for the API group list: every authenticated user may, so
// success means reachable and credentials accepted.
func probeOnce(ctx context.Context, probe *rest.RESTClient, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return probe.Get().AbsPath("/api").Do(ctx).Error()
}

// checkAccess asks the API server, one SelfSubjectAccessReview per verb,
// whether the identity may do what the provider needs in namespace.
func checkAccess(ctx context.Context, key IdentityKey, c client.Client, namespace string) error {
	var missing []string
	for _, need := range requiredAccess {
		for _, verb := range need.verbs {
			review := &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{
					ResourceAttributes: &authorizationv1.ResourceAttributes{
						Namespace: namespace, Verb: verb, Group: need.group, Resource: need.resource,
					},
				},
			}
			if err := c.Create(ctx, review); err != nil {
				return classify(key, "", err)
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
		return newIdentityError(key, infrav1.IdentityForbiddenReason, false, nil,
			"not allowed to %s in namespace %s", strings.Join(missing, ", "), namespace)
	}
	return nil
}

// classify turns a failed request into the identity condition it means.
func classify(key IdentityKey, host string, err error) *IdentityError {
	if ie, ok := AsIdentityError(err); ok {
		return ie
	}
	where := "the API server"
	if host != "" {
		where = fmt.Sprintf("the API server at %s", host)
	}
	switch {
	case apierrors.IsUnauthorized(err):
		return newIdentityError(key, infrav1.IdentityUnauthorizedReason, false, err, "%s rejects the credentials: %v", where, err)
	case apierrors.IsForbidden(err):
		return newIdentityError(key, infrav1.IdentityForbiddenReason, false, err, "%s forbids a request: %v", where, err)
	default:
		return newIdentityError(key, infrav1.IdentityUnreachableReason, false, err, "cannot reach %s: %v", where, err)
	}
}
