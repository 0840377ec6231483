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
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// marker stands for whatever a service inside the provider's network
// answers: it must never come back in an error.
const marker = "SECRET-MARKER-7d1f"

func markerPage(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "<html>"+marker+"</html>")
	}
}

func statusAnswer(code int, message string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Code: int32(code), Reason: metav1.StatusReasonForbidden, Message: message,
		})
	}
}

func apiVersions(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}`)
}

// localPolicy lets tests reach plain-http servers on loopback.
var localPolicy = ServerPolicy{AllowHTTP: true, AllowLoopback: true}

// testMaxResponseBytes is the response cap of test clients.
const testMaxResponseBytes = 64 << 20

func testHTTPClient(t *testing.T, server string, policy *ServerPolicy, opts ClientOptions) *Endpoint {
	t.Helper()
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = 5 * time.Second
	}
	if opts.MaxResponseBytes == 0 {
		opts.MaxResponseBytes = testMaxResponseBytes
	}
	c, err := newEndpoint(&rest.Config{Host: server}, policy, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// restGet does what client-go does with an identity's answer and returns
// the error a controller would see.
func restGet(t *testing.T, server string, c *Endpoint, path string) error {
	t.Helper()
	cfg := &rest.Config{Host: server}
	cfg.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	restClient, err := rest.UnversionedRESTClientForConfigAndClient(cfg, c.HTTPClient)
	if err != nil {
		t.Fatal(err)
	}
	return restClient.Get().AbsPath(path).Do(context.Background()).Error()
}

// TestGuardNeverShowsBodies: what a server answers to a failed request
// reaches the caller only as a Kubernetes Status message from a server
// that passed the discovery handshake, sanitized; everything else is
// replaced by the HTTP code.
func TestGuardNeverShowsBodies(t *testing.T) {
	long := strings.Repeat("x", 2000)
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		verified bool
		want     []string
		notWant  []string
	}{
		{name: "HTML error page", handler: markerPage(http.StatusForbidden), want: []string{"HTTP 403"}, notWant: []string{marker, "html"}},
		{name: "HTML error page from a verified server", handler: markerPage(http.StatusInternalServerError), verified: true,
			want: []string{"HTTP 500"}, notWant: []string{marker}},
		{name: "plain-text error", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, marker)
		}, verified: true, want: []string{"HTTP 502"}, notWant: []string{marker}},
		{name: "Status from an unverified server", handler: statusAnswer(http.StatusForbidden, marker), want: []string{"HTTP 403"}, notWant: []string{marker}},
		{name: "Status from a verified server", handler: statusAnswer(http.StatusForbidden, `User "tenant-a" cannot update resource "baremetalhosts"`),
			verified: true, want: []string{`User "tenant-a" cannot update resource "baremetalhosts"`}},
		{name: "Status with control characters", handler: statusAnswer(http.StatusForbidden, "line one\n\x1b[31mforged line\u202e\r\n"),
			verified: true, want: []string{"line one [31mforged line"}, notWant: []string{"\n", "\x1b", "\u202e"}},
		{name: "Status with a long message", handler: statusAnswer(http.StatusForbidden, long), verified: true,
			want: []string{strings.Repeat("x", maxServerMessageRunes) + "…"}, notWant: []string{strings.Repeat("x", maxServerMessageRunes+1)}},
		{name: "redirect", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/"+marker, http.StatusFound)
		}, verified: true, want: []string{"HTTP 302"}, notWant: []string{marker, "169.254"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := countingServer(t, "127.0.0.1:0", tt.handler)
			c := testHTTPClient(t, srv.URL, &localPolicy, ClientOptions{})
			c.verified.Store(tt.verified)
			err := restGet(t, srv.URL, c, "/apis/metal3.io/v1alpha1/baremetalhosts")
			if err == nil {
				t.Fatal("want an error")
			}
			msg := Classify(srv.URL, err).Message
			t.Logf("condition message: %s", msg)
			for _, want := range tt.want {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not contain %q", msg, want)
				}
			}
			for _, notWant := range append(tt.notWant, marker) {
				if strings.Contains(err.Error(), notWant) || strings.Contains(msg, notWant) {
					t.Errorf("error %q / message %q contains %q", err, msg, notWant)
				}
			}
		})
	}
}

// TestGuardTransportErrors: failures without an HTTP answer are told by
// kind; what the other end sent (a banner, certificate names) is not shown.
func TestGuardTransportErrors(t *testing.T) {
	banner := func(t *testing.T) string {
		t.Helper()
		listener, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = listener.Close() })
		go func() {
			for {
				conn, err := listener.Accept()
				if err != nil {
					return
				}
				// Read the request first, so the banner is its answer.
				_, _ = conn.Read(make([]byte, 4096))
				_, _ = io.WriteString(conn, "SSH-2.0-OpenSSH_"+marker+"\r\n")
				_ = conn.Close()
			}
		}()
		return "http://" + listener.Addr().String()
	}
	closedPort := func(t *testing.T) string {
		t.Helper()
		listener, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := listener.Addr().String()
		_ = listener.Close()
		return "http://" + addr
	}
	wrongCertificate := func(t *testing.T) string {
		t.Helper()
		srv := httptest.NewTLSServer(http.HandlerFunc(ok))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	tests := []struct {
		name    string
		server  func(t *testing.T) string
		want    string
		notWant []string
	}{
		{name: "a service that does not speak HTTP", server: banner, want: "the server does not answer HTTP", notWant: []string{marker, "SSH"}},
		{name: "a closed port", server: closedPort, want: "connection refused"},
		{name: "a certificate the kubeconfig does not trust", server: wrongCertificate,
			want: "not signed by the kubeconfig's certificate authority", notWant: []string{"example.com", "Acme"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := tt.server(t)
			c := testHTTPClient(t, server, &localPolicy, ClientOptions{})
			err := discover(context.Background(), c.HTTPClient, mustServer(t, server))
			ie, ok := AsError(err)
			if !ok || ie.Reason != ReasonUnreachable {
				t.Fatalf("discover = %v, want Unreachable", err)
			}
			t.Logf("condition message: %s", ie.Message)
			if !strings.Contains(ie.Message, tt.want) {
				t.Errorf("message %q does not contain %q", ie.Message, tt.want)
			}
			for _, notWant := range tt.notWant {
				if strings.Contains(ie.Message, notWant) {
					t.Errorf("message %q contains %q", ie.Message, notWant)
				}
			}
		})
	}
}

func mustServer(t *testing.T, raw string) Server {
	t.Helper()
	srv, err := ParseServer(raw)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestDiscoveryHandshake: only an API server's answer passes; everything
// else is judged with one request and reported without its body.
func TestDiscoveryHandshake(t *testing.T) {
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		wantReason string // empty: the handshake passes
		want       string
	}{
		{name: "an API server", handler: apiVersions},
		{name: "a web page", handler: markerPage(http.StatusOK), wantReason: ReasonNotAnAPIServer, want: "HTTP 200"},
		{name: "a forbidding web page", handler: markerPage(http.StatusForbidden), wantReason: ReasonNotAnAPIServer, want: "HTTP 403"},
		{name: "a failing web page", handler: markerPage(http.StatusInternalServerError), wantReason: ReasonNotAnAPIServer, want: "HTTP 500"},
		{name: "a redirect", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:1/"+marker, http.StatusFound)
		}, wantReason: ReasonNotAnAPIServer, want: "a redirect, which the provider does not follow"},
		{name: "JSON that is not an API version list", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"kind":"`+marker+`","versions":["v1"]}`)
		}, wantReason: ReasonNotAnAPIServer, want: "HTTP 200"},
		{name: "credentials rejected", handler: statusAnswer(http.StatusUnauthorized, marker), wantReason: ReasonUnauthorized, want: "HTTP 401"},
		{name: "discovery forbidden", handler: statusAnswer(http.StatusForbidden, marker), wantReason: ReasonForbidden, want: "HTTP 403"},
		{name: "an overloaded API server", handler: statusAnswer(http.StatusServiceUnavailable, marker), wantReason: ReasonUnreachable, want: "HTTP 503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, hits := countingServer(t, "127.0.0.1:0", tt.handler)
			server := srv.URL + "/internal/admin"
			c := testHTTPClient(t, server, &localPolicy, ClientOptions{})
			err := discover(context.Background(), c.HTTPClient, mustServer(t, server))
			if hits.Load() != 1 {
				t.Errorf("the server got %d requests, want exactly 1", hits.Load())
			}
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("discover = %v, want success", err)
				}
				return
			}
			ie, ok := AsError(err)
			if !ok || ie.Reason != tt.wantReason {
				t.Fatalf("discover = %v, want reason %s", err, tt.wantReason)
			}
			t.Logf("condition message: %s", ie.Message)
			for _, want := range []string{tt.want, server} {
				if !strings.Contains(ie.Message, want) {
					t.Errorf("message %q does not contain %q", ie.Message, want)
				}
			}
			if strings.Contains(ie.Message, marker) {
				t.Errorf("message %q shows the server's answer", ie.Message)
			}
		})
	}
}

