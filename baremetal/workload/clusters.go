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

package workload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
)

// kubeconfigKey is the key Cluster API keeps a workload kubeconfig under.
const kubeconfigKey = "value"

// Error says why a workload cluster cannot be reached. Reason is
// infrav1.WorkloadKubeconfigNotFoundReason or one of kubeguard's; the message names the cluster
// and its kubeconfig Secret, and never quotes what a server answered.
type Error struct {
	Cluster  types.NamespacedName
	Reason   string
	Message  string
	Terminal bool
	cause    error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.cause }

// AsError returns the Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var we *Error
	ok := errors.As(err, &we)
	return we, ok
}

// Classify is err, a failure to connect to cluster or of a request to it,
// as an Error: its reason and a message of the provider's own.
func Classify(cluster types.NamespacedName, err error) *Error {
	if we, ok := AsError(err); ok {
		return we
	}
	ge := kubeguard.Classify("", err)
	return &Error{
		Cluster: cluster, Reason: ge.Reason, Terminal: ge.Terminal, cause: ge,
		Message: fmt.Sprintf("workload cluster %s (Secret %s): %s", cluster, KubeconfigSecret(cluster).Name, ge.Message),
	}
}

// KubeconfigSecret is where Cluster API keeps cluster's kubeconfig.
func KubeconfigSecret(cluster types.NamespacedName) types.NamespacedName {
	return types.NamespacedName{Namespace: cluster.Namespace, Name: cluster.Name + "-kubeconfig"}
}

