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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
)

// This file shares accessors. Identities whose kubeconfigs say the same
// thing (same server, same user, same hosts' namespace) would see and do
// exactly the same, so one accessor serves them all: one client, one host
// cache, one probe, one watch per kind on their API server, whatever Secret
// or Metal3ClusterIdentity they come from. Fifty tenants handed the same
// kubeconfig cost the pool what one does.
//
// Each identity keeps its own state (keyState: the Secret version it read,
// its error and backoff, its Events), while the accessors are kept by
// credential fingerprint (IdentityCache.connections), each knowing the
// identities attached to it. An identity whose credentials change (a
// rotation) leaves its accessor, which goes on serving the others
// untouched, and joins or starts the accessor of its new credentials; an
// accessor stops when its last identity leaves.

// credentials is everything of a validated kubeconfig that decides where an
// identity's requests go, whom they are made as, and which hosts they read.
// Whatever kubeguard.Load copies into the rest.Config must be here, or two
// different users could share a client (TestCredentialFingerprint checks it).
type credentials struct {
	Server             string              `json:"server"`
	ProxyURL           string              `json:"proxyURL,omitempty"`
	TLSServerName      string              `json:"tlsServerName,omitempty"`
	Insecure           bool                `json:"insecure,omitempty"`
	DisableCompression bool                `json:"disableCompression,omitempty"`
	CAData             []byte              `json:"caData,omitempty"`
	CertData           []byte              `json:"certData,omitempty"`
	KeyData            []byte              `json:"keyData,omitempty"`
	BearerToken        string              `json:"bearerToken,omitempty"`
	Username           string              `json:"username,omitempty"`
	Password           string              `json:"password,omitempty"`
	ImpersonateUser    string              `json:"impersonateUser,omitempty"`
	ImpersonateUID     string              `json:"impersonateUID,omitempty"`
	ImpersonateGroups  []string            `json:"impersonateGroups,omitempty"`
	ImpersonateExtra   map[string][]string `json:"impersonateExtra,omitempty"`
	// Namespace is where the hosts are read: one host cache per namespace.
	Namespace string `json:"namespace"`
}

