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
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
)

// providerTokenMarker stands for the provider's own ServiceAccount token:
// with it a tenant would read every Secret of the management cluster.
const providerTokenMarker = "PROVIDER-SERVICEACCOUNT-TOKEN-31c9"

// tenantListener is an https server a tenant runs to catch what the
// provider sends it. It answers as an API server would, so nothing but the
// provider's own checks keeps a request from reaching it, and it counts
// every connection made to it, a TLS handshake included.
type tenantListener struct {
	*httptest.Server
	connections atomic.Int64
}

func startTenantListener(t *testing.T) *tenantListener {
	t.Helper()
	l := &tenantListener{}
	l.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api":
			_, _ = io.WriteString(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}`)
		default:
			_, _ = io.WriteString(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[]}`)
		}
	}))
	l.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			l.connections.Add(1)
		}
	}
	l.StartTLS()
	t.Cleanup(l.Close)
	return l
}

// caData is the PEM of the listener's certificate, which it is signed by.
func (l *tenantListener) caData() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: l.Certificate().Raw})
}

// tenantKubeconfig is a kubeconfig as a tenant writes it into its
// cluster's <cluster>-kubeconfig Secret: server, its CA, and user, the
// YAML of the user's credentials.
func tenantKubeconfig(server string, ca []byte, user string) []byte {
	caLine := ""
	if ca != nil {
		caLine = ", certificate-authority-data: " + base64.StdEncoding.EncodeToString(ca)
	}
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: workload
  cluster: {server: %q%s}
users:
- name: tenant
  user: %s
contexts:
- name: workload
  context: {cluster: workload, user: tenant}
current-context: workload
`, server, caLine, user)
}

// provisionedMachine creates a cluster without a cloud provider, whose
// <cluster>-kubeconfig holds kubeconfig, and one machine whose host is
// provisioned: the provider then wants the workload cluster, to give the
// Node its providerID.
func provisionedMachine(t *testing.T, c client.Client, namespace, name string, kubeconfig []byte) (*infrav1.Metal3Cluster, *infrav1.Metal3Machine) {
	t.Helper()
	g := NewWithT(t)
	cluster := workloadCluster{namespace: namespace, name: name, noCloudProvider: true}
	cluster.create(t, c)
	g.Expect(c.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-kubeconfig",
			Labels: map[string]string{clusterv1.ClusterNameLabel: name}},
		Data: map[string][]byte{"value": kubeconfig},
	})).To(Succeed())
	availableHosts(t, c, namespace, name+"-host", 1)
	m3m := cluster.machine(t, c, name+"-worker", nil)
	var host bmov1alpha1.BareMetalHost
	g.Eventually(func(g Gomega) {
		hosts := consumedHosts(g, c, namespace)
		g.Expect(hosts).To(HaveKey(namespace + "/" + m3m.Name))
		host = hosts[namespace+"/"+m3m.Name]
	}).WithTimeout(30 * time.Second).Should(Succeed())
	setHostState(t, c, &host, bmov1alpha1.StateProvisioned)
	return &infrav1.Metal3Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, m3m
}

func workloadConditionOf(c client.Client, obj client.Object) func() string {
	return func() string {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err.Error()
		}
		cond := conditions.Get(obj.(conditions.Getter), infrav1.WorkloadClusterReachableCondition)
		if cond == nil {
			return ""
		}
		return string(cond.Status) + "/" + cond.Reason + ": " + cond.Message
	}
}

// TestWorkloadKubeconfigIsUntrusted plays a tenant that writes its own
// cluster's <cluster>-kubeconfig Secret, which the provider reads to reach
// the cluster's Nodes. Each case is an attack through that Secret: make
// the provider send its own ServiceAccount token (tokenFile) or other files
// of its own to a listener of the tenant's, run a program (exec), or reach
// loopback or metadata addresses. Each must be refused before anything
// connects, with a condition on the Metal3Machine and its Metal3Cluster
// naming the field or rule and an Event, and the listener must receive no
// connection at all.
func TestWorkloadKubeconfigIsUntrusted(t *testing.T) {
	nsLax, nsStrict := testNamespace(t, "tenant-wk-lax"), testNamespace(t, "tenant-wk-strict")
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	listener := startTenantListener(t)
	dir := t.TempDir()
	// Stand-ins for the provider's own files: its ServiceAccount token, a
	// client certificate and key, a CA bundle.
	providerFile := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	token := providerFile("token", providerTokenMarker)
	cert, key, ca := providerFile("tls.crt", providerTokenMarker), providerFile("tls.key", providerTokenMarker), providerFile("ca.crt", providerTokenMarker)
	execRan := filepath.Join(dir, "exec-ran")

	type attack struct {
		name       string
		kubeconfig []byte
		wantReason string
		wantIn     string
	}
	tests := []struct {
		name, namespace string
		// policy is the workload server policy of the provider.
		policy  kubeguard.ServerPolicy
		attacks []attack
	}{
		{
			// Loopback allowed, as in a lab: only the kubeconfig checks stand
			// between the tenant and the provider's files.
			name: "loopback allowed", namespace: nsLax, policy: kubeguard.ServerPolicy{AllowLoopback: true, Flags: "workload"},
			attacks: []attack{
				{name: "token-file", kubeconfig: tenantKubeconfig(listener.URL, listener.caData(), fmt.Sprintf("{tokenFile: %q}", token)),
					wantReason: infrav1.IdentityInvalidKubeconfigReason, wantIn: "users[tenant].tokenFile"},
				{name: "client-cert-file", kubeconfig: tenantKubeconfig(listener.URL, listener.caData(),
					fmt.Sprintf("{client-certificate: %q, client-key: %q}", cert, key)),
					wantReason: infrav1.IdentityInvalidKubeconfigReason, wantIn: "users[tenant].client-certificate"},
				{name: "ca-file", kubeconfig: []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: workload, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: tenant, user: {token: tenant-token}}]
contexts: [{name: workload, context: {cluster: workload, user: tenant}}]
current-context: workload
`, listener.URL, ca)), wantReason: infrav1.IdentityInvalidKubeconfigReason, wantIn: "clusters[workload].certificate-authority"},
				{name: "exec-plugin", kubeconfig: tenantKubeconfig(listener.URL, listener.caData(), fmt.Sprintf(
					"{exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, %q], interactiveMode: Never}}",
					"touch "+execRan)), wantReason: infrav1.IdentityInvalidKubeconfigReason, wantIn: "users[tenant].exec"},
				{name: "auth-provider", kubeconfig: tenantKubeconfig(listener.URL, listener.caData(), "{auth-provider: {name: oidc}}"),
					wantReason: infrav1.IdentityInvalidKubeconfigReason, wantIn: "users[tenant].auth-provider"},
				{name: "metadata", kubeconfig: tenantKubeconfig("https://169.254.169.254", nil, "{token: tenant-token}"),
					wantReason: infrav1.IdentityServerNotAllowedReason, wantIn: kubeguard.RuleMetadata},
			},
		},
		{
			// The provider's default: the tenant's listener on the provider's
			// own loopback is refused, naming the operator's flag.
			name: "default policy", namespace: nsStrict, policy: kubeguard.ServerPolicy{Flags: "workload"},
			attacks: []attack{
				{name: "loopback", kubeconfig: tenantKubeconfig(listener.URL, listener.caData(), "{token: tenant-token}"),
					wantReason: infrav1.IdentityServerNotAllowedReason, wantIn: "--workload-allow-loopback"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			workloadOpts := testWorkloadOptions()
			workloadOpts.Policy = tt.policy
			startControllersWith(t, mgmt, scheme, fixtureOptions{namespaces: []string{tt.namespace}, remote: testRemoteOptions(), workload: &workloadOpts})
			mgmt.GrantInNamespace(t, tt.namespace, "nobody")

			for _, a := range tt.attacks {
				m3c, m3m := provisionedMachine(t, mgmt.Client, tt.namespace, a.name, a.kubeconfig)
				for _, obj := range []client.Object{m3m, m3c} {
					g.Eventually(workloadConditionOf(mgmt.Client, obj)).WithTimeout(30*time.Second).Should(And(
						HavePrefix("False/"+a.wantReason+": "), ContainSubstrings(a.wantIn, a.name+"-kubeconfig")),
						"%s: %s %s reports the refusal", a.name, obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName())
				}
				g.Expect(m3m.Spec.ProviderID).To(BeEmpty(), "%s: no Node was found through a refused kubeconfig", a.name)
			}
			g.Eventually(func(g Gomega) {
				events := &eventsv1.EventList{}
				g.Expect(mgmt.Client.List(ctx, events, client.InNamespace(tt.namespace))).To(Succeed())
				reasons := map[string]int{}
				for _, e := range events.Items {
					reasons[e.Regarding.Kind+"/"+e.Reason]++
				}
				for _, a := range tt.attacks {
					g.Expect(reasons).To(HaveKey("Metal3Machine/WorkloadCluster"+a.wantReason), a.name)
					g.Expect(reasons).To(HaveKey("Metal3Cluster/WorkloadCluster"+a.wantReason), a.name)
				}
			}).WithTimeout(30*time.Second).Should(Succeed(), "each refusal is told as an Event")

			g.Consistently(listener.connections.Load).WithTimeout(2*time.Second).Should(BeZero(),
				"not one connection reaches the tenant's listener")
			g.Expect(execRan).NotTo(BeAnExistingFile(), "the tenant's exec plugin never runs")
			g.Expect(tenantView(t, mgmt.Client, tt.namespace)).NotTo(ContainSubstring(providerTokenMarker),
				"nothing of the provider's files reaches the tenant")
		})
	}
}

