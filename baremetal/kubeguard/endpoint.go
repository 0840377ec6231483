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

package kubeguard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// ClientOptions bound what one tenant's server may cost the provider, and
// say how the provider presents itself to it.
type ClientOptions struct {
	// RequestTimeout bounds dialling and every request but watches.
	RequestTimeout time.Duration
	// MaxResponseBytes caps each response body (a watch: per connection,
	// which client-go then reopens).
	MaxResponseBytes int64
	// MaxRequestsInFlight bounds the requests but watches in flight at
	// once; zero: no bound.
	MaxRequestsInFlight int
	// QPS and Burst limit the clients built on Endpoint.Config.
	QPS   float32
	Burst int
	// UserAgent, if set, names the provider in every request.
	UserAgent string
	// WrapTransport, if set, wraps the transport under the guard (request
	// accounting or tracing).
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// Endpoint is a tenant's API server that passed the boundary: its
// kubeconfig was loaded and judged (Load), and it answered the discovery
// handshake (Connect). Every request to it goes through HTTPClient.
type Endpoint struct {
	// Config is what clients of the server are built from, with
	// HTTPClient (client-go's and controller-runtime's constructors take
	// both). It carries no credentials or TLS settings of its own: its
	// Transport is HTTPClient's, so even a client built from Config alone
	// goes through the guard. QPS, Burst and UserAgent are ClientOptions'.
	Config *rest.Config
	// HTTPClient is the one client every request goes through: dialled
	// under the policy, guarded, never following redirects.
	HTTPClient *http.Client
	// Server is the server as the kubeconfig names it.
	Server Server
	// verified is set once the server answered the discovery handshake;
	// only then may a Status message it sends reach a condition.
	verified *atomic.Bool
	// transport is under every wrapper and holds the connections.
	transport http.RoundTripper
}

// errNotLoaded refuses to connect a Kubeconfig that no policy judged.
var errNotLoaded = errors.New("kubeguard: only a Kubeconfig returned by Load can connect")

// Connect is the second half of the boundary: it builds the kubeconfig's
// guarded client, under the policy Load judged it by, and runs the
// discovery handshake, the first request the server gets, within ctx.
// Callers that must not wait for a slow server run it on a goroutine of
// their own. The error is an *Error (the handshake's verdict, or why no
// client could be built), but for a Kubeconfig that Load did not return.
func (k *Kubeconfig) Connect(ctx context.Context, opts ClientOptions) (*Endpoint, error) {
	if k.policy == nil {
		return nil, errNotLoaded
	}
	e, err := newEndpoint(k.RESTConfig, k.policy, opts)
	if err != nil {
		return nil, err
	}
	if err := e.Probe(ctx); err != nil {
		// Nothing of a failed attempt uses its connections any longer.
		e.Close()
		return nil, err
	}
	return e, nil
}

// newEndpoint builds the client of cfg: dialled under policy, never
// through the environment's proxy (the policy could not see past it),
// guarded, and without following redirects. Nothing is sent yet.
func newEndpoint(cfg *rest.Config, policy *ServerPolicy, opts ClientOptions) (*Endpoint, error) {
	srv, err := ParseServer(cfg.Host)
	if err != nil {
		return nil, newError(ReasonInvalidKubeconfig, true, err, "server %q is not a URL", cfg.Host)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = opts.UserAgent
	cfg.Dial = policy.dialer(opts.RequestTimeout)
	kubeconfigProxy := cfg.Proxy
	cfg.Proxy = func(req *http.Request) (*url.URL, error) {
		if kubeconfigProxy != nil {
			return kubeconfigProxy(req)
		}
		return nil, nil
	}
	// The transport is the client's own (a custom dialer keeps client-go
	// from sharing it): remembered to close its connections on Close, which
	// the wrappers above it do not pass on.
	var transport http.RoundTripper
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		transport = rt
		return rt
	})
	if opts.WrapTransport != nil {
		cfg.Wrap(opts.WrapTransport)
	}
	verified := &atomic.Bool{}
	var slots chan struct{}
	if opts.MaxRequestsInFlight > 0 {
		slots = make(chan struct{}, opts.MaxRequestsInFlight)
	}
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return &guard{next: next, policy: policy, requestTimeout: opts.RequestTimeout, maxBodyBytes: opts.MaxResponseBytes,
			slots: slots, verified: verified}
	})
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, newError(ReasonInvalidKubeconfig, true, err, "cannot build an HTTP client for %s", srv.Display)
	}
	httpClient.CheckRedirect = noRedirects
	return &Endpoint{
		Config: &rest.Config{
			Host: cfg.Host, APIPath: cfg.APIPath, Transport: httpClient.Transport,
			QPS: opts.QPS, Burst: opts.Burst, UserAgent: opts.UserAgent,
		},
		HTTPClient: httpClient, Server: srv, verified: verified, transport: transport,
	}, nil
}

// Probe runs the discovery handshake (see discover) and, once the server
// passed it, lets the sanitized messages of its Statuses through. Connect
// runs it first; callers repeat it to tell whether the server is still one.
func (e *Endpoint) Probe(ctx context.Context) error {
	if err := discover(ctx, e.HTTPClient, e.Server); err != nil {
		return err
	}
	e.verified.Store(true)
	return nil
}

// streamTeardown is ample time for the HTTP/2 transport to tear down the
// streams of requests whose context was cancelled: it does so after their
// callers have returned.
const streamTeardown = time.Second

// Close closes the endpoint's connections once nothing uses them: those
// idle now, and again after streamTeardown those whose last requests
// (watches) were cancelled. An idle connection otherwise keeps a goroutine
// and a socket to the server until its idle timeout (90 s); a connection
// that is rebuilt, rotated or retried would leave one each time.
func (e *Endpoint) Close() {
	utilnet.CloseIdleConnectionsFor(e.transport)
	time.AfterFunc(streamTeardown, func() { utilnet.CloseIdleConnectionsFor(e.transport) })
}

// Backoff is how long to leave a tenant's server alone after failures
// failed attempts in a row: minimum, doubling with each, at most maximum.
func Backoff(failures int, minimum, maximum time.Duration) time.Duration {
	d := minimum
	for i := 1; i < failures && d < maximum; i++ {
		d *= 2
	}
	return min(d, maximum)
}

// ErrStillConnecting: the connection attempt a caller waited for did not
// end by the caller's deadline.
var ErrStillConnecting = errors.New("still connecting")

// AwaitConnect waits until done (a connection attempt's end) is closed
// (nil), the deadline passes (ErrStillConnecting) or ctx ends. Identities
// and workload clusters connect on goroutines of their caches; a reconcile
// waits for an attempt this long at most, so a tenant's slow server never
// holds a worker.
func AwaitConnect(ctx context.Context, done <-chan struct{}, deadline time.Time) error {
	select {
	case <-done:
		return nil
	default:
	}
	remaining := time.Until(deadline)
	if remaining <= 0 {
		return ErrStillConnecting
	}
	timer := time.NewTimer(remaining)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case <-timer.C:
		return ErrStillConnecting
	case <-ctx.Done():
		return fmt.Errorf("wait for a connection under way: %w", ctx.Err())
	}
}
