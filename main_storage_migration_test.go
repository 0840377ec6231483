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
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// v1beta1OnlyCRDs are the provider's CRDs as releases before v1beta2
// installed them: v1beta1 alone, stored, no conversion.
func v1beta1OnlyCRDs(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range testenv.ProviderCRDs(t) {
		crd.Spec.Conversion = nil
		delete(crd.Annotations, "cert-manager.io/inject-ca-from")
		crd.Spec.Versions = slices.DeleteFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
			return v.Name != "v1beta1"
		})
		if len(crd.Spec.Versions) != 1 {
			t.Fatalf("CRD %s serves no v1beta1", crd.Name)
		}
		crd.Spec.Versions[0].Storage = true
		crds = append(crds, crd)
	}
	return crds
}

// TestStoredObjectsMoveToV1beta2 upgrades an installation that stored
// v1beta1 (this provider before v1beta2) the way `clusterctl upgrade`
// does — the new CRDs, webhooks and manager over objects written in
// v1beta1 — and wants every object rewritten in v1beta2 and every CRD's
// status.storedVersions to be v1beta2 alone, Metal3Data's included (Cluster
// API's migrator cannot find that CRD; without the provider's own
// migration it keeps v1beta1 for ever). Every object reads the same in
// both versions afterwards. The manager runs as shipped, its webhooks and
// /convert routed as cert-manager and the Service would.
func TestStoredObjectsMoveToV1beta2(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme, err := newScheme()
	g.Expect(err).NotTo(HaveOccurred())
	env := testenv.Start(t, testenv.Options{
		Scheme:            scheme,
		CRDs:              v1beta1OnlyCRDs(t),
		CRDDirectoryPaths: []string{testenv.CAPICRDPath(t)},
	})

	// Objects of every kind, written while v1beta1 is stored.
	const namespace = "tenant-a"
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
	root, err := testenv.ModuleRoot()
	g.Expect(err).NotTo(HaveOccurred())
	files, err := filepath.Glob(filepath.Join(root, "api", "v1beta1", "testdata", "samples", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(BeEmpty())
	var written []*unstructured.Unstructured
	for _, file := range files {
		data, err := os.ReadFile(file)
		g.Expect(err).NotTo(HaveOccurred())
		obj := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal(data, &obj.Object)).To(Succeed())
		if obj.GetNamespace() != "" {
			obj.SetNamespace(namespace)
		}
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed(), filepath.Base(file))
		written = append(written, obj)
	}

	// clusterctl upgrade: the new CRDs (v1beta2 stored, both served,
	// conversion through the manager), webhooks, and the new manager.
	shipped := testenv.ShippedProvider(t, nil)
	env.InstallRBAC(t, shipped)
	env.InstallShippedAPI(t, shipped)
	for _, crd := range providerCRDs(g, env) {
		g.Expect(crd.Status.StoredVersions).To(ContainElement("v1beta1"), "%s before the migration", crd.Name)
	}
	webhooks := env.RouteShippedWebhooks(t, shipped)
	path, err := testenv.Manager.Path()
	g.Expect(err).NotTo(HaveOccurred())
	env.RunShipped(t, shipped, path, map[string]string{
		"webhook-port": strconv.Itoa(webhooks.Port), "webhook-cert-dir": webhooks.CertDir,
		"health-addr": testenv.FreeLoopbackAddr(t), "diagnostics-address": "0",
	})

	g.Eventually(func(g Gomega) {
		for _, crd := range providerCRDs(g, env) {
			g.Expect(crd.Status.StoredVersions).To(Equal([]string{"v1beta2"}), crd.Name)
		}
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "every object rewritten in v1beta2")

	for _, obj := range written {
		for _, version := range []string{"v1beta1", "v1beta2"} {
			read := &unstructured.Unstructured{}
			read.SetAPIVersion("infrastructure.cluster.x-k8s.io/" + version)
			read.SetKind(obj.GetKind())
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), read)).To(Succeed(),
				"%s %s as %s", obj.GetKind(), obj.GetName(), version)
		}
		// What a v1beta1 user wrote reads back as written (as the v1beta1
		// types spell it: a duration of 300s reads 5m0s, as it would
		// have through any client).
		read := &unstructured.Unstructured{}
		read.SetGroupVersionKind(obj.GroupVersionKind())
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), read)).To(Succeed())
		g.Expect(typedSpec(g, scheme, read)).To(Equal(typedSpec(g, scheme, obj)),
			"%s %s: v1beta1 spec after the migration", obj.GetKind(), obj.GetName())
	}
}

// typedSpec is obj's spec as its Go type has it.
func typedSpec(g Gomega, scheme *runtime.Scheme, obj *unstructured.Unstructured) any {
	typed, err := scheme.New(obj.GroupVersionKind())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.UnstructuredContent(), typed)).To(Succeed())
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	g.Expect(err).NotTo(HaveOccurred())
	return u["spec"]
}

// providerCRDs are the provider's CRDs as the server has them.
func providerCRDs(g Gomega, env *testenv.Env) []apiextensionsv1.CustomResourceDefinition {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	g.Expect(env.Client.List(context.Background(), crds)).To(Succeed())
	var ours []apiextensionsv1.CustomResourceDefinition
	for _, crd := range crds.Items {
		if crd.Spec.Group == "infrastructure.cluster.x-k8s.io" {
			ours = append(ours, crd)
		}
	}
	g.Expect(ours).To(HaveLen(10))
	return ours
}
