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
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
)

// keyState is what the cache knows of one identity.
type keyState struct {
	// secretVersion is the resourceVersion of the Secret last parsed.
	secretVersion string
	hash          string
	// fingerprint names the credentials the Secret held (see
	// credentialFingerprint), empty if it could not be parsed.
	fingerprint string
	namespace   string
	// accessor is nil while disconnected; it may serve other identities
	// with the same credentials too.
	accessor *accessor
	// waiting is the connection attempt the identity waits for, if any.
	waiting *waitingFor
	// lastErr is why the identity is not usable, while accessor is nil.
	lastErr *identity.Error
	// retryAt is when the next connection attempt may be made.
	retryAt  time.Time
	failures int
}

// IdentityCache is the Cache the manager runs: one accessor (client, host
// cache, health probe and the controllers' watches) per set of credentials,
// shared by every identity whose kubeconfig holds them, modelled on CAPI's
// ClusterCache. Identities connect on first use, are probed, disconnect
// after repeated failures and reconnect with backoff; an identity whose
// kubeconfig's credentials change moves to another accessor. As in
// ClusterCache, connecting runs on goroutines of the cache, not in the
// callers' reconciles: a caller waits for it ConnectWait at most, so a
// tenant's slow server holds no worker for long. It is a manager
// Runnable: stopping the manager stops every attempt and accessor.
//
// This file holds the connection state of each identity; shared.go the
// accessors and which identities they serve; routing.go what reaches the
// controllers (sources, watches) and who uses what.
type IdentityCache struct {
	opts Options

	mu sync.Mutex
	// ctx is the lifetime of the cache (Start's context): accessors outlive
	// the reconcile that connected them and end with the manager.
	ctx context.Context //nolint:containedctx // the runnable's lifetime, parent of every accessor
	// stopped is set once ctx ended: no connection attempt starts after.
	stopped bool
	states  map[identity.Key]*keyState
	// connections are the accessors by credential fingerprint, with the
	// attempts under way and recent failures (shared.go).
	connections map[string]*connection
	// connecting serialises, per key, reading its Secret and deciding what
	// to connect, without holding mu.
	connecting map[identity.Key]*sync.Mutex
	// attempts counts the connection attempts under way (shared.go).
	attempts sync.WaitGroup

	routes routes

	clusterIdentities identity.ClusterIdentities
}

var _ Cache = &IdentityCache{}

// NewIdentityCache returns the cache; add it to the manager with mgr.Add.
func NewIdentityCache(opts Options) (*IdentityCache, error) {
	if opts.SecretReader == nil || opts.ManagementCache == nil || opts.InClusterClient == nil || opts.Scheme == nil {
		return nil, errors.New("hostaccess.IdentityCache needs SecretReader, ManagementCache, InClusterClient and Scheme")
	}
	opts.setDefaults()
	if opts.InClusterReader == nil {
		opts.InClusterReader = opts.SecretReader
	}
	return &IdentityCache{
		opts:        opts,
		states:      map[identity.Key]*keyState{},
		connections: map[string]*connection{},
		connecting:  map[identity.Key]*sync.Mutex{},
		routes:      newRoutes(),
		clusterIdentities: identity.ClusterIdentities{
			Reader: opts.ClusterIdentityReader, ProviderNamespace: opts.ProviderNamespace,
		},
	}, nil
}