// ClustersOptions configure Clusters. Zero values take the defaults.
type ClustersOptions struct {
	// SecretMetadata reads Secret metadata from the manager's cache: a
	// cluster whose kubeconfig did not change costs no request.
	SecretMetadata client.Reader
	// SecretReader reads the kubeconfig itself (the manager's API reader).
	SecretReader client.Reader
	Scheme       *runtime.Scheme
	// Policy says which servers workload kubeconfigs may name; its Flags
	// should be "workload".
	Policy kubeguard.ServerPolicy
	// Timeout bounds connecting, which runs on a goroutine of Clusters,
	// and every request.
	Timeout time.Duration
	// ConnectWait is how long a caller waits for a connection under way
	// before it is told the cluster is still connecting (reason
	// Connecting): long enough for a healthy server to connect within the
	// call, short enough that a slow one holds no reconcile worker for its
	// whole Timeout.
	ConnectWait time.Duration
	// MaxResponseBytes caps each answer: the provider reads Nodes by name
	// or label, never every Node of a cluster, and lists pods and volume
	// attachments a page at a time.
	MaxResponseBytes int64
	// MaxRequestsInFlight bounds the requests in flight to one cluster.
	MaxRequestsInFlight int
	QPS                 float32
	Burst               int
	UserAgent           string
	// MinBackoff and MaxBackoff bound the wait before a cluster that
	// failed is tried again; it doubles with each failure.
	MinBackoff, MaxBackoff time.Duration
	// IdleTimeout: a cluster unused for this long is disconnected.
	IdleTimeout time.Duration
	// WrapTransport, if set, wraps every client's transport (tests count
	// requests with it).
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

func (o *ClustersOptions) setDefaults() {
	setDefault := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	setDefault(&o.Timeout, 10*time.Second)
	setDefault(&o.ConnectWait, 2*time.Second)
	setDefault(&o.MinBackoff, 5*time.Second)
	setDefault(&o.MaxBackoff, 2*time.Minute)
	setDefault(&o.IdleTimeout, 15*time.Minute)
	if o.MaxResponseBytes == 0 {
		o.MaxResponseBytes = 16 << 20
	}
	if o.MaxRequestsInFlight == 0 {
		o.MaxRequestsInFlight = 4
	}
	if o.QPS == 0 {
		o.QPS = 20
	}
	if o.Burst == 0 {
		o.Burst = 30
	}
	if o.Policy.Flags == "" {
		o.Policy.Flags = "workload"
	}
}

// Clusters hands out clients of workload clusters, built from each
// Cluster's kubeconfig Secret. That Secret is in the tenant's namespace and
// the tenant can write it, so it is untrusted input exactly like an
// identity's kubeconfig: parsed, judged and guarded by kubeguard before
// anything connects, never handed to a library that would honour its file
// paths or plugins (Cluster API's ClusterCache does).
//
// One connection per Cluster, made on first use after the discovery
// handshake, kept while its Secret is unchanged and it is used, dropped
// when the Secret changes or goes and after IdleTimeout unused. As in
// Cluster API's ClusterCache, connecting runs on a goroutine of Clusters,
// not in the caller's reconcile: a caller waits for it ConnectWait at
// most, so a tenant's slow server holds no worker for long. A failure is
// kept with a backoff (a kubeconfig that is refused: until the Secret
// changes), so a broken cluster costs one attempt per backoff, not one per
// reconcile. Clients read from the API server (no informer): the provider
// reads a few Nodes by name or label now and then, and a hostile server
// could grow a cache without bound.
type Clusters struct {
	opts ClustersOptions
	// ctx is the lifetime of the connection attempts: Start's end cancels
	// it, and a caller giving up does not.
	ctx    context.Context //nolint:containedctx // the lifetime of the attempts, which outlive their callers
	cancel context.CancelFunc

	mu    sync.Mutex
	conns map[types.NamespacedName]*connection
	// reading serialises, per cluster, reading its Secret and starting an
	// attempt, without holding mu.
	reading map[types.NamespacedName]*sync.Mutex
	// attempts counts the connection attempts under way.
	attempts sync.WaitGroup
	// changes carries clusters whose state changed to Source.
	changes chan event.GenericEvent
}

// connection is one cluster's client, or why there is none, or the attempt
// under way to connect it.
type connection struct {
	secretVersion string
	client        client.Client
	endpoint      *kubeguard.Endpoint
	// attempt is closed when the attempt under way for secretVersion ends;
	// nil when none is. server names its server meanwhile.
	attempt chan struct{}
	server  string
	// err is why the cluster cannot be reached; while an attempt is under
	// way, the previous attempt's with the same Secret, which stands until
	// this one ends.
	err      *Error
	failures int
	retryAt  time.Time
	lastUsed time.Time
}

// NewClusters returns the cache; add it to the manager with mgr.Add.
func NewClusters(opts ClustersOptions) (*Clusters, error) {
	if opts.SecretMetadata == nil || opts.SecretReader == nil || opts.Scheme == nil {
		return nil, errors.New("workload.Clusters needs SecretMetadata, SecretReader and Scheme")
	}
	opts.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Clusters{
		opts: opts, ctx: ctx, cancel: cancel,
		conns: map[types.NamespacedName]*connection{}, reading: map[types.NamespacedName]*sync.Mutex{},
		changes: make(chan event.GenericEvent, 1024),
	}, nil
}

// Start drops idle connections until ctx ends, then ends the attempts
// under way and closes every connection.
func (c *Clusters) Start(ctx context.Context) error {
	ticker := time.NewTicker(c.opts.IdleTimeout / 2)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			// Attempts start under mu in a live c.ctx only: none starts
			// once it is cancelled there.
			c.mu.Lock()
			c.cancel()
			c.mu.Unlock()
			c.attempts.Wait()
			c.mu.Lock()
			for cluster, conn := range c.conns {
				c.dropLocked(cluster, conn)
			}
			c.mu.Unlock()
			return nil
		case now := <-ticker.C:
			c.mu.Lock()
			for cluster, conn := range c.conns {
				if conn.client != nil && now.Sub(conn.lastUsed) > c.opts.IdleTimeout {
					c.dropLocked(cluster, conn)
				}
			}
			c.mu.Unlock()
		}
	}
}

// NeedLeaderElection: only the leader's controllers use workload clusters.
func (c *Clusters) NeedLeaderElection() bool { return true }

