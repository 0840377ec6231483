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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
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
	// Timeout bounds connecting and every request.
	Timeout time.Duration
	// MaxResponseBytes caps each answer: the provider reads Nodes by name
	// or label, never every Node of a cluster.
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
// when the Secret changes or goes and after IdleTimeout unused. A failure
// is kept with a backoff (a kubeconfig that is refused: until the Secret
// changes), so a broken cluster costs one attempt per backoff, not one per
// reconcile. Clients read from the API server (no informer): the provider
// reads a few Nodes by name or label now and then, and a hostile server
// could grow a cache without bound.
type Clusters struct {
	opts ClustersOptions

	mu    sync.Mutex
	conns map[types.NamespacedName]*connection
	// connecting serialises attempts per cluster without holding mu.
	connecting map[types.NamespacedName]*sync.Mutex
	// changes carries clusters whose state changed to Source.
	changes chan event.GenericEvent
}

// connection is one cluster's client, or why there is none.
type connection struct {
	secretVersion string
	client        client.Client
	guarded       *kubeguard.Client
	err           *Error
	failures      int
	retryAt       time.Time
	lastUsed      time.Time
}

// NewClusters returns the cache; add it to the manager with mgr.Add.
func NewClusters(opts ClustersOptions) (*Clusters, error) {
	if opts.SecretMetadata == nil || opts.SecretReader == nil || opts.Scheme == nil {
		return nil, errors.New("workload.Clusters needs SecretMetadata, SecretReader and Scheme")
	}
	opts.setDefaults()
	return &Clusters{
		opts: opts, conns: map[types.NamespacedName]*connection{}, connecting: map[types.NamespacedName]*sync.Mutex{},
		changes: make(chan event.GenericEvent, 1024),
	}, nil
}

// Start drops idle connections until ctx ends, then closes them all.
func (c *Clusters) Start(ctx context.Context) error {
	ticker := time.NewTicker(c.opts.IdleTimeout / 2)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
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
// reached; KubeconfigNotFound while the cluster has no kubeconfig yet.
func (c *Clusters) Client(ctx context.Context, cluster types.NamespacedName) (client.Client, error) {
	secretKey := KubeconfigSecret(cluster)
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := c.opts.SecretMetadata.Get(ctx, secretKey, meta); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, c.fail(cluster, "", &Error{Cluster: cluster, Reason: infrav1.WorkloadKubeconfigNotFoundReason, Terminal: true,
				Message: fmt.Sprintf("workload cluster %s has no kubeconfig Secret %s yet", cluster, secretKey.Name)}, false)
		}
		return nil, fmt.Errorf("read metadata of Secret %s: %w", secretKey, err)
	}
	if cl, done, err := c.cached(cluster, meta.ResourceVersion); done {
		return cl, err
	}
	lock := c.lock(cluster)
	lock.Lock()
	defer lock.Unlock()
	if cl, done, err := c.cached(cluster, meta.ResourceVersion); done {
		return cl, err
	}
	return c.connect(ctx, cluster, secretKey)
}

// cached answers from cluster's connection when its Secret is unchanged:
// the client, or the last error while backing off. done is false when an
// attempt must be made.
func (c *Clusters) cached(cluster types.NamespacedName, secretVersion string) (client.Client, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	conn, ok := c.conns[cluster]
	if !ok || conn.secretVersion != secretVersion {
		return nil, false, nil
	}
	if conn.client != nil {
		conn.lastUsed = time.Now()
		return conn.client, true, nil
	}
	if conn.err != nil && (conn.err.Terminal || time.Now().Before(conn.retryAt)) {
		return nil, true, conn.err
	}
	return nil, false, nil
}

