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
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
)

var testCluster = types.NamespacedName{Namespace: "tenant", Name: "cluster-a"}

// apiServer answers the discovery handshake and Node lists as a workload
// API server does, and counts the requests reaching it.
func apiServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api" {
			_, _ = io.WriteString(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}`)
			return
		}
		_, _ = io.WriteString(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[]}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func kubeconfigFor(srv *httptest.Server, token string) []byte {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: w, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: u, user: {token: %s}}]
contexts: [{name: w, context: {cluster: w, user: u}}]
current-context: w
`, srv.URL, base64.StdEncoding.EncodeToString(ca), token)
}

// secretStore is the management cluster's Secrets as Clusters reads them:
// metadata from a cache, data from the API server (apiReader), whose reads
// it counts.
type secretStore struct {
	client.Client
	apiReader client.Reader
	apiReads  atomic.Int64
}

func newSecretStore(t *testing.T) (*secretStore, *runtime.Scheme) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	s := &secretStore{}
	s.Client = fake.NewClientBuilder().WithScheme(scheme).Build()
	s.apiReader = interceptor.NewClient(s.Client.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			s.apiReads.Add(1)
			return c.Get(ctx, key, obj, opts...)
		},
	})
	return s, scheme
}

func (s *secretStore) write(t *testing.T, kubeconfig []byte) {
	t.Helper()
	s.writeFor(t, testCluster, kubeconfig)
}

func (s *secretStore) writeFor(t *testing.T, cluster types.NamespacedName, kubeconfig []byte) {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: cluster.Name + "-kubeconfig"}}
	err := s.Get(ctx, client.ObjectKeyFromObject(secret), secret)
	secret.Data = map[string][]byte{"value": kubeconfig}
	if err == nil {
		err = s.Update(ctx, secret)
	} else {
		err = s.Create(ctx, secret)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func newTestClusters(t *testing.T, store *secretStore, scheme *runtime.Scheme, policy kubeguard.ServerPolicy) *Clusters {
	t.Helper()
	c, err := NewClusters(ClustersOptions{
		SecretMetadata: store, SecretReader: store.apiReader, Scheme: scheme, Policy: policy,
		MinBackoff: time.Hour, MaxBackoff: time.Hour, Timeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestClustersConnectOnceAndAnswerFromState: a cluster without a kubeconfig
// costs no API read; one with a good kubeconfig is connected once (one
// handshake), its client reused without reading the Secret again; a
// changed Secret is read and connected again; and a refusal stands until
// the Secret changes, without a request to anyone.
func TestClustersConnectOnceAndAnswerFromState(t *testing.T) {
	ctx := context.Background()
	store, scheme := newSecretStore(t)
	srv, hits := apiServer(t)
	clusters := newTestClusters(t, store, scheme, kubeguard.ServerPolicy{AllowLoopback: true})

	_, err := clusters.Client(ctx, testCluster)
	if we, ok := AsError(err); !ok || we.Reason != infrav1.WorkloadKubeconfigNotFoundReason {
		t.Fatalf("without a Secret: %v, want KubeconfigNotFound", err)
	}
	if store.apiReads.Load() != 0 {
		t.Fatalf("a missing kubeconfig cost %d API reads, want none", store.apiReads.Load())
	}

	store.write(t, kubeconfigFor(srv, "first"))
	for range 3 {
		c, err := clusters.Client(ctx, testCluster)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.List(ctx, &corev1.NodeList{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := store.apiReads.Load(); got != 1 {
		t.Errorf("read the Secret %d times for one connection, want 1", got)
	}
	if got := hits.Load(); got != 4 {
		t.Errorf("server saw %d requests, want the handshake and three lists", got)
	}
	if we, known := clusters.State(testCluster); !known || we != nil {
		t.Errorf("state = %v, %v; want reached", we, known)
	}

	store.write(t, kubeconfigFor(srv, "rotated"))
	if _, err := clusters.Client(ctx, testCluster); err != nil {
		t.Fatal(err)
	}
	if got := store.apiReads.Load(); got != 2 {
		t.Errorf("a changed Secret was read %d times in all, want 2", got)
	}

	store.write(t, []byte("users: [{name: u, user: {tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}}]\n"+
		"clusters: [{name: w, cluster: {server: "+srv.URL+"}}]\ncontexts: [{name: w, context: {cluster: w, user: u}}]\ncurrent-context: w\n"))
	before := hits.Load()
	for range 2 {
		_, err := clusters.Client(ctx, testCluster)
		if we, ok := AsError(err); !ok || we.Reason != kubeguard.ReasonInvalidKubeconfig || !we.Terminal {
			t.Fatalf("tokenFile kubeconfig: %v, want a terminal InvalidKubeconfig", err)
		}
	}
	if got := store.apiReads.Load(); got != 3 {
		t.Errorf("a refused Secret was read %d times in all, want 3: the refusal stands until it changes", got)
	}
	if hits.Load() != before {
		t.Errorf("a refused kubeconfig sent %d requests", hits.Load()-before)
	}
}

// TestClustersBackOffAnUnreachableServer: a server that fails the handshake
// is asked once per backoff, whatever the number of reconciles.
func TestClustersBackOffAnUnreachableServer(t *testing.T) {
	ctx := context.Background()
	store, scheme := newSecretStore(t)
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	clusters := newTestClusters(t, store, scheme, kubeguard.ServerPolicy{AllowLoopback: true})
	store.write(t, kubeconfigFor(srv, "t"))
	for range 5 {
		_, err := clusters.Client(ctx, testCluster)
		if we, ok := AsError(err); !ok || we.Terminal {
			t.Fatalf("got %v, want a workload Error to retry", err)
		}
	}
	if got := hits.Load(); got != 1 {
		t.Errorf("server asked %d times within the backoff, want once", got)
	}
	if d := clusters.RetryAfter(testCluster); d < 50*time.Minute {
		t.Errorf("retry after %s, want the backoff", d)
	}
}
