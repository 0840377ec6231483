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

package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// internalMarker stands for what a service inside the provider's network
// answers; a tenant must never read it back.
const internalMarker = "INTERNAL-SERVICE-MARKER-5b2e"

// markerService is a plain-http service on loopback, as an admin console or
// a metadata endpoint would be, that answers every path with the marker and
// counts the requests reaching it.
type markerService struct {
	*httptest.Server
	hits atomic.Int64
}

func startMarkerService(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *markerService {
	t.Helper()
	s := &markerService{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		answer(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func markerAnswer(code int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "<html><body>"+internalMarker+"</body></html>")
	}
}

// hostileKubeconfig points at server with a path prefix, as a tenant probing
// the provider's network would write it.
func hostileKubeconfig(server string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: internal
  cluster: {server: %q}
users:
- name: tenant
  user: {token: tenant-token}
contexts:
- name: internal
  context: {cluster: internal, user: tenant, namespace: pool}
current-context: internal
`, server+"/internal/admin")
}

// TestIdentityServerPolicy plays a hostile tenant whose identities point at
// plain-http services on the provider's own loopback, answering 403, 200
// and a 302 to a second service. With the default policy not one request
// reaches them; with http and loopback allowed, the discovery handshake
// refuses each after a single request per backoff period. Either way the
// services' answers appear in no condition, Event or status field.
func TestIdentityServerPolicy(t *testing.T) {
	nsTenantStrict, nsTenantLax := testNamespace(t, "tenant-strict"), testNamespace(t, "tenant-lax")
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, noHosts)
	redirectTarget := startMarkerService(t, markerAnswer(http.StatusOK))
	services := map[string]*markerService{
		"forbidden": startMarkerService(t, markerAnswer(http.StatusForbidden)),
		"ok":        startMarkerService(t, markerAnswer(http.StatusOK)),
		"redirect": startMarkerService(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, redirectTarget.URL+"/"+internalMarker, http.StatusFound)
		}),
	}

	tests := []struct {
		name, namespace string
		policy          kubeguard.ServerPolicy
		wantReason      string
		// wantHits is how many requests each service gets: none, or the one
		// handshake request within a backoff longer than the test.
		wantHits int64
		want     func(name string, svc *markerService) []string
	}{
		{
			name: "tenant-strict", namespace: nsTenantStrict, wantReason: infrav1.IdentityServerNotAllowedReason, wantHits: 0,
			want: func(_ string, svc *markerService) []string {
				return []string{svc.URL + "/internal/admin", "nothing was sent to it", kubeguard.RuleHTTP}
			},
		},
		{
			name: "tenant-lax", namespace: nsTenantLax, policy: kubeguard.ServerPolicy{AllowHTTP: true, AllowLoopback: true},
			wantReason: infrav1.IdentityNotAnAPIServerReason, wantHits: 1,
			want: func(name string, svc *markerService) []string {
				code := map[string]string{"forbidden": "HTTP 403", "ok": "HTTP 200", "redirect": "HTTP 302"}[name]
				return []string{svc.URL + "/internal/admin", code}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			opts := testRemoteOptions()
			opts.Policy = tt.policy
			opts.MinBackoff, opts.MaxBackoff = 10*time.Minute, 10*time.Minute
			startControllersWith(t, mgmt, scheme, fixtureOptions{namespaces: []string{tt.namespace}, remote: opts})
			mgmt.GrantInNamespace(t, tt.namespace, "nobody")

			var objects []client.Object
			for name, svc := range services {
				g.Expect(mgmt.Client.Create(ctx, testenv.IdentitySecret(tt.namespace, name+"-kubeconfig", hostileKubeconfig(svc.URL)))).To(Succeed())
				wc := workloadCluster{namespace: tt.namespace, name: name, identityRef: &infrav1.IdentityRef{Name: name + "-kubeconfig"}}
				wc.create(t, mgmt.Client)
				// A machine naming the identity itself reports it too.
				m3m := wc.machine(t, mgmt.Client, name+"-worker", func(m *infrav1.Metal3Machine) {
					m.Spec.IdentityRef = &infrav1.IdentityRef{Name: name + "-kubeconfig"}
				})
				m3c := &infrav1.Metal3Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: tt.namespace, Name: name}}
				objects = append(objects, m3c, m3m)
				for _, obj := range []client.Object{m3c, m3m} {
					g.Eventually(identityConditionOf(mgmt.Client, obj)).WithTimeout(30*time.Second).Should(And(
						HavePrefix("False/"+tt.wantReason+": "), ContainSubstrings(tt.want(name, svc)...)),
						"%s %s reports the refusal", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName())
				}
			}
			g.Eventually(func(g Gomega) {
				events := &eventsv1.EventList{}
				g.Expect(mgmt.Client.List(ctx, events, client.InNamespace(tt.namespace))).To(Succeed())
				reasons := map[string]int{}
				for _, e := range events.Items {
					reasons[e.Regarding.Kind+"/"+e.Reason]++
				}
				g.Expect(reasons).To(HaveKeyWithValue("Metal3Cluster/Identity"+tt.wantReason, len(services)))
				g.Expect(reasons).To(HaveKeyWithValue("Metal3Machine/Identity"+tt.wantReason, len(services)))
			}).WithTimeout(30*time.Second).Should(Succeed(), "each object tells its identity's failure once, as an Event")

			// Nudge every object to reconcile again: within the backoff, no
			// new request leaves for the services.
			for _, obj := range objects {
				update(t, mgmt.Client, obj, func() {
					annotations := obj.GetAnnotations()
					if annotations == nil {
						annotations = map[string]string{}
					}
					annotations["test.metal3.io/nudge"] = time.Now().String()
					obj.SetAnnotations(annotations)
				})
			}
			g.Consistently(func(g Gomega) {
				for name, svc := range services {
					g.Expect(svc.hits.Load()).To(Equal(tt.wantHits), "requests reaching the %s service", name)
				}
				g.Expect(redirectTarget.hits.Load()).To(BeZero(), "the redirect is never followed")
			}).WithTimeout(3 * time.Second).Should(Succeed())

			g.Expect(tenantView(t, mgmt.Client, tt.namespace)).NotTo(ContainSubstring(internalMarker),
				"no condition, Event or status field shows what the services answered")
		})
	}
}

// ContainSubstrings matches a string containing every one of subs.
func ContainSubstrings(subs ...string) OmegaMatcher {
	matchers := make([]OmegaMatcher, 0, len(subs))
	for _, s := range subs {
		matchers = append(matchers, ContainSubstring(s))
	}
	return And(matchers...)
}

func identityConditionOf(c client.Client, obj client.Object) func() string {
	return func() string {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err.Error()
		}
		getter, ok := obj.(conditions.Getter)
		if !ok {
			return "no conditions"
		}
		cond := conditions.Get(getter, infrav1.IdentityReadyCondition)
		if cond == nil {
			return ""
		}
		return string(cond.Status) + "/" + cond.Reason + ": " + cond.Message
	}
}

// tenantView is everything the tenant can read about its objects in
// namespace, as JSON: Metal3Clusters and Metal3Machines (spec, status and
// conditions) and both kinds of Events.
func tenantView(t *testing.T, c client.Client, namespace string) string {
	t.Helper()
	var b strings.Builder
	for _, list := range []client.ObjectList{
		&infrav1.Metal3ClusterList{}, &infrav1.Metal3MachineList{}, &eventsv1.EventList{}, &corev1.EventList{},
	} {
		if err := c.List(context.Background(), list, client.InNamespace(namespace)); err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(raw)
	}
	return b.String()
}