// connect reads cluster's kubeconfig, judges it and connects: nothing is
// sent to the server before the kubeconfig and the server passed kubeguard,
// and the first request is the discovery handshake.
func (c *Clusters) connect(ctx context.Context, cluster, secretKey types.NamespacedName) (client.Client, error) {
	secret := &corev1.Secret{}
	if err := c.opts.SecretReader.Get(ctx, secretKey, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, c.fail(cluster, "", &Error{Cluster: cluster, Reason: infrav1.WorkloadKubeconfigNotFoundReason, Terminal: true,
				Message: fmt.Sprintf("workload cluster %s has no kubeconfig Secret %s yet", cluster, secretKey.Name)}, false)
		}
		return nil, fmt.Errorf("read Secret %s: %w", secretKey, err)
	}
	parsed, err := c.parse(secret)
	if err != nil {
		return nil, c.fail(cluster, secret.ResourceVersion, err, false)
	}
	guarded, err := kubeguard.NewClient(parsed.RESTConfig, kubeguard.ClientOptions{
		Policy: &c.opts.Policy, RequestTimeout: c.opts.Timeout, MaxResponseBytes: c.opts.MaxResponseBytes,
		MaxRequestsInFlight: c.opts.MaxRequestsInFlight, WrapTransport: c.opts.WrapTransport,
	})
	if err != nil {
		return nil, c.fail(cluster, secret.ResourceVersion, err, false)
	}
	connectCtx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	if err := guarded.Discover(connectCtx); err != nil {
		guarded.Close()
		return nil, c.fail(cluster, secret.ResourceVersion, kubeguard.Classify(guarded.Server.Display, err), true)
	}
	cfg := rest.CopyConfig(parsed.RESTConfig)
	cfg.QPS, cfg.Burst, cfg.UserAgent = c.opts.QPS, c.opts.Burst, c.opts.UserAgent
	cl, err := client.New(cfg, client.Options{HTTPClient: guarded.Client, Scheme: c.opts.Scheme, Mapper: workloadMapper()})
	if err != nil {
		guarded.Close()
		return nil, c.fail(cluster, secret.ResourceVersion, err, true)
	}
	c.mu.Lock()
	if old, ok := c.conns[cluster]; ok {
		c.dropLocked(cluster, old)
	}
	c.conns[cluster] = &connection{secretVersion: secret.ResourceVersion, client: cl, guarded: guarded, lastUsed: time.Now()}
	c.mu.Unlock()
	ctrl.LoggerFrom(ctx).Info("Connected to the workload cluster", "cluster", cluster.String(), "server", guarded.Server.Display)
	c.changed(cluster)
	return cl, nil
}

// parse reads the kubeconfig Cluster API wrote (its current context) as
// untrusted input and judges its server.
func (c *Clusters) parse(secret *corev1.Secret) (*kubeguard.Kubeconfig, error) {
	data, err := kubeguard.SecretData(secret, kubeconfigKey)
	if err != nil {
		return nil, err
	}
	parsed, err := kubeguard.Parse(data, "")
	if err != nil {
		return nil, err
	}
	if err := c.opts.Policy.Check(parsed); err != nil {
		return nil, err
	}
	return parsed, nil
}

// fail records why cluster cannot be reached with the Secret at
// secretVersion and returns it as an *Error; retry backs the next attempt
// off, else it waits for the Secret to change.
func (c *Clusters) fail(cluster types.NamespacedName, secretVersion string, err error, retry bool) *Error {
	we := Classify(cluster, err)
	c.mu.Lock()
	conn, ok := c.conns[cluster]
	if !ok {
		conn = &connection{}
		c.conns[cluster] = conn
	}
	changed := conn.client != nil || conn.err == nil || conn.err.Reason != we.Reason
	if conn.client != nil {
		conn.guarded.Close()
		conn.client, conn.guarded = nil, nil
	}
	conn.secretVersion, conn.err = secretVersion, we
	if retry {
		conn.failures++
		conn.retryAt = time.Now().Add(kubeguard.Backoff(conn.failures, c.opts.MinBackoff, c.opts.MaxBackoff))
	} else {
		conn.failures, conn.retryAt = 0, time.Time{}
	}
	c.mu.Unlock()
	if changed {
		c.changed(cluster)
	}
	return we
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
// reached, its Error while it cannot be; known is false when nothing has
// asked for it yet.
func (c *Clusters) State(cluster types.NamespacedName) (err *Error, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	conn, ok := c.conns[cluster]
	if !ok {
		return nil, false
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

func (c *Clusters) dropLocked(cluster types.NamespacedName, conn *connection) {
	if conn.guarded != nil {
		conn.guarded.Close()
	}
	delete(c.conns, cluster)
	delete(c.connecting, cluster)
}

func (c *Clusters) lock(cluster types.NamespacedName) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	lock, ok := c.connecting[cluster]
	if !ok {
		lock = &sync.Mutex{}
		c.connecting[cluster] = lock
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
	return mapper
}
