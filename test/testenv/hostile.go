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

package testenv

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HostileAPIServer is an API server a tenant runs itself, on an address
// the provider's policy allows, to exhaust the provider: it passes every
// check (discovery handshake, access reviews, BareMetalHost discovery),
// lists no host, and then streams to every watch of BareMetalHosts
// distinct hosts with an annotation of AnnotationBytes each, as fast as
// the provider reads them. Each watch it ends cleanly after
// watchStreamBytes, under the provider's response cap, so that the
// provider watches again from where it was rather than list afresh (which
// would empty its cache): the hosts pile up.
type HostileAPIServer struct {
	*httptest.Server
	// AnnotationBytes is the size of each streamed host's annotation.
	AnnotationBytes int
	// Streamed counts the hosts sent, Watches the watches opened.
	Streamed, Watches atomic.Int64
}

// StartHostileAPIServer starts one until t ends.
func StartHostileAPIServer(t T, annotationBytes int) *HostileAPIServer {
	t.Helper()
	h := &HostileAPIServer{AnnotationBytes: annotationBytes}
	h.Server = httptest.NewTLSServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.Close)
	return h
}

// Kubeconfig is a kubeconfig for it, the hosts in namespace.
func (h *HostileAPIServer) Kubeconfig(namespace string) []byte {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.Certificate().Raw})
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: hostile, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: tenant, user: {token: hostile-token}}]
contexts: [{name: hostile, context: {cluster: hostile, user: tenant, namespace: %s}}]
current-context: hostile
`, h.URL, base64.StdEncoding.EncodeToString(ca), namespace)
}

func (h *HostileAPIServer) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	path := r.URL.Path
	switch {
	case path == "/api":
		_, _ = io.WriteString(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}`)
	case path == "/apis/"+bmov1alpha1.GroupVersion.String():
		list := metav1.APIResourceList{GroupVersion: bmov1alpha1.GroupVersion.String()}
		for _, kind := range []string{"BareMetalHost", "HostClaim", "HardwareData"} {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: strings.ToLower(kind) + "s", Kind: kind, Namespaced: true,
				Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"},
			})
		}
		list.APIResources[2].Name = "hardwaredata"
		_ = json.NewEncoder(w).Encode(list)
	case strings.HasSuffix(path, "/selfsubjectaccessreviews") && r.Method == http.MethodPost:
		// Whatever is asked: allowed.
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{},"status":{"allowed":true}}`)
	case resourceKind(path) != "":
		kind := resourceKind(path)
		switch watch := r.URL.Query().Get("watch"); {
		case (watch == "true" || watch == "1") && kind == "BareMetalHost":
			h.stream(w, r)
		case watch != "":
			<-r.Context().Done() // a quiet watch of the other kinds
		default:
			fmt.Fprintf(w, `{"kind":"%sList","apiVersion":"%s","metadata":{"resourceVersion":"1"},"items":[]}`,
				kind, bmov1alpha1.GroupVersion.String())
		}
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
	}
}

// watchStreamBytes is how much one watch is sent before it ends cleanly.
const watchStreamBytes = 32 << 20

// resourceKind is the kind of the metal3.io resource path names, if any.
func resourceKind(path string) string {
	switch {
	case strings.Contains(path, "/baremetalhosts"):
		return "BareMetalHost"
	case strings.Contains(path, "/hostclaims"):
		return "HostClaim"
	case strings.Contains(path, "/hardwaredata"):
		return "HardwareData"
	}
	return ""
}

// stream sends hosts until the provider closes the watch.
func (h *HostileAPIServer) stream(w http.ResponseWriter, r *http.Request) {
	h.Watches.Add(1)
	flusher, _ := w.(http.Flusher)
	namespace := strings.Split(strings.TrimPrefix(r.URL.Path, "/apis/"+bmov1alpha1.GroupVersion.String()+"/namespaces/"), "/")[0]
	encoder := json.NewEncoder(w)
	if r.URL.Query().Get("sendInitialEvents") == "true" {
		// A watch-list: the initial (empty) list ends with this bookmark.
		_ = encoder.Encode(map[string]any{"type": "BOOKMARK", "object": map[string]any{
			"kind": "BareMetalHost", "apiVersion": bmov1alpha1.GroupVersion.String(),
			"metadata": map[string]any{"resourceVersion": "1", "annotations": map[string]string{"k8s.io/initial-events-end": "true"}},
		}})
	}
	blob := strings.Repeat("h", h.AnnotationBytes)
	for sent := 0; r.Context().Err() == nil && sent < watchStreamBytes; sent += h.AnnotationBytes {
		n := h.Streamed.Add(1)
		host := bmov1alpha1.BareMetalHost{
			TypeMeta: metav1.TypeMeta{Kind: "BareMetalHost", APIVersion: bmov1alpha1.GroupVersion.String()},
			ObjectMeta: metav1.ObjectMeta{
				Namespace: namespace, Name: fmt.Sprintf("hostile-%d", n), UID: "hostile", ResourceVersion: fmt.Sprint(n + 1),
				CreationTimestamp: metav1.NewTime(time.Now()), Annotations: map[string]string{"example.com/blob": blob},
			},
		}
		if err := encoder.Encode(map[string]any{"type": "ADDED", "object": host}); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}