// Start watches identity Secrets and runs until ctx ends, then stops every
// connection attempt and accessor.
func (c *IdentityCache) Start(ctx context.Context) error {
	stopWatchingSecrets, err := c.watchSecrets(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()

	<-ctx.Done()
	stopWatchingSecrets()
	// Attempts start under mu until stopped: the last ones end with ctx.
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	c.attempts.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, state := range c.states {
		c.detachLocked(key, state, nil)
	}
	return nil
}

// NeedLeaderElection: remote watches only feed controllers, which run on the leader.
func (c *IdentityCache) NeedLeaderElection() bool { return true }

// Resolve implements Cache.
func (c *IdentityCache) Resolve(ctx context.Context, id identity.Identity) (identity.Identity, error) {
	return c.clusterIdentities.Resolve(ctx, id)
}

// HostAccess implements Cache.
func (c *IdentityCache) HostAccess(ctx context.Context, id identity.Identity) (HostAccess, error) {
	if id.Key.IsInCluster() {
		return c.inClusterAccess(id)
	}
	if id.Key.ClusterIdentity != "" {
		return c.clusterIdentityAccess(ctx, id)
	}
	// Connecting, and preparing a connection for a host mode, run on
	// goroutines of the cache; the caller waits for them until deadline.
	deadline := time.Now().Add(c.opts.ConnectWait)
	access, err := c.remoteAccess(ctx, id, deadline)
	if err != nil {
		return nil, err
	}
	// An identity connected for one host mode and now used in the other
	// is checked, and its cache filled, for that one too. The accessor may
	// have been connected for another identity with the same credentials:
	// its refusal is reported as this one's.
	if acc := access.(*hostAccess).accessor; acc != nil {
		if err := acc.prepare(ctx, id.Mode, deadline); err != nil {
			if ie, ok := identity.AsError(err); ok {
				return nil, ie.For(id.Key)
			}
			return nil, err
		}
	}
	return access, nil
}

// clusterIdentityAccess serves an identity resolved from a
// Metal3ClusterIdentity through the connection of its Secret and context,
// shared with every other user of them, whichever identity (or Secret
// identityRef) they came through, and with every other Secret holding the
// same credentials. The identity is resolved again first: a
// key resolved earlier, or read back from a status or a record, is only
// used while the identity still admits the namespace and still names that
// Secret, so no caller can skip admission.
func (c *IdentityCache) clusterIdentityAccess(ctx context.Context, id identity.Identity) (HostAccess, error) {
	if !id.Key.Resolved() {
		return nil, fmt.Errorf("%s is not resolved: Resolve it before asking for its hosts", id.Key)
	}
	current, err := c.Resolve(ctx, id)
	if err != nil {
		return nil, err
	}
	if current.Key != id.Key {
		return nil, fmt.Errorf("%s now resolves to %s: resolve it again", id.Key, current.Key)
	}
	connection := id
	connection.Key = id.Key.Connection()
	access, err := c.HostAccess(ctx, connection)
	if err != nil {
		if ie, ok := identity.AsError(err); ok {
			return nil, ie.For(id.Key)
		}
		return nil, err
	}
	shared := *access.(*hostAccess)
	shared.key = id.Key
	return &shared, nil
}

// ConnectedKeys lists the identities with a running accessor.
func (c *IdentityCache) ConnectedKeys() []identity.Key {
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

// remoteAccess returns the accessor of a Secret identity, connecting it when
// needed, for a caller that waits for a connection under way until
// deadline. The fast path, a connected identity whose Secret did not
// change, reads only the informer-cached Secret metadata: no API request.
func (c *IdentityCache) remoteAccess(ctx context.Context, id identity.Identity, deadline time.Time) (HostAccess, error) {
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
	for {
		access, attempt, err := c.lookup(ctx, id, meta.ResourceVersion)
		if attempt == nil {
			return access, err
		}
		// The attempt attaches key, or records its failure, when it ends.
		if err := kubeguard.AwaitConnect(ctx, attempt.attempted, deadline); err != nil {
			return nil, c.stillConnecting(key, err)
		}
	}
}

// lookup answers key from its state, or reads its Secret and shares the
// accessor of the credentials it holds: the access, or why there is none,
// or the connection attempt key waits for.
func (c *IdentityCache) lookup(ctx context.Context, id identity.Identity, secretVersion string) (HostAccess, *connection, error) {
	key := id.Key
	if access, attempt, done, err := c.cachedAccess(key, secretVersion); done {
		return access, attempt, err
	}
	// One reader of key's Secret at a time; the others then find what it
	// decided in key's state.
	lock := c.connectLock(key)
	lock.Lock()
	defer lock.Unlock()
	if access, attempt, done, err := c.cachedAccess(key, secretVersion); done {
		return access, attempt, err
	}

	secret := &corev1.Secret{}
	if err := c.opts.SecretReader.Get(ctx, key.Secret(), secret); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(key)
			return nil, nil, identity.NewError(key, infrav1.IdentitySecretNotFoundReason, true, err, "Secret %s not found", key.Secret())
		}
		return nil, nil, fmt.Errorf("read identity Secret %s: %w", key.Secret(), err)
	}
	kubeconfig, err := kubeguard.Load(kubeguard.Source{Secret: secret, Keys: kubeconfigSecretKeys, Context: key.Context}, &c.opts.Policy)
	if err != nil {
		ie, _ := c.recordFailure(key, secret.ResourceVersion, "", "", err, false)
		return nil, nil, ie
	}
	// Without a namespace in the context, the hosts are in the Secret's
	// namespace: for a Secret identityRef that is the object's own, and
	// for a Metal3ClusterIdentity, whose users are in many namespaces, it
	// keeps one connection per Secret and context.
	namespace := kubeconfig.Namespace
	if namespace == "" {
		namespace = key.SecretNamespace
	}
	return c.shareAccess(key, id.Mode, secret.ResourceVersion, kubeconfig, namespace)
}