// Client returns a client of cluster's workload cluster, connecting on
// first use. The error is an *Error saying why the cluster cannot be
// reached: KubeconfigNotFound while the cluster has no kubeconfig yet,
// Connecting while a connection has been under way for ConnectWait.
func (c *Clusters) Client(ctx context.Context, cluster types.NamespacedName) (client.Client, error) {
	secretKey := KubeconfigSecret(cluster)
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := c.opts.SecretMetadata.Get(ctx, secretKey, meta); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, c.fail(cluster, "", kubeconfigNotFound(cluster), false)
		}
		return nil, fmt.Errorf("read metadata of Secret %s: %w", secretKey, err)
	}
	deadline := time.Now().Add(c.opts.ConnectWait)
	for {
		cl, attempt, err := c.lookup(ctx, cluster, meta.ResourceVersion)
		if attempt == nil {
			return cl, err
		}
		if err := kubeguard.AwaitConnect(ctx, attempt, deadline); err != nil {
			return nil, c.stillConnecting(cluster, err)
		}
	}
}

// lookup answers cluster from its connection, or reads its kubeconfig,
// judges it (kubeguard.Load) and starts the attempt to connect it: the
// client, or why there is none, or the attempt under way.
func (c *Clusters) lookup(ctx context.Context, cluster types.NamespacedName, secretVersion string) (client.Client, chan struct{}, error) {
	if cl, attempt, done, err := c.cached(cluster, secretVersion); done {
		return cl, attempt, err
	}
	lock := c.lock(cluster)
	lock.Lock()
	defer lock.Unlock()
	if cl, attempt, done, err := c.cached(cluster, secretVersion); done {
		return cl, attempt, err
	}
	secretKey := KubeconfigSecret(cluster)
	secret := &corev1.Secret{}
	if err := c.opts.SecretReader.Get(ctx, secretKey, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, c.fail(cluster, "", kubeconfigNotFound(cluster), false)
		}
		return nil, nil, fmt.Errorf("read Secret %s: %w", secretKey, err)
	}
	// The kubeconfig Cluster API wrote (its current context), as untrusted
	// input: nothing is sent to its server before it passed.
	kubeconfig, err := kubeguard.Load(kubeguard.Source{Secret: secret, Keys: []string{kubeconfigKey}}, &c.opts.Policy)
	if err != nil {
		return nil, nil, c.fail(cluster, secret.ResourceVersion, err, false)
	}
	return c.startAttempt(cluster, secret.ResourceVersion, kubeconfig)
}

// cached answers from cluster's connection when its Secret is unchanged:
// the client, the attempt under way, or the last error while backing off.
// done is false when the Secret must be read.
func (c *Clusters) cached(cluster types.NamespacedName, secretVersion string) (cl client.Client, attempt chan struct{}, done bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	conn, ok := c.conns[cluster]
	if !ok || conn.secretVersion != secretVersion {
		return nil, nil, false, nil
	}
	switch {
	case conn.client != nil:
		conn.lastUsed = time.Now()
		return conn.client, nil, true, nil
	case conn.attempt != nil:
		return nil, conn.attempt, true, nil
	case conn.err != nil && (conn.err.Terminal || time.Now().Before(conn.retryAt)):
		return nil, nil, true, conn.err
	}
	return nil, nil, false, nil
}

// kubeconfigNotFound is the Error of a cluster without a kubeconfig Secret.
func kubeconfigNotFound(cluster types.NamespacedName) *Error {
	return &Error{Cluster: cluster, Reason: infrav1.WorkloadKubeconfigNotFoundReason, Terminal: true,
		Message: fmt.Sprintf("workload cluster %s has no kubeconfig Secret %s yet", cluster, KubeconfigSecret(cluster).Name)}
}

// fail records why cluster cannot be reached with the Secret at
// secretVersion and returns it as an *Error; retry backs the next attempt
// off, else it waits for the Secret to change.
func (c *Clusters) fail(cluster types.NamespacedName, secretVersion string, err error, retry bool) *Error {
	c.mu.Lock()
	we, changed := c.failLocked(cluster, secretVersion, err, retry)
	c.mu.Unlock()
	if changed {
		c.changed(cluster)
	}
	return we
}

