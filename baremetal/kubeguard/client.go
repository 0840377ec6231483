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
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// ClientOptions bound what one tenant's server may cost the provider.
type ClientOptions struct {
	// Policy judges the server at every dial; required.
	Policy *ServerPolicy
	// RequestTimeout bounds connecting and every request but watches.
	RequestTimeout time.Duration
	// MaxResponseBytes caps each response body (a watch: per connection,
	// which client-go then reopens).
	MaxResponseBytes int64
	// MaxRequestsInFlight bounds the requests but watches in flight at
	// once; zero: no bound.
	MaxRequestsInFlight int
	// WrapTransport, if set, wraps the transport under the guard (request
	// accounting or tracing).
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// Client is the one HTTP client every request to a tenant's server goes
// through, and what it knows of that server.
type Client struct {
	*http.Client
	// Server is the server as the kubeconfig names it.
	Server Server
	// verified is set once the server answered the discovery handshake;
	// only then may a Status message it sends reach a condition.
	verified *atomic.Bool
	// transport is under every wrapper and holds the connections.
	transport http.RoundTripper
}

// NewClient builds the client of cfg (from Parse): dialled under the policy,
// never through the environment's proxy (the policy could not see past
// it), guarded, and without following redirects. Nothing is sent before
// the caller's first request, which should be Discover.
func NewClient(cfg *rest.Config, opts ClientOptions) (*Client, error) {
	srv, err := ParseServer(cfg.Host)
	if err != nil {
		return nil, newError(ReasonInvalidKubeconfig, true, err, "server %q is not a URL", cfg.Host)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Dial = opts.Policy.dialer(opts.RequestTimeout)
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
		return &guard{next: next, policy: opts.Policy, requestTimeout: opts.RequestTimeout, maxBodyBytes: opts.MaxResponseBytes,
			slots: slots, verified: verified}
	})
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, newError(ReasonInvalidKubeconfig, true, err, "cannot build an HTTP client for %s", srv.Display)
	}
	httpClient.CheckRedirect = noRedirects
	return &Client{Client: httpClient, Server: srv, verified: verified, transport: transport}, nil
}

// Discover runs the discovery handshake (see discover) and, once the server
// passed it, lets the sanitized messages of its Statuses through.
func (c *Client) Discover(ctx context.Context) error {
	if err := discover(ctx, c.Client, c.Server); err != nil {
		return err
	}
	c.verified.Store(true)
	return nil
}

// streamTeardown is ample time for the HTTP/2 transport to tear down the
// streams of requests whose context was cancelled: it does so after their
// callers have returned.
const streamTeardown = time.Second

// Close closes the client's connections once nothing uses them: those idle
// now, and again after streamTeardown those whose last requests (watches)
// were cancelled. An idle connection otherwise keeps a goroutine and a
// socket to the server until its idle timeout (90 s); a connection that is
// rebuilt, rotated or retried would leave one each time.
func (c *Client) Close() {
	utilnet.CloseIdleConnectionsFor(c.transport)
	time.AfterFunc(streamTeardown, func() { utilnet.CloseIdleConnectionsFor(c.transport) })
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