// cachedAccess answers from the key's state when the Secret is unchanged:
// the connected accessor, the attempt key waits for, or the last error
// while backing off. done is false when the Secret must be read.
func (c *IdentityCache) cachedAccess(key identity.Key, secretVersion string) (access HostAccess, attempt *connection, done bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	state, ok := c.states[key]
	if !ok {
		return nil, nil, false, nil
	}
	if w := state.waiting; w != nil && w.secretVersion == secretVersion && w.conn.connecting() {
		return nil, w.conn, true, nil
	}
	if state.secretVersion != secretVersion {
		return nil, nil, false, nil
	}
	if state.accessor != nil {
		return state.accessor.hostAccess(key), nil, true, nil
	}
	if state.lastErr != nil && (state.lastErr.Terminal && state.hash == "" || time.Now().Before(state.retryAt)) {
		// A kubeconfig that cannot be parsed stays broken until the Secret
		// changes; anything else is retried after the backoff.
		return nil, nil, true, state.lastErr
	}
	return nil, nil, false, nil
}

// stillConnecting is the error of a caller that stopped waiting for key's
// connection attempt (waitErr says why). Past its deadline, the caller gets
// the last failure of the same credentials, which stands until the attempt
// gives another verdict, so conditions do not flap while it is retried;
// else reason Connecting: its users are told when the attempt ends.
func (c *IdentityCache) stillConnecting(key identity.Key, waitErr error) error {
	if !errors.Is(waitErr, kubeguard.ErrStillConnecting) {
		return waitErr
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	state, ok := c.states[key]
	if !ok || state.waiting == nil {
		// Released, or the attempt just ended: the caller is retried.
		return identity.NewError(key, infrav1.IdentityConnectingReason, false, nil, "connecting; retried")
	}
	w := state.waiting
	if state.lastErr != nil && state.fingerprint == w.fingerprint {
		return state.lastErr
	}
	return identity.NewError(key, infrav1.IdentityConnectingReason, false, nil,
		"connecting to the hosts in namespace %s of %s, which takes longer than %s; retried once done (within %s)",
		w.namespace, w.server, c.opts.ConnectWait, c.opts.ConnectTimeout)
}

// recordFailure records why key cannot be used with the Secret at
// secretVersion, whose content hashes to hash and whose credentials to
// fingerprint (both empty if it could not be parsed), and returns the
// error as key's and when key may be retried.
func (c *IdentityCache) recordFailure(key identity.Key, secretVersion, hash, fingerprint string, err error, retry bool) (*identity.Error, time.Time) {
	c.mu.Lock()
	ie, retryAt, changed := c.recordFailureLocked(key, secretVersion, hash, fingerprint, err, retry)
	c.mu.Unlock()
	if changed {
		c.failureEvent(key, ie)
	}
	return ie, retryAt
}

// recordFailureLocked is recordFailure under mu; changed says whether the
// failure's reason is new, for failureEvent.
func (c *IdentityCache) recordFailureLocked(key identity.Key, secretVersion, hash, fingerprint string, err error, retry bool) (*identity.Error, time.Time, bool) {
	ie := classify(key, "", err)
	state := c.stateLocked(key)
	changed := state.lastErr == nil || state.lastErr.Reason != ie.Reason
	c.detachLocked(key, state, ie)
	state.secretVersion, state.hash, state.fingerprint, state.lastErr = secretVersion, hash, fingerprint, ie
	// What key waited for is no longer what its Secret says.
	state.waiting = nil
	if retry {
		state.failures++
		state.retryAt = time.Now().Add(c.backoff(state.failures))
	}
	return ie, state.retryAt, changed
}

// failureEvent tells operators and tenants that key is refused or failing:
// once per change of reason rather than at every retry.
func (c *IdentityCache) failureEvent(key identity.Key, ie *identity.Error) {
	c.event(key, corev1.EventTypeWarning, "Identity"+ie.Reason, "Connect", ie.Message)
}

func (c *IdentityCache) backoff(failures int) time.Duration {
	return kubeguard.Backoff(failures, c.opts.MinBackoff, c.opts.MaxBackoff)
}

// RetryAfter implements Cache.
func (c *IdentityCache) RetryAfter(key identity.Key) time.Duration {
	if !key.Resolved() {
		return c.opts.MinBackoff
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if state, ok := c.states[key.Connection()]; ok && !state.retryAt.IsZero() {
		if d := time.Until(state.retryAt); d > 0 {
			return d
		}
	}
	return c.opts.MinBackoff
}

// forget drops everything about key after its Secret went away; the
// Secret's reappearance notifies its users again.
func (c *IdentityCache) forget(key identity.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if state, ok := c.states[key]; ok {
		c.detachLocked(key, state, nil)
		delete(c.states, key)
	}
}

func (c *IdentityCache) stateLocked(key identity.Key) *keyState {
	state, ok := c.states[key]
	if !ok {
		state = &keyState{}
		c.states[key] = state
	}
	return state
}

func (c *IdentityCache) connectLock(key identity.Key) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	lock, ok := c.connecting[key]
	if !ok {
		lock = &sync.Mutex{}
		c.connecting[key] = lock
	}
	return lock
}

// event records a connection decision: a structured log line for operators
// and an Event on the identity's Secret, where its users (the tenant) look
// for it; no recorder, no Event.
func (c *IdentityCache) event(key identity.Key, eventType, reason, action, note string) {
	ctrl.Log.WithName("hostaccess").Info(note, "identity", key.String(),
		"secret", klog.KRef(key.SecretNamespace, key.SecretName), "action", action, "reason", reason)
	if c.opts.Recorder == nil || key.IsInCluster() {
		return
	}
	secret := &corev1.Secret{}
	secret.Namespace, secret.Name = key.SecretNamespace, key.SecretName
	c.opts.Recorder.Eventf(secret, nil, eventType, reason, action, "%s", truncateNote(note))
}

// truncateNote fits a note into an Event (1 kB), on a rune boundary.
func truncateNote(note string) string {
	const maxNote = 1024
	if len(note) <= maxNote {
		return note
	}
	return strings.ToValidUTF8(note[:maxNote-len("…")], "") + "…"
}
