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
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard/kubeguardtest"
)

// kubeconfigFor is kubeguardtest's kubeconfig pointed at server, edited by
// mutate if set.
func kubeconfigFor(t *testing.T, server string, mutate func(*clientcmdapi.Config)) []byte {
	t.Helper()
	cfg := kubeguardtest.Config()
	cfg.Clusters["pool"].Server = server
	if mutate != nil {
		mutate(cfg)
	}
	return kubeguardtest.Write(t, cfg)
}

// TestLoadThenConnect: the one path from a tenant's kubeconfig to its
// server refuses each way a kubeconfig or a server can fail, with its own
// reason, at the first step that can tell; a kubeconfig refused by Load
// sends nothing to anyone.
func TestLoadThenConnect(t *testing.T) {
	silent, _ := kubeguardtest.Silent(t)
	tests := []struct {
		name string
		// mutate edits the kubeconfig, which names the test's server.
		mutate func(*clientcmdapi.Config)
		// raw, if set, replaces the kubeconfig; context names its context.
		raw     []byte
		context string
		// inSecret, if set, is the Secret holding the kubeconfig, read
		// under "kubeconfig" or "value" as the callers do.
		inSecret func(kubeconfig []byte) *corev1.Secret
		// policy judges the server; nil: localPolicy.
		policy  *ServerPolicy
		handler http.HandlerFunc
		// connectTimeout bounds Connect; zero: a second.
		connectTimeout time.Duration
		// loadReason is Load's refusal; connectReason Connect's; both
		// empty: connected.
		loadReason, connectReason string
		wantInMsg                 string
	}{
		{name: "a Secret without the key", inSecret: func(k []byte) *corev1.Secret {
			return &corev1.Secret{Data: map[string][]byte{"config": k}}
		}, loadReason: ReasonInvalidKubeconfig, wantInMsg: `"kubeconfig" nor "value"`},
		{name: "a Secret over the size cap", inSecret: func(k []byte) *corev1.Secret {
			return &corev1.Secret{Data: map[string][]byte{"value": k, "padding": make([]byte, MaxSecretSize)}}
		}, loadReason: ReasonInvalidKubeconfig, wantInMsg: "bytes"},
		{name: "not a kubeconfig", raw: []byte("{{{"), loadReason: ReasonInvalidKubeconfig, wantInMsg: "cannot be parsed"},
		{name: "an exec plugin", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["tenant"].Exec = &clientcmdapi.ExecConfig{Command: "sh", APIVersion: "client.authentication.k8s.io/v1"}
		}, loadReason: ReasonInvalidKubeconfig, wantInMsg: "users[tenant].exec"},
		{name: "a context it lacks", context: "north", loadReason: ReasonContextNotFound, wantInMsg: `"north"`},
		{name: "a server the policy refuses", policy: &ServerPolicy{AllowHTTP: true, Flags: "workload"},
			loadReason: ReasonServerNotAllowed, wantInMsg: "--workload-allow-loopback"},
		{name: "the zero policy, the strictest", policy: &ServerPolicy{}, loadReason: ReasonServerNotAllowed, wantInMsg: RuleHTTP},
		{name: "certificate verification turned off", mutate: func(c *clientcmdapi.Config) {
			c.Clusters["pool"].CertificateAuthorityData, c.Clusters["pool"].InsecureSkipTLSVerify = nil, true
		}, loadReason: ReasonServerNotAllowed, wantInMsg: RuleInsecure},
		{name: "a web page", handler: markerPage(http.StatusOK), connectReason: ReasonNotAnAPIServer, wantInMsg: "HTTP 200"},
		{name: "credentials rejected", handler: statusAnswer(http.StatusUnauthorized, marker), connectReason: ReasonUnauthorized, wantInMsg: "HTTP 401"},
		{name: "discovery forbidden", handler: statusAnswer(http.StatusForbidden, marker), connectReason: ReasonForbidden, wantInMsg: "HTTP 403"},
		{name: "an overloaded server", handler: statusAnswer(http.StatusServiceUnavailable, marker), connectReason: ReasonUnreachable, wantInMsg: "HTTP 503"},
		{name: "a server that never answers, within the caller's time", mutate: func(c *clientcmdapi.Config) {
			c.Clusters["pool"].Server = "http://" + silent
		}, connectTimeout: 200 * time.Millisecond, connectReason: ReasonUnreachable, wantInMsg: "no answer in time"},
		{name: "an API server", inSecret: func(k []byte) *corev1.Secret {
			return &corev1.Secret{Data: map[string][]byte{"value": k}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			handler := tt.handler
			if handler == nil {
				handler = apiVersions
			}
			var authorization, userAgent atomic.Value
			srv, hits := countingServer(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
				authorization.Store(r.Header.Get("Authorization"))
				userAgent.Store(r.Header.Get("User-Agent"))
				handler(w, r)
			})
			source := Source{Data: tt.raw, Context: tt.context}
			if source.Data == nil {
				source.Data = kubeconfigFor(t, srv.URL, tt.mutate)
			}
			if tt.inSecret != nil {
				source = Source{Secret: tt.inSecret(source.Data), Keys: []string{"kubeconfig", "value"}, Context: tt.context}
			}
			policy := tt.policy
			if policy == nil {
				policy = &localPolicy
			}

			k, err := Load(source, policy)
			if tt.loadReason != "" {
				assertGuardError(t, err, tt.loadReason, tt.wantInMsg)
				if hits.Load() != 0 {
					t.Errorf("a refused kubeconfig sent %d requests", hits.Load())
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			timeout := tt.connectTimeout
			if timeout == 0 {
				timeout = time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			e, err := k.Connect(ctx, ClientOptions{RequestTimeout: 5 * time.Second, MaxResponseBytes: testMaxResponseBytes, UserAgent: "capm3-test"})
			if tt.connectReason != "" {
				assertGuardError(t, err, tt.connectReason, tt.wantInMsg)
				if strings.Contains(err.Error(), marker) {
					t.Errorf("message %q shows the server's answer", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			defer e.Close()
			if e.Server.Display != srv.URL || hits.Load() != 1 {
				t.Errorf("endpoint of %s after %d requests, want %s after the handshake alone", e.Server.Display, hits.Load(), srv.URL)
			}
			if authorization.Load() != "Bearer abc.def" || userAgent.Load() != "capm3-test" {
				t.Errorf("the handshake carried Authorization %q, User-Agent %q", authorization.Load(), userAgent.Load())
			}
			assertConfigIsGuarded(t, e, srv.URL)
		})
	}
}

// assertConfigIsGuarded: an Endpoint's Config holds no credentials of its
// own, and a client built from it alone still goes through the guard,
// which holds them.
func assertConfigIsGuarded(t *testing.T, e *Endpoint, server string) {
	t.Helper()
	c := e.Config
	if c.BearerToken != "" || c.Username != "" || c.Password != "" || c.Impersonate.UserName != "" || len(c.CAData) > 0 || len(c.CertData) > 0 ||
		len(c.KeyData) > 0 || c.ServerName != "" || c.Insecure || c.Dial != nil || c.Proxy != nil {
		t.Errorf("Endpoint.Config carries credentials or transport settings of its own: %+v", c)
	}
	alone, err := rest.HTTPClientFor(rest.CopyConfig(c))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := alone.Get(server + "/api") //nolint:noctx // test client
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a client built from Endpoint.Config alone got HTTP %d", resp.StatusCode)
	}
	_, err = alone.Get("http://169.254.169.254/latest/meta-data/") //nolint:noctx,bodyclose // test client; refused before any answer
	var refused *ServerNotAllowedError
	if !errors.As(err, &refused) || refused.Rule != RuleMetadata {
		t.Errorf("a client built from Endpoint.Config alone asked a metadata address: %v; want the guard's refusal", err)
	}
}

// TestConnectNeedsLoad: a Kubeconfig built by hand, which no policy
// judged, does not connect; Load without a policy judges by the strictest.
func TestConnectNeedsLoad(t *testing.T) {
	srv, hits := countingServer(t, "127.0.0.1:0", apiVersions)
	_, err := Load(Source{Data: kubeconfigFor(t, srv.URL, nil)}, nil)
	assertGuardError(t, err, ReasonServerNotAllowed, RuleHTTP)
	k, err := parse(kubeconfigFor(t, srv.URL, nil), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Connect(context.Background(), ClientOptions{}); err == nil {
		t.Fatal("a Kubeconfig Load did not return connected")
	}
	if hits.Load() != 0 {
		t.Errorf("it sent %d requests", hits.Load())
	}
}
