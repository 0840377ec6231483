package hostaccess

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// userKinds are the kinds that use identities; each gets an event source.
var userKinds = []string{"Metal3Cluster", "Metal3Machine"}

// userRef names one object using an identity.
type userRef struct {
	kind string
	types.NamespacedName
}

// keyState is what the Cache knows of one identity.
type keyState struct {
	// secretVersion is the resourceVersion of the Secret last parsed.
	secretVersion string
	hash          string
	namespace     string
	// accessor is nil while disconnected.
	accessor *accessor
	// lastErr is why the identity is not usable, while accessor is nil.
	lastErr *identity.Error
	// retryAt is when the next connection attempt may be made.
	retryAt  time.Time
	failures int
}

// Cache hands out HostAccesses, one shared accessor per identity, modelled on
// CAPI's ClusterCache: identities connect lazily on first use, are probed,
// disconnect after repeated failures and reconnect with backoff. It is a
// manager Runnable: Start runs it and stopping the manager stops every accessor.
type Cache struct {
	opts Options

	mu sync.Mutex
	// ctx is the lifetime of the Cache (Start's context): accessors outlive
	// the reconcile that connected them and end with the manager.
	ctx    context.Context //nolint:containedctx // the runnable's lifetime, parent of every accessor
	states map[identity.Key]*keyState
	users  map[userRef]identity.Key
	// events carries, per user kind, the requests of the Cache's sources.
	events map[string]chan event.GenericEvent
	// connecting serialises connection attempts per key without holding mu.
	connecting map[identity.Key]*sync.Mutex
}

// New returns a Cache; add it to the manager with mgr.Add.
func New(opts Options) (*Cache, error) {
	if opts.SecretReader == nil || opts.ManagementCache == nil || opts.InClusterClient == nil || opts.Scheme == nil {
		return nil, errors.New("remote.Cache needs SecretReader, ManagementCache, InClusterClient and Scheme")
	}
	opts.setDefaults()
	if opts.InClusterReader == nil {
		opts.InClusterReader = opts.SecretReader
	}
	c := &Cache{
		opts:       opts,
		states:     map[identity.Key]*keyState{},
		users:      map[userRef]identity.Key{},
		events:     map[string]chan event.GenericEvent{},
		connecting: map[identity.Key]*sync.Mutex{},
	}
	for _, kind := range userKinds {
		c.events[kind] = make(chan event.GenericEvent, 1024)
	}
	return c, nil
}

// Start watches identity Secrets and runs until ctx ends, then stops every accessor.
func (c *Cache) Start(ctx context.Context) error {
	informer, err := c.opts.ManagementCache.GetInformer(ctx, secretMetadata())
	if err != nil {
		return fmt.Errorf("watch identity Secrets: %w", err)
	}
	registration, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		// A Secret created after its users wakes them too: they were
		// waiting with SecretNotFound.
		AddFunc:    c.secretChanged,
		UpdateFunc: func(_, obj any) { c.secretChanged(obj) },
		DeleteFunc: c.secretChanged,
	})
	if err != nil {
		return fmt.Errorf("watch identity Secrets: %w", err)
	}
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()

	<-ctx.Done()
	_ = informer.RemoveEventHandler(registration)
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, state := range c.states {
		c.disconnectLocked(key, state)
	}
	return nil
}

// NeedLeaderElection: remote watches only feed controllers, which run on the leader.
func (c *Cache) NeedLeaderElection() bool { return true }

// Source delivers, for the controller of kind ("Metal3Cluster" or
// "Metal3Machine"), the requests the Cache raises: objects of that kind
// whose identity connected or disconnected, and, for Metal3Machines, the
// machine named by a remote BareMetalHost's consumerRef when the host changes.
func (c *Cache) Source(kind string) source.Source {
	return source.Channel(c.events[kind], &handler.EnqueueRequestForObject{})
}