// TestWorkloadServerAnswersAreNotShown: a workload kubeconfig pointing at a
// service that is no API server (an admin console on the provider's
// network) gets one request, the discovery handshake, and the service's
// answer appears in no condition, Event or status field.
func TestWorkloadServerAnswersAreNotShown(t *testing.T) {
	g := NewWithT(t)
	ns := testNamespace(t, "tenant-wk-console")
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	console := httptest.NewUnstartedServer(http.HandlerFunc(markerAnswer(http.StatusOK)))
	var hits atomic.Int64
	console.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		markerAnswer(http.StatusOK)(w, r)
	})
	console.StartTLS()
	t.Cleanup(console.Close)
	workloadOpts := testWorkloadOptions()
	workloadOpts.MinBackoff, workloadOpts.MaxBackoff = 10*time.Minute, 10*time.Minute
	startControllersWith(t, mgmt, scheme, fixtureOptions{namespaces: []string{ns}, remote: testRemoteOptions(), workload: &workloadOpts})
	mgmt.GrantInNamespace(t, ns, "nobody")

	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: console.Certificate().Raw})
	m3c, m3m := provisionedMachine(t, mgmt.Client, ns, "console", tenantKubeconfig(console.URL, ca, "{token: tenant-token}"))
	for _, obj := range []client.Object{m3m, m3c} {
		g.Eventually(workloadConditionOf(mgmt.Client, obj)).WithTimeout(30 * time.Second).Should(And(
			HavePrefix("False/"+infrav1.IdentityNotAnAPIServerReason+": "), ContainSubstring("HTTP 200")))
	}
	g.Consistently(hits.Load).WithTimeout(3*time.Second).Should(Equal(int64(1)),
		"one handshake request, then nothing until the backoff ends")
	g.Expect(tenantView(t, mgmt.Client, ns)).NotTo(ContainSubstring(internalMarker))
}