// TestRedirectsAreJudgedAtDialTime: even a client that follows redirects
// cannot be led by one to an address the policy refuses, and the identity
// client does not follow them at all.
func TestRedirectsAreJudgedAtDialTime(t *testing.T) {
	target, targetHits := countingServer(t, "127.0.0.2:0", ok)
	policy := ServerPolicy{AllowHTTP: true, AllowLoopback: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	tests := []struct {
		name, location, wantRule string
	}{
		{name: "to an address outside the allowed CIDRs", location: target.URL + "/" + marker, wantRule: RuleCIDR},
		{name: "to the metadata address", location: "http://169.254.169.254/latest/meta-data/", wantRule: RuleMetadata},
		{name: "to a metadata host name", location: "http://metadata.google.internal/computeMetadata/v1/", wantRule: RuleMetadata},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			origin, _ := countingServer(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, tt.location, http.StatusFound)
			})
			following := &http.Client{Transport: &http.Transport{DialContext: policy.dialer(time.Second)}}
			resp, err := following.Get(origin.URL) //nolint:noctx // test client
			if err == nil {
				_ = resp.Body.Close()
			}
			var refused *ServerNotAllowedError
			if !errors.As(err, &refused) || refused.Rule != tt.wantRule {
				t.Fatalf("following the redirect: %v, want refusal by %q", err, tt.wantRule)
			}

			id := testHTTPClient(t, origin.URL, &policy, ClientOptions{})
			resp, err = id.HTTPClient.Get(origin.URL) //nolint:noctx // test client
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusFound {
				t.Fatalf("identity client answered %d, want the redirect itself", resp.StatusCode)
			}
		})
	}
	if targetHits.Load() != 0 {
		t.Fatalf("the redirect target got %d requests", targetHits.Load())
	}
}