// HostAccess returns access to the hosts of identity for user, registering
// user as one of the identity's users: an identity nobody uses any longer is
// stopped. The error is an *identity.Error when the identity cannot be used.
func (c *Cache) HostAccess(ctx context.Context, user client.Object, id identity.Identity) (HostAccess, error) {
	key := id.Key
	c.use(userRefFor(user), key)
	if key.IsInCluster() {
		return &hostAccess{key: key, namespace: id.ObjectNamespace, client: c.opts.InClusterClient, reader: c.opts.InClusterReader}, nil
	}
	return c.remoteAccess(ctx, id)
}

// CheckIdentity reports whether identity is usable, connecting it if need
// be, without registering a user. It is HostAccess for status reporting.
func (c *Cache) CheckIdentity(ctx context.Context, id identity.Identity) error {
	if id.Key.IsInCluster() {
		return nil
	}
	_, err := c.remoteAccess(ctx, id)
	return err
}

// Release forgets user, stopping its identity if nobody else uses it.
// Controllers call it when their object is deleted.
func (c *Cache) Release(user client.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ref := userRefFor(user)
	key, ok := c.users[ref]
	if !ok {
		return
	}
	delete(c.users, ref)
	c.stopIfUnusedLocked(key)
}

// UserKey returns the identity an object used when last reconciled.
func (c *Cache) UserKey(kind string, name types.NamespacedName) (identity.Key, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key, ok := c.users[userRef{kind: kind, NamespacedName: name}]
	return key, ok
}

// MachineForHost maps a BareMetalHost seen through key to the Metal3Machine
// named by its consumerRef, but only if that machine uses key: a host never
// triggers another tenant's objects, even one with the same name.
func (c *Cache) MachineForHost(key identity.Key, host *bmov1alpha1.BareMetalHost) (reconcile.Request, bool) {
	ref := host.Spec.ConsumerRef
	if ref == nil || ref.Kind != "Metal3Machine" || ref.Name == "" {
		return reconcile.Request{}, false
	}
	name := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	if name.Namespace == "" {
		name.Namespace = host.Namespace
	}
	if userKey, ok := c.UserKey("Metal3Machine", name); !ok || userKey != key {
		return reconcile.Request{}, false
	}
	return reconcile.Request{NamespacedName: name}, true
}

// InClusterHostHandler maps in-cluster BareMetalHost events like the remote
// accessors do, for the Metal3Machine controller's watch on the manager's cache.
func (c *Cache) InClusterHostHandler() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		host, ok := obj.(*bmov1alpha1.BareMetalHost)
		if !ok {
			return nil
		}
		if req, ok := c.MachineForHost(identity.InCluster, host); ok {
			return []reconcile.Request{req}
		}
		return nil
	})
}

// SecretMetadata reads Secret metadata from the management cluster's cache.
func (c *Cache) SecretMetadata() client.Reader { return c.opts.ManagementCache }

// ConnectedKeys lists the identities with a running accessor.
func (c *Cache) ConnectedKeys() []identity.Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []identity.Key
	for key, state := range c.states {
		if state.accessor != nil {
			keys = append(keys, key)
		}
	}
	return keys
}

func (c *Cache) use(ref userRef, key identity.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, had := c.users[ref]
	c.users[ref] = key
	if had && old != key {
		c.stopIfUnusedLocked(old)
	}
}

func (c *Cache) stopIfUnusedLocked(key identity.Key) {
	for _, k := range c.users {
		if k == key {
			return
		}
	}
	if state, ok := c.states[key]; ok {
		c.disconnectLocked(key, state)
		delete(c.states, key)
	}
}