// credentialFingerprint is the SHA-256 of kubeconfig's credentials and the
// hosts' namespace: the key of the shared accessors, known before anything
// connects. It is derived from secrets (a token, a private key, a
// password), so it stays in memory: never logged, never in an Event, a
// condition or a metric.
func credentialFingerprint(kubeconfig *kubeguard.Kubeconfig, namespace string) string {
	cfg := kubeconfig.RESTConfig
	//nolint:gosec // encoded only to be hashed here, never stored or shown
	data, err := json.Marshal(credentials{
		Server: cfg.Host, ProxyURL: kubeconfig.ProxyURL, TLSServerName: cfg.ServerName, Insecure: cfg.Insecure,
		DisableCompression: cfg.DisableCompression, CAData: cfg.CAData, CertData: cfg.CertData, KeyData: cfg.KeyData,
		BearerToken: cfg.BearerToken, Username: cfg.Username, Password: cfg.Password,
		ImpersonateUser: cfg.Impersonate.UserName, ImpersonateUID: cfg.Impersonate.UID,
		ImpersonateGroups: cfg.Impersonate.Groups, ImpersonateExtra: cfg.Impersonate.Extra,
		Namespace: namespace,
	})
	if err != nil {
		// Strings, byte slices and maps of strings always encode.
		panic(fmt.Sprintf("encode credentials: %v", err))
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// connection is one set of credentials in use: the accessor serving every
// identity that has them or, while there is none, the attempt under way or
// the last attempt's failure.
type connection struct {
	accessor *accessor
	// attempted is closed once the attempt under way has ended: identities
	// with the same credentials wait for its outcome (waitingFor) rather
	// than each dialling the server.
	attempted chan struct{}
	// err is why the last attempt failed, or why the accessor was
	// disconnected. Until retryAt, identities with these credentials get it
	// without a new request to the server. failedMode is the host mode the
	// attempt was made for ("" when it failed for every mode): an identity
	// used in another mode tries for itself.
	err        *identity.Error
	failedMode infrav1.HostMode
	retryAt    time.Time
}

func (c *connection) connecting() bool {
	select {
	case <-c.attempted:
		return false
	default:
		return true
	}
}

func (c *connection) failedFor(mode infrav1.HostMode, now time.Time) bool {
	return c.accessor == nil && c.err != nil && now.Before(c.retryAt) && (c.failedMode == "" || c.failedMode == mode)
}

// waitingFor is an identity waiting for the attempt connecting the
// credentials its Secret holds: when the attempt ends, it attaches the
// identity to the accessor, or records its failure, unless the identity
// moved on meanwhile (its Secret changed, it was released).
type waitingFor struct {
	conn *connection
	// mode is the host mode the identity is used in.
	mode infrav1.HostMode
	// secretVersion and hash are those of the Secret read; fingerprint
	// names its credentials.
	secretVersion, hash, fingerprint string
	// namespace and server are where the hosts are, for messages.
	namespace, server string
	// rotated: the identity left the accessor of other credentials.
	rotated bool
}

// shareAccess gives key the accessor of the credentials kubeconfig (from
// key's Secret at secretVersion) holds: the one already serving them; else
// the failure they just had; else the attempt connecting them, which key
// waits for, started now if none is under way. A key whose credentials
// changed leaves its previous accessor first: the old credentials stop,
// for it, before the new start.
func (c *IdentityCache) shareAccess(key identity.Key, mode infrav1.HostMode, secretVersion string, kubeconfig *kubeguard.Kubeconfig, namespace string,
) (HostAccess, *connection, error) {
	fingerprint := credentialFingerprint(kubeconfig, namespace)
	mode = mode.OrDefault()
	c.mu.Lock()
	if c.ctx == nil || c.stopped {
		c.mu.Unlock()
		return nil, nil, errors.New("identity cache is not running")
	}
	state := c.stateLocked(key)
	if state.accessor != nil && state.fingerprint == fingerprint {
		// The Secret changed, its credentials did not (metadata, another
		// context, a comment): nothing to reconnect.
		state.secretVersion, state.hash, state.waiting = secretVersion, kubeconfig.Hash, nil
		access := state.accessor.hostAccess(key)
		c.mu.Unlock()
		return access, nil, nil
	}
	if state.accessor == nil && state.lastErr != nil && state.fingerprint == fingerprint && time.Now().Before(state.retryAt) {
		// Only the Secret's metadata changed (a finalizer, a label): the
		// server that failed gets no new request before the backoff ends.
		state.secretVersion, state.waiting = secretVersion, nil
		err := state.lastErr
		c.mu.Unlock()
		return nil, nil, err
	}
	conn := c.connections[fingerprint]
	switch {
	case conn != nil && conn.accessor != nil:
		acc := conn.accessor
		rotated := c.leaveLocked(key, state)
		c.attachLocked(key, state, acc, secretVersion, kubeconfig.Hash)
		c.mu.Unlock()
		c.connected(key, acc, rotated)
		return acc.hostAccess(key), nil, nil
	case conn != nil && conn.connecting():
		// Another identity is connecting these credentials: key waits for
		// that attempt rather than dialling the server again.
	case conn != nil && conn.failedFor(mode, time.Now()):
		err := conn.err.For(key)
		c.leaveLocked(key, state)
		c.mu.Unlock()
		ie, _ := c.recordFailure(key, secretVersion, kubeconfig.Hash, fingerprint, err, true)
		return nil, nil, ie
	default:
		// Nothing serves these credentials, and they did not just fail:
		// key connects them, for every identity that has them.
		c.pruneConnectionsLocked()
		conn = &connection{attempted: make(chan struct{})}
		c.connections[fingerprint] = conn
		c.attempts.Add(1)
		go c.attempt(c.ctx, key, mode, kubeconfig, namespace, fingerprint, conn)
	}
	rotated := c.leaveLocked(key, state) || state.waiting != nil && state.waiting.rotated
	state.waiting = &waitingFor{
		conn: conn, mode: mode, secretVersion: secretVersion, hash: kubeconfig.Hash, fingerprint: fingerprint,
		namespace: namespace, server: kubeconfig.Server.Display, rotated: rotated,
	}
	c.mu.Unlock()
	return nil, conn, nil
}

// attempt connects the credentials conn stands for, on behalf of key, on a
// goroutine of the cache: within ConnectTimeout of the cache's lifetime
// (parent), so that no caller's reconcile waits for a slow server longer
// than its ConnectWait, and no caller giving up cancels the attempt for
// the others. When it ends, every identity waiting for it (waitingFor) is
// attached to the accessor or gets its failure, and its users are told.
func (c *IdentityCache) attempt(parent context.Context, key identity.Key, mode infrav1.HostMode, kubeconfig *kubeguard.Kubeconfig,
	namespace, fingerprint string, conn *connection,
) {
	defer c.attempts.Done()
	acc, err := connect(parent, c, key, kubeconfig, namespace, fingerprint, mode)

	type waiter struct {
		key   identity.Key
		state *keyState
		w     *waitingFor
	}
	c.mu.Lock()
	var waiters []waiter
	for k, state := range c.states {
		if w := state.waiting; w != nil && w.conn == conn {
			state.waiting = nil
			waiters = append(waiters, waiter{key: k, state: state, w: w})
		}
	}
	if err != nil {
		ie := classify(key, "", err)
		var failed []*identity.Error
		var retryAt time.Time
		for _, wt := range waiters {
			if wt.w.mode != mode {
				// The attempt was made for another host mode: this one
				// tries for itself (failedFor).
				continue
			}
			wie, at, changed := c.recordFailureLocked(wt.key, wt.w.secretVersion, wt.w.hash, fingerprint, ie.For(wt.key), true)
			if changed {
				failed = append(failed, wie)
			}
			if retryAt.IsZero() || at.Before(retryAt) {
				retryAt = at
			}
		}
		if retryAt.IsZero() {
			retryAt = time.Now().Add(c.backoff(1))
		}
		conn.err, conn.failedMode, conn.retryAt = ie, mode, retryAt
		close(conn.attempted)
		c.mu.Unlock()
		for _, wie := range failed {
			c.failureEvent(wie.Key, wie)
		}
		for _, wt := range waiters {
			c.routes.notify(wt.key.Secret())
		}
		return
	}
	if len(waiters) == 0 {
		// Every identity that wanted these credentials moved on while they
		// connected: nobody would use the accessor.
		delete(c.connections, fingerprint)
		close(conn.attempted)
		acc.stop()
		c.mu.Unlock()
		return
	}
	conn.accessor = acc
	recordAccessorCreated(key)
	for _, wt := range waiters {
		c.attachLocked(wt.key, wt.state, acc, wt.w.secretVersion, wt.w.hash)
	}
	close(conn.attempted)
	c.mu.Unlock()
	for _, wt := range waiters {
		c.connected(wt.key, acc, wt.w.rotated)
	}
}

// attachLocked records that key is served by acc, from the Secret at
// secretVersion, and clears its failures and what it waited for.
func (c *IdentityCache) attachLocked(key identity.Key, state *keyState, acc *accessor, secretVersion, hash string) {
	acc.attach(key)
	state.accessor, state.lastErr, state.waiting = acc, nil, nil
	state.secretVersion, state.hash, state.fingerprint, state.namespace = secretVersion, hash, acc.fingerprint, acc.namespace
	state.failures, state.retryAt = 0, time.Time{}
}

// leaveLocked detaches key from an accessor of credentials it no longer
// has, and reports whether it had one: a rotation.
func (c *IdentityCache) leaveLocked(key identity.Key, state *keyState) bool {
	if state.accessor == nil {
		return false
	}
	c.detachLocked(key, state, nil)
	recordRotation(key)
	return true
}

// connected tells key's users (an Event on its Secret, and the controllers'
// sources) that it can be used.
func (c *IdentityCache) connected(key identity.Key, acc *accessor, rotated bool) {
	// Operators see whether credentials are shared; the tenant's Event does
	// not say it, since it would tell who else holds them.
	ctrl.Log.WithName("hostaccess").V(1).Info("Identity attached to an accessor", "identity", key.String(),
		"identitiesOnAccessor", len(acc.userKeys()))
	c.event(key, corev1.EventTypeNormal, "IdentityConnected", "Connect",
		fmt.Sprintf("Connected to the hosts in namespace %s of %s (rotated: %v)", acc.namespace, acc.endpoint.Server.Display, rotated))
	c.routes.notify(key.Secret())
}

// detachLocked takes key, with the watches started for it, off its
// accessor, and stops the accessor if no other identity uses it; why, when
// not nil, is the failure that ended it. key's users are told.
func (c *IdentityCache) detachLocked(key identity.Key, state *keyState, why *identity.Error) {
	acc := state.accessor
	if acc == nil {
		return
	}
	state.accessor = nil
	if acc.detach(key) == 0 {
		acc.stop()
		recordAccessorStopped()
		if conn := c.connections[acc.fingerprint]; conn != nil && conn.accessor == acc {
			delete(c.connections, acc.fingerprint)
		}
	}
	message := "Disconnected: no object uses the identity any longer, or its kubeconfig changed"
	if why != nil {
		message = "Disconnected: " + why.Message
	}
	c.event(key, corev1.EventTypeNormal, "IdentityDisconnected", "Disconnect", message)
	c.routes.notify(key.Secret())
}

// disconnect is called by an accessor whose probe gave up: every identity
// it serves gets the failure, in its own words, and backs off; the next
// attempt is made once for all of them.
func (c *IdentityCache) disconnect(acc *accessor, err *identity.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if conn := c.connections[acc.fingerprint]; conn == nil || conn.accessor != acc {
		return
	}
	var retryAt time.Time
	for _, key := range acc.userKeys() {
		state, ok := c.states[key]
		if !ok || state.accessor != acc {
			continue
		}
		ie := err.For(key)
		c.detachLocked(key, state, ie)
		state.lastErr = ie
		state.failures++
		wait := c.backoff(state.failures)
		if err.Reason == infrav1.IdentityLimitExceededReason {
			// Sending more than the budget is no accident of the network:
			// it is retried as rarely as the backoff allows.
			wait = c.opts.MaxBackoff
		}
		state.retryAt = time.Now().Add(wait)
		if retryAt.IsZero() || state.retryAt.Before(retryAt) {
			retryAt = state.retryAt
		}
	}
	if conn := c.connections[acc.fingerprint]; conn != nil && conn.accessor == acc {
		// No identity's state pointed at it any longer: stop it here.
		acc.stop()
		recordAccessorStopped()
	}
	c.connections[acc.fingerprint] = &connection{attempted: closedChannel(), err: err, retryAt: retryAt}
}

// pruneConnectionsLocked forgets failures whose backoff is over: the next
// identity to use their credentials tries them again anyway.
func (c *IdentityCache) pruneConnectionsLocked() {
	now := time.Now()
	for fingerprint, conn := range c.connections {
		if conn.accessor == nil && !conn.connecting() && !now.Before(conn.retryAt) {
			delete(c.connections, fingerprint)
		}
	}
}

// sharedAccessors counts the running accessors: connections, not
// identities.
func (c *IdentityCache) sharedAccessors() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, conn := range c.connections {
		if conn.accessor != nil {
			n++
		}
	}
	return n
}

func closedChannel() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}