// TestGuardBoundsCost: bodies are capped, and a server that does not
// answer releases the caller after the request timeout; watches, which
// legitimately stay open, are not cut by it.
func TestGuardBoundsCost(t *testing.T) {
	t.Run("a body over the cap ends in an error", func(t *testing.T) {
		srv, _ := countingServer(t, "127.0.0.1:0", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write(make([]byte, 1<<20))
		})
		c := testHTTPClient(t, srv.URL, &localPolicy, ClientOptions{MaxResponseBytes: 64 << 10})
		resp, err := c.HTTPClient.Get(srv.URL) //nolint:noctx // test client
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		n, err := io.Copy(io.Discard, resp.Body)
		if !errors.Is(err, errResponseTooLarge) || n != 64<<10 {
			t.Fatalf("read %d bytes, %v; want %d bytes and the cap's error", n, err, 64<<10)
		}
	})

	hang := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		if r.URL.Query().Get("watch") == "true" {
			// Events keep coming after the request timeout has passed.
			time.Sleep(600 * time.Millisecond)
			_, _ = io.WriteString(w, "event")
			return
		}
		<-r.Context().Done()
	}
	t.Run("a request the server does not finish times out", func(t *testing.T) {
		srv, _ := countingServer(t, "127.0.0.1:0", hang)
		c := testHTTPClient(t, srv.URL, &localPolicy, ClientOptions{RequestTimeout: 200 * time.Millisecond})
		resp, err := c.HTTPClient.Get(srv.URL + "/api/v1/secrets") //nolint:noctx // test client
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			_ = resp.Body.Close()
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want the request timeout", err)
		}
	})
	t.Run("a watch is not cut by the request timeout", func(t *testing.T) {
		srv, _ := countingServer(t, "127.0.0.1:0", hang)
		c := testHTTPClient(t, srv.URL, &localPolicy, ClientOptions{RequestTimeout: 200 * time.Millisecond})
		resp, err := c.HTTPClient.Get(srv.URL + "/apis/metal3.io/v1alpha1/baremetalhosts?watch=true") //nolint:noctx // test client
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err != nil || string(body) != "event" {
			t.Fatalf("watch read %q, %v; want the event sent after the timeout", body, err)
		}
	})
	// The attack: a tenant's server that answers nothing would hold one
	// reconcile worker per request for the whole request timeout, and so,
	// with enough objects, every worker of the manager.
	t.Run("requests in flight are bounded; a slot is freed when the answer ends", func(t *testing.T) {
		release := make(chan struct{})
		var started atomic.Int64
		srv, served := countingServer(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
			started.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			apiVersions(w, r)
		})
		c := testHTTPClient(t, srv.URL, &localPolicy, ClientOptions{MaxRequestsInFlight: 2, RequestTimeout: 10 * time.Second})
		get := func() error {
			resp, err := c.HTTPClient.Get(srv.URL + "/api") //nolint:noctx // test client
			if err != nil {
				return err
			}
			_, err = io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			return err
		}
		held := make(chan error, 2)
		for range 2 {
			go func() { held <- get() }()
		}
		for started.Load() < 2 {
			time.Sleep(10 * time.Millisecond)
		}
		begin := time.Now()
		err := get()
		if !errors.Is(err, ErrTooManyRequestsInFlight) {
			t.Fatalf("third request: got %v, want ErrTooManyRequestsInFlight", err)
		}
		if waited := time.Since(begin); waited > 5*time.Second {
			t.Errorf("the third request waited %s for a slot; it must give up after about %s", waited, slotWait)
		}
		if got := served.Load(); got != 2 {
			t.Errorf("server saw %d requests, want 2: a request without a slot must not be sent", got)
		}
		close(release)
		for range 2 {
			if err := <-held; err != nil {
				t.Fatal(err)
			}
		}
		if err := get(); err != nil {
			t.Fatalf("after the answers ended, a request must find a slot: %v", err)
		}
	})
}

// BenchmarkGuard measures what the guard adds to a request: one GET of a
// small object from a local server through the same transport, bare and
// guarded (policy checks, request timeout, body cap).
func BenchmarkGuard(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(apiVersions))
	b.Cleanup(srv.Close)
	bare := &http.Transport{DialContext: (&net.Dialer{}).DialContext}
	guarded := &guard{next: bare, policy: &localPolicy, requestTimeout: 5 * time.Second, maxBodyBytes: testMaxResponseBytes, verified: &atomic.Bool{}}
	for _, tc := range []struct {
		name      string
		transport http.RoundTripper
	}{{"bare", bare}, {"guarded", guarded}} {
		b.Run(tc.name, func(b *testing.B) {
			c := &http.Client{Transport: tc.transport}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Get(srv.URL + "/api") //nolint:noctx // benchmark client
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
}
