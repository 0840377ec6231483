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

package main

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// TestMetricsScrapeWithShippedRBAC: the manager, run as its release installs
// it (ServiceAccount, ClusterRole, Deployment arguments: /metrics over
// authenticated HTTPS), answers a scraper whose token may get /metrics, and
// refuses the others. Authenticating a scrape takes a TokenReview and a
// SubjectAccessReview by the manager, which its ClusterRole lacked: every
// scrape was answered 500.
func TestMetricsScrapeWithShippedRBAC(t *testing.T) {
	g := NewWithT(t)
	scheme, err := newScheme()
	g.Expect(err).NotTo(HaveOccurred())
	env := testenv.Start(t, testenv.Options{Scheme: scheme, CRDs: testenv.ProviderCRDs(t), CRDDirectoryPaths: []string{testenv.CAPICRDPath(t)}})
	path, err := testenv.Manager.Path()
	g.Expect(err).NotTo(HaveOccurred())
	metricsAddr := testenv.FreeLoopbackAddr(t)
	env.RunShipped(t, testenv.ShippedProvider(t, nil), path, map[string]string{
		"webhook-port": "0", "health-addr": testenv.FreeLoopbackAddr(t), "diagnostics-address": metricsAddr,
	})

	// Prometheus' ServiceAccount, allowed to get /metrics as docs/metrics.md
	// shows; and one that is not.
	ctx := context.Background()
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "prometheus"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "nobody"}},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "prometheus-metrics-reader"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "monitoring", Name: "prometheus"}},
		},
	} {
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	}
	clientset, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	token := func(account string) string {
		req, err := clientset.CoreV1().ServiceAccounts("monitoring").CreateToken(ctx, account, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return req.Status.Token
	}
	// The endpoint's certificate is self-signed, as CAPI's diagnostics
	// documentation says scrapers must accept.
	httpClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	scrape := func(token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+metricsAddr+"/metrics", http.NoBody)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		return resp.StatusCode, string(body), err
	}

	allowed := token("prometheus")
	g.Eventually(func(g Gomega) {
		code, body, err := scrape(allowed)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(http.StatusOK), "an authorized scrape")
		g.Expect(body).To(ContainSubstring("controller_runtime_reconcile_total"))
	}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())

	code, _, err := scrape(token("nobody"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusForbidden), "a token not allowed to get /metrics")
	code, _, err = scrape("")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusUnauthorized), "no token")
}
