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
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
)

// TestServerVersion: a workload cluster's version is read through its
// guarded connection; a server that answers without telling gives none,
// one that cannot answer now an error, and one without a kubeconfig the
// cluster's Error.
func TestServerVersion(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		wantGit string
		wantErr bool
	}{
		{name: "a version", status: http.StatusOK, wantGit: "v1.36.3",
			body: `{"major":"1","minor":"36","gitVersion":"v1.36.3","platform":"linux/amd64"}`},
		{name: "a refusal tells nothing", status: http.StatusForbidden,
			body: `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`},
		{name: "nor does a body that is no version", status: http.StatusOK, body: `{"kind":"Unknown"}`},
		{name: "a server that cannot answer now is an error", status: http.StatusServiceUnavailable, wantErr: true,
			body: `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"ServiceUnavailable","code":503}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if r.URL.Path == "/api" {
					_, _ = io.WriteString(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}`)
					return
				}
				if r.URL.Path != "/version" {
					w.WriteHeader(http.StatusNotFound)
					return
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			t.Cleanup(srv.Close)
			store, scheme := newSecretStore(t)
			store.write(t, kubeconfigFor(srv, "token"))
			clusters := newTestClusters(t, store, scheme, kubeguard.ServerPolicy{AllowLoopback: true})
			info, err := clusters.ServerVersion(context.Background(), testCluster)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tt.wantErr)
			}
			got := ""
			if info != nil {
				got = info.GitVersion
			}
			if got != tt.wantGit {
				t.Errorf("version %q, want %q", got, tt.wantGit)
			}
		})
	}

	store, scheme := newSecretStore(t)
	clusters := newTestClusters(t, store, scheme, kubeguard.ServerPolicy{AllowLoopback: true})
	_, err := clusters.ServerVersion(context.Background(), types.NamespacedName{Namespace: "tenant", Name: "none"})
	if _, ok := AsError(err); !ok {
		t.Errorf("a cluster without kubeconfig: %v, want its *Error", err)
	}
}
