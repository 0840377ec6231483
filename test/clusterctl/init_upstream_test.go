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

package clusterctl_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// upstreamImagePrefix is the manager image upstream's releases name, up to the tag.
const upstreamImagePrefix = "quay.io/metal3-io/cluster-api-provider-metal3:"

// crdMigrationObserved is the annotation Cluster API's CRD migrator writes
// on each CRD it handled: the CRD generation it observed.
const crdMigrationObserved = "crd-migration.cluster.x-k8s.io/observed-generation"

// TestInitUpstream: `clusterctl init --infrastructure metal3:v1.13.2`
// installs upstream CAPM3 v1.13.2 from the local repository, where it sits
// beside this tree's release under the same provider, as an upgrade test
// starts; and upstream's own manager, run as its Deployment would (its
// ServiceAccount, RBAC and arguments, its webhooks served with the
// release's Certificate), becomes ready and reconciles a Metal3Cluster.
func TestInitUpstream(t *testing.T) {
	ctx := context.Background()
	upstream := testenv.UpstreamCAPM3(t)
	env := testenv.Start(t, testenv.Options{
		Scheme: initScheme(t),
		// cert-manager's API for clusterctl; the Bare Metal Operator's and
		// the Metal3 IPAM's, which upstream's manager watches and users
		// install with those components.
		CRDDirectoryPaths: []string{testenv.CertManagerCRDPath(t), testenv.BMOCRDPath(t), testenv.IPAMCRDPath(t)},
	})
	repo := localRepository(t)
	repo.addUpstreamCAPM3(t, upstream)
	initManagementClusterWith(t, env, repo, "metal3:"+upstream.Version)
	c := env.Client

	t.Run("CRDs established, storing v1beta2", func(t *testing.T) {
		crds := &apiextensionsv1.CustomResourceDefinitionList{}
		if err := c.List(ctx, crds, ctrlclient.MatchingLabels{clusterctlv1.ClusterctlLabel: "", "cluster.x-k8s.io/provider": "infrastructure-metal3"}); err != nil {
			t.Fatal(err)
		}
		// Upstream has no Metal3ClusterIdentity: nine kinds.
		if len(crds.Items) != 9 {
			t.Fatalf("%d CRDs of upstream labelled for clusterctl, want 9", len(crds.Items))
		}
		var unconverted []string
		for _, crd := range crds.Items {
			established := slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
				return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
			})
			// Upstream labels every CRD v1beta2 for the v1beta2 contract,
			// and v1beta1 for v1beta1.
			if !established || crd.Labels["cluster.x-k8s.io/v1beta2"] != "v1beta2" || crd.Labels["cluster.x-k8s.io/v1beta1"] != "v1beta1" {
				t.Errorf("CRD %s: established %v, contract labels %v", crd.Name, established, crd.Labels)
			}
			var served []string
			storage := ""
			for _, v := range crd.Spec.Versions {
				if v.Served {
					served = append(served, v.Name)
				}
				if v.Storage {
					storage = v.Name
				}
			}
			if !slices.Equal(served, []string{"v1beta1", "v1beta2"}) || storage != "v1beta2" {
				t.Errorf("CRD %s: serves %v, stores %q", crd.Name, served, storage)
			}
			conversion := crd.Spec.Conversion
			if conversion == nil || conversion.Strategy == apiextensionsv1.NoneConverter {
				unconverted = append(unconverted, crd.Spec.Names.Kind)
				continue
			}
			if conversion.Strategy != apiextensionsv1.WebhookConverter ||
				conversion.Webhook.ClientConfig.Service == nil || conversion.Webhook.ClientConfig.Service.Name != "capm3-webhook-service" ||
				crd.Annotations["cert-manager.io/inject-ca-from"] != providerNamespace+"/capm3-serving-cert" {
				t.Errorf("CRD %s: conversion %+v, annotations %v", crd.Name, conversion, crd.Annotations)
			}
		}
		// Every kind converts through the webhook but Metal3ClusterTemplate
		// (conversion strategy None: config/crd has no webhook patch for it).
		if !slices.Equal(unconverted, []string{"Metal3ClusterTemplate"}) {
			t.Errorf("kinds without conversion webhook: %v", unconverted)
		}
	})

	t.Run("webhooks configured for cert-manager's CA injection", func(t *testing.T) {
		mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
		validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := c.Get(ctx, ctrlclient.ObjectKey{Name: "capm3-mutating-webhook-configuration"}, mutating); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, ctrlclient.ObjectKey{Name: "capm3-validating-webhook-configuration"}, validating); err != nil {
			t.Fatal(err)
		}
		for name, annotations := range map[string]map[string]string{"mutating": mutating.Annotations, "validating": validating.Annotations} {
			if got := annotations["cert-manager.io/inject-ca-from"]; got != providerNamespace+"/capm3-serving-cert" {
				t.Errorf("%s webhook configuration: inject-ca-from %q", name, got)
			}
		}
		if len(mutating.Webhooks) == 0 || len(validating.Webhooks) == 0 {
			t.Errorf("%d mutating and %d validating webhooks", len(mutating.Webhooks), len(validating.Webhooks))
		}
		certificate := &unstructured.Unstructured{}
		certificate.SetAPIVersion("cert-manager.io/v1")
		certificate.SetKind("Certificate")
		if err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: providerNamespace, Name: "capm3-serving-cert"}, certificate); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("the manager Deployment and the inventory", func(t *testing.T) {
		deployment := &appsv1.Deployment{}
		if err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: providerNamespace, Name: "capm3-controller-manager"}, deployment); err != nil {
			t.Fatal(err)
		}
		manager := deployment.Spec.Template.Spec.Containers[0]
		if manager.Image != upstreamImagePrefix+upstream.Version {
			t.Errorf("manager image %s, want upstream's %s", manager.Image, upstreamImagePrefix+upstream.Version)
		}
		for _, arg := range []string{"--webhook-port=9443", "--diagnostics-address=:8443", "--insecure-diagnostics=false"} {
			if !slices.Contains(manager.Args, arg) {
				t.Errorf("manager args %v lack %s", manager.Args, arg)
			}
		}
		providers := &clusterctlv1.ProviderList{}
		if err := c.List(ctx, providers); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(providers.Items, func(p clusterctlv1.Provider) bool {
			return p.Name == "infrastructure-metal3" && p.Namespace == providerNamespace && p.Version == upstream.Version
		}) {
			t.Errorf("inventory: %+v", providers.Items)
		}
	})
	if t.Failed() {
		return
	}

	start := time.Now()
	manager := env.StartUpstreamCAPM3(t, upstream)
	t.Logf("upstream CAPM3 %s ready in %s", upstream.Version, time.Since(start).Round(time.Millisecond))
	// Cluster API's webhooks have no server here; ours are routed.
	dropUnservedWebhooks(t, env)

	t.Run("healthy", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz"} {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+manager.HealthAddr+path, http.NoBody)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s: %s", path, resp.Status)
			}
		}
	})

	t.Run("its CRD migrator observes its CRDs", func(t *testing.T) {
		g := NewWithT(t)
		// The kinds upstream's main.go hands its CRD migrator, which finds
		// each CRD by the name Cluster API computes from the kind.
		for _, kind := range []string{"metal3clusters", "metal3clustertemplates", "metal3machines", "metal3machinetemplates", "metal3datatemplates"} {
			g.Eventually(func(g Gomega) {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				g.Expect(c.Get(ctx, ctrlclient.ObjectKey{Name: kind + ".infrastructure.cluster.x-k8s.io"}, crd)).To(Succeed())
				g.Expect(crd.Annotations).To(HaveKeyWithValue(crdMigrationObserved, strconv.FormatInt(crd.Generation, 10)))
				g.Expect(crd.Status.StoredVersions).To(Equal([]string{"v1beta2"}))
			}).WithTimeout(time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), kind)
		}
		// Metal3Data is handed to it too, but Cluster API pluralises the
		// kind as metal3data: the migrator never matches metal3datas, the
		// CRD's name (upstream annotates it to skip clusterctl's CRD name
		// check for the same reason), and never migrates its objects.
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(c.Get(ctx, ctrlclient.ObjectKey{Name: "metal3datas.infrastructure.cluster.x-k8s.io"}, crd)).To(Succeed())
		g.Expect(crd.Annotations).NotTo(HaveKey(crdMigrationObserved), "upstream's CRD migrator now handles metal3datas")
	})

	t.Run("it serves its webhooks and reconciles a Metal3Cluster", func(t *testing.T) {
		g := NewWithT(t)
		const namespace, name = "upstream", "cluster-1"
		g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())

		// Its validating webhook refuses a Metal3Cluster without endpoint.
		invalid := metal3Cluster(namespace, "invalid", "")
		err := c.Create(ctx, invalid)
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(And(ContainSubstring("validation.metal3cluster.infrastructure.cluster.x-k8s.io"), ContainSubstring("controlPlaneEndpoint")))

		cluster := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
			"metadata": map[string]any{"namespace": namespace, "name": name},
			"spec": map[string]any{"infrastructureRef": map[string]any{
				"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3Cluster", "name": name,
			}},
		}}
		g.Expect(c.Create(ctx, cluster)).To(Succeed())
		m3c := metal3Cluster(namespace, name, "192.168.111.249")
		m3c.SetLabels(map[string]string{"cluster.x-k8s.io/cluster-name": name})
		m3c.SetOwnerReferences([]metav1.OwnerReference{{
			APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Cluster", Name: name, UID: cluster.GetUID(),
		}})
		g.Expect(c.Create(ctx, m3c)).To(Succeed())
		// Its defaulting webhook set the port.
		port, _, _ := unstructured.NestedInt64(m3c.Object, "spec", "controlPlaneEndpoint", "port")
		g.Expect(port).To(BeEquivalentTo(6443))

		g.Eventually(func(g Gomega) {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(m3c.GroupVersionKind())
			g.Expect(c.Get(ctx, ctrlclient.ObjectKeyFromObject(m3c), got)).To(Succeed())
			provisioned, _, _ := unstructured.NestedBool(got.Object, "status", "initialization", "provisioned")
			g.Expect(provisioned).To(BeTrue(), "status: %v", got.Object["status"])
			g.Expect(got.GetFinalizers()).To(ContainElement("metal3cluster.infrastructure.cluster.x-k8s.io"))
		}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())

		// Read at v1beta1, the object goes through its conversion webhook.
		old := &unstructured.Unstructured{}
		old.SetAPIVersion("infrastructure.cluster.x-k8s.io/v1beta1")
		old.SetKind("Metal3Cluster")
		g.Expect(c.Get(ctx, ctrlclient.ObjectKeyFromObject(m3c), old)).To(Succeed())
		ready, _, _ := unstructured.NestedBool(old.Object, "status", "ready")
		host, _, _ := unstructured.NestedString(old.Object, "spec", "controlPlaneEndpoint", "host")
		g.Expect(ready).To(BeTrue(), "v1beta1 status: %v", old.Object["status"])
		g.Expect(host).To(Equal("192.168.111.249"))
	})
}

// metal3Cluster is an upstream v1beta2 Metal3Cluster with its control
// plane endpoint at host (no port: upstream's webhook defaults it).
func metal3Cluster(namespace, name, host string) *unstructured.Unstructured {
	spec := map[string]any{}
	if host != "" {
		spec["controlPlaneEndpoint"] = map[string]any{"host": host}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Metal3Cluster",
		"metadata": map[string]any{"namespace": namespace, "name": name},
		"spec":     spec,
	}}
}