// failLocked is fail under mu; changed says whether the news is worth
// telling Source (a client lost, or another reason).
func (c *Clusters) failLocked(cluster types.NamespacedName, secretVersion string, err error, retry bool) (*Error, bool) {
	we := Classify(cluster, err)
	conn, ok := c.conns[cluster]
	if !ok {
		conn = &connection{}
		c.conns[cluster] = conn
	}
	changed := conn.client != nil || conn.err == nil || conn.err.Reason != we.Reason
	if conn.endpoint != nil {
		conn.endpoint.Close()
		conn.client, conn.endpoint = nil, nil
	}
	// An attempt of another Secret version is superseded.
	conn.secretVersion, conn.err, conn.attempt = secretVersion, we, nil
	if retry {
		conn.failures++
		conn.retryAt = time.Now().Add(kubeguard.Backoff(conn.failures, c.opts.MinBackoff, c.opts.MaxBackoff))
	} else {
		conn.failures, conn.retryAt = 0, time.Time{}
	}
	return we, changed
}

// RetryAfter is how long to wait before asking again for cluster.
func (c *Clusters) RetryAfter(cluster types.NamespacedName) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if conn, ok := c.conns[cluster]; ok && !conn.retryAt.IsZero() {
		if d := time.Until(conn.retryAt); d > 0 {
			return d
		}
	}
	return c.opts.MinBackoff
}

// State is what is known of cluster without connecting: nil once it was
// reached, its Error while it cannot be (Connecting while its first
// attempt with this kubeconfig is under way); known is false when nothing
// has asked for it yet.
func (c *Clusters) State(cluster types.NamespacedName) (err *Error, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	conn, ok := c.conns[cluster]
	if !ok {
		return nil, false
	}
	if conn.err == nil && conn.client == nil && conn.attempt != nil {
		return c.connectingLocked(cluster), true
	}
	return conn.err, true
}

// Forget disconnects cluster (it is being deleted).
func (c *Clusters) Forget(cluster types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if conn, ok := c.conns[cluster]; ok {
		c.dropLocked(cluster, conn)
	}
}

// dropLocked forgets cluster; an attempt under way finds itself
// superseded when it ends.
func (c *Clusters) dropLocked(cluster types.NamespacedName, conn *connection) {
	if conn.endpoint != nil {
		conn.endpoint.Close()
	}
	delete(c.conns, cluster)
	delete(c.reading, cluster)
}

func (c *Clusters) lock(cluster types.NamespacedName) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	lock, ok := c.reading[cluster]
	if !ok {
		lock = &sync.Mutex{}
		c.reading[cluster] = lock
	}
	return lock
}

// changed tells Source's controller that cluster's state changed. A full
// buffer drops the news: the controller's own resync still comes.
func (c *Clusters) changed(cluster types.NamespacedName) {
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: cluster.Name}}
	select {
	case c.changes <- event.GenericEvent{Object: obj}:
	default:
	}
}

// Source delivers, for each cluster whose state changed (connected, or
// failed for another reason), the requests mapFunc returns for the
// Cluster's namespace and name. One controller may use it.
func (c *Clusters) Source(mapFunc handler.MapFunc) source.Source {
	return source.Channel(c.changes, handler.EnqueueRequestsFromMapFunc(mapFunc))
}

// workloadMapper maps the kinds the provider touches in workload clusters
// without discovery: a tenant's server answers no discovery document of
// unbounded size, and a connection costs one handshake.
func workloadMapper() meta.RESTMapper {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
	// A remediation fencing a Node with the out-of-service taint waits for
	// its pods and volume attachments to go.
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	mapper.Add(storagev1.SchemeGroupVersion.WithKind("VolumeAttachment"), meta.RESTScopeRoot)
	return mapper
}