// remoteAccess returns the accessor of a Secret identity, connecting it when
// needed. The fast path, a connected identity whose Secret did not change,
// reads only the informer-cached Secret metadata: no API request.
func (c *Cache) remoteAccess(ctx context.Context, id identity.Identity) (HostAccess, error) {
	key := id.Key
	meta := secretMetadata()
	if err := c.opts.ManagementCache.Get(ctx, key.Secret(), meta); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(key)
			return nil, identity.NewError(key, infrav1.IdentitySecretNotFoundReason, true, err,
				"Secret %s not found", key.Secret())
		}
		return nil, fmt.Errorf("read metadata of identity Secret %s: %w", key.Secret(), err)
	}

	if access, done, err := c.cachedAccess(key, meta.ResourceVersion); done {
		return access, err
	}

	// One connection attempt per key at a time; others wait for its outcome.
	lock := c.connectLock(key)
	lock.Lock()
	defer lock.Unlock()
	if access, done, err := c.cachedAccess(key, meta.ResourceVersion); done {
		return access, err
	}

	secret := &corev1.Secret{}
	if err := c.opts.SecretReader.Get(ctx, key.Secret(), secret); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(key)
			return nil, identity.NewError(key, infrav1.IdentitySecretNotFoundReason, true, err, "Secret %s not found", key.Secret())
		}
		return nil, fmt.Errorf("read identity Secret %s: %w", key.Secret(), err)
	}
	parsed, err := parseIdentitySecret(key, secret)
	if err == nil {
		err = c.checkPolicy(key, parsed)
	}
	if err != nil {
		c.recordFailure(key, secret.ResourceVersion, "", err, false)
		return nil, err
	}
	namespace := parsed.namespace
	if namespace == "" {
		namespace = id.ObjectNamespace
	}

	c.mu.Lock()
	state := c.stateLocked(key)
	if state.accessor != nil && state.hash == parsed.hash {
		// The Secret was touched but its kubeconfig is the same.
		state.secretVersion = secret.ResourceVersion
		access := state.accessor.hostAccess()
		c.mu.Unlock()
		return access, nil
	}
	if state.accessor == nil && state.lastErr != nil && state.hash == parsed.hash && time.Now().Before(state.retryAt) {
		// Only the Secret's metadata changed (a finalizer, a label): the
		// server that failed gets no new request before the backoff ends.
		state.secretVersion = secret.ResourceVersion
		err := state.lastErr
		c.mu.Unlock()
		return nil, err
	}
	if state.accessor != nil {
		// Rotation: the old credentials stop before the new ones start.
		c.disconnectLocked(key, state)
		recordRotation(key)
	}
	parent := c.ctx
	c.mu.Unlock()
	if parent == nil {
		return nil, errors.New("remote cache is not started")
	}

	acc, err := connect(parent, c, key, parsed.restConfig, namespace)
	if err != nil {
		c.recordFailure(key, secret.ResourceVersion, parsed.hash, err, true)
		return nil, err
	}
	c.mu.Lock()
	state = c.stateLocked(key)
	state.accessor, state.lastErr = acc, nil
	state.secretVersion, state.hash, state.namespace = secret.ResourceVersion, parsed.hash, namespace
	state.failures, state.retryAt = 0, time.Time{}
	c.notifyUsersLocked(key)
	c.mu.Unlock()
	recordConnected(key)
	return acc.hostAccess(), nil
}

// cachedAccess answers from the key's state when the Secret is unchanged:
// the connected accessor, or the last error while backing off. done is false
// when a (re)connection must be attempted.
func (c *Cache) cachedAccess(key identity.Key, secretVersion string) (HostAccess, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	state, ok := c.states[key]
	if !ok || state.secretVersion != secretVersion {
		return nil, false, nil
	}
	if state.accessor != nil {
		return state.accessor.hostAccess(), true, nil
	}
	if state.lastErr != nil && (state.lastErr.Terminal && state.hash == "" || time.Now().Before(state.retryAt)) {
		// A kubeconfig that cannot be parsed stays broken until the Secret
		// changes; anything else is retried after the backoff.
		return nil, true, state.lastErr
	}
	return nil, false, nil
}

func (c *Cache) recordFailure(key identity.Key, secretVersion, hash string, err error, retry bool) {
	ie := classify(key, "", err)
	c.mu.Lock()
	defer c.mu.Unlock()
	state := c.stateLocked(key)
	if state.lastErr == nil || state.lastErr.Reason != ie.Reason {
		// Operators want to see a tenant's identity refused or failing,
		// once per change rather than at every retry.
		ctrl.Log.WithName("remote").Info("identity.Identity cannot be used", "identity", key.String(), "reason", ie.Reason, "message", ie.Message)
	}
	c.disconnectLocked(key, state)
	state.secretVersion, state.hash, state.lastErr = secretVersion, hash, ie
	if retry {
		state.failures++
		state.retryAt = time.Now().Add(c.backoff(state.failures))
	}
}

func (c *Cache) backoff(failures int) time.Duration {
	d := c.opts.MinBackoff
	for i := 1; i < failures && d < c.opts.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, c.opts.MaxBackoff)
}

// RetryAfter is how long a controller should wait before asking again for an
// identity that failed.
func (c *Cache) RetryAfter(key identity.Key) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if state, ok := c.states[key]; ok && !state.retryAt.IsZero() {
		if d := time.Until(state.retryAt); d > 0 {
			return d
		}
	}
	return c.opts.MinBackoff
}

// forget drops everything about key after its Secret went away; its users
// stay registered so they learn when the Secret comes back.
func (c *Cache) forget(key identity.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if state, ok := c.states[key]; ok {
		c.disconnectLocked(key, state)
		delete(c.states, key)
	}
}

func (c *Cache) stateLocked(key identity.Key) *keyState {
	state, ok := c.states[key]
	if !ok {
		state = &keyState{}
		c.states[key] = state
	}
	return state
}

func (c *Cache) connectLock(key identity.Key) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	lock, ok := c.connecting[key]
	if !ok {
		lock = &sync.Mutex{}
		c.connecting[key] = lock
	}
	return lock
}

// disconnectLocked stops the key's accessor, if any, and tells its users.
func (c *Cache) disconnectLocked(key identity.Key, state *keyState) {
	if state.accessor == nil {
		return
	}
	state.accessor.stop()
	state.accessor = nil
	recordDisconnected(key)
	c.notifyUsersLocked(key)
}

// disconnect is called by an accessor whose probe gave up.
func (c *Cache) disconnect(acc *accessor, err *identity.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	state, ok := c.states[acc.key]
	if !ok || state.accessor != acc {
		return
	}
	c.disconnectLocked(acc.key, state)
	state.lastErr = err
	state.failures++
	state.retryAt = time.Now().Add(c.backoff(state.failures))
}

// notifyUsersLocked enqueues every object using key, so their conditions
// follow the identity's connection.
func (c *Cache) notifyUsersLocked(key identity.Key) {
	for ref, k := range c.users {
		if k == key {
			c.sendLocked(ref.kind, ref.NamespacedName)
		}
	}
}

// sendLocked queues a request for kind without blocking: the channel is
// buffered, and a full buffer means a controller far behind that will
// resync the object anyway.
func (c *Cache) sendLocked(kind string, name types.NamespacedName) {
	ch, ok := c.events[kind]
	if !ok {
		return
	}
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name}}
	select {
	case ch <- event.GenericEvent{Object: obj}:
	default:
		ctrl.Log.WithName("remote").Info("event buffer full, dropping event", "kind", kind, "object", name)
	}
}

// sendHostEvent is how accessors deliver mapped host events.
func (c *Cache) sendHostEvent(req reconcile.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sendLocked("Metal3Machine", req.NamespacedName)
}

// secretChanged reacts to a creation, update or deletion of any Secret: when it is an
// identity's, the identity's users are reconciled and pick up the change.
func (c *Cache) secretChanged(obj any) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	meta, ok := obj.(client.Object)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	notified := map[identity.Key]bool{}
	for _, key := range c.users {
		if !key.IsInCluster() && !notified[key] && key.SecretNamespace == meta.GetNamespace() && key.SecretName == meta.GetName() {
			notified[key] = true
			c.notifyUsersLocked(key)
		}
	}
}

func secretMetadata() *metav1.PartialObjectMetadata {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return meta
}

func userRefFor(obj client.Object) userRef {
	kind := ""
	switch obj.(type) {
	case *infrav1.Metal3Cluster:
		kind = "Metal3Cluster"
	case *infrav1.Metal3Machine:
		kind = "Metal3Machine"
	default:
		kind = obj.GetObjectKind().GroupVersionKind().Kind
	}
	return userRef{kind: kind, NamespacedName: client.ObjectKeyFromObject(obj)}
}
