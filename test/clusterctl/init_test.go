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
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

const providerNamespace = "capm3-system"

// initManagementCluster runs `clusterctl init --infrastructure metal3` (with
// CAPI's core and kubeadm providers, clusterctl's defaults) against a fresh
// API server. cert-manager's CRDs are there first: clusterctl then finds
// cert-manager's API and installs nothing of it (which it would download).
func initManagementCluster(t *testing.T, env *testenv.Env, repo *repository) {
	t.Helper()
	initManagementClusterWith(t, env, repo, "metal3:"+metal3Version)
}

// initManagementClusterWith is initManagementCluster with infrastructure
// ("metal3:<version>") for the infrastructure provider.
func initManagementClusterWith(t *testing.T, env *testenv.Env, repo *repository, infrastructure string) {
	t.Helper()
	clusterctlLogged.Lock()
	defer clusterctlLogged.Unlock()
	c := newClusterctl(t, repo.config(t))
	if _, err := c.Init(context.Background(), client.InitOptions{
		Kubeconfig:              client.Kubeconfig{Path: env.WriteKubeconfig(t)},
		CoreProvider:            "cluster-api:" + capiVersion,
		BootstrapProviders:      []string{"kubeadm:" + capiVersion},
		ControlPlaneProviders:   []string{"kubeadm:" + capiVersion},
		InfrastructureProviders: []string{infrastructure},
	}); err != nil {
		t.Fatalf("clusterctl init: %v", err)
	}
}

func initScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, clusterctlv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

// TestInit: clusterctl init installs the provider from this tree's release:
// CRDs established and labelled for clusterctl, RBAC, the manager with the
// release's image, the webhook configurations wired for cert-manager's CA
// injection, and the provider recorded in clusterctl's inventory.
func TestInit(t *testing.T) {
	ctx := context.Background()
	env := testenv.Start(t, testenv.Options{Scheme: initScheme(t), CRDDirectoryPaths: []string{testenv.CertManagerCRDPath(t)}})
	initManagementCluster(t, env, localRepository(t))
	c := env.Client

	t.Run("CRDs established and labelled", func(t *testing.T) {
		crds := &apiextensionsv1.CustomResourceDefinitionList{}
		if err := c.List(ctx, crds, ctrlclient.MatchingLabels{clusterctlv1.ClusterctlLabel: "", "cluster.x-k8s.io/provider": "infrastructure-metal3"}); err != nil {
			t.Fatal(err)
		}
		// Nine namespaced kinds and the cluster-scoped Metal3ClusterIdentity.
		if len(crds.Items) != 10 {
			t.Fatalf("%d CRDs of ours labelled for clusterctl, want 10", len(crds.Items))
		}
		for _, crd := range crds.Items {
			established := slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
				return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
			})
			// v1beta2, the storage version, implements the v1beta2
			// contract and v1beta1 the v1beta1 contract, as upstream labels
			// them (metadata.yaml agrees).
			if !established || crd.Labels["cluster.x-k8s.io/v1beta2"] != "v1beta2" || crd.Labels["cluster.x-k8s.io/v1beta1"] != "v1beta1" {
				t.Errorf("CRD %s: established %v, contract labels %v", crd.Name, established, crd.Labels)
			}
		}
	})

	t.Run("RBAC", func(t *testing.T) {
		binding := &rbacv1.ClusterRoleBinding{}
		if err := c.Get(ctx, ctrlclient.ObjectKey{Name: "capm3-manager-rolebinding"}, binding); err != nil {
			t.Fatal(err)
		}
		if binding.RoleRef.Name != "capm3-manager-role" || len(binding.Subjects) != 1 ||
			binding.Subjects[0].Name != "capm3-manager" || binding.Subjects[0].Namespace != providerNamespace {
			t.Errorf("manager role binding: %+v", binding)
		}
		// Cluster API's core and kubeadm control plane managers aggregate
		// our role: their aggregation rules select it. (Filling in the
		// rules is kube-controller-manager's work, not run here.)
		ours := &rbacv1.ClusterRole{}
		if err := c.Get(ctx, ctrlclient.ObjectKey{Name: "capm3-aggregated-capi-role"}, ours); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(ours.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "metal3machinetemplates") }) {
			t.Errorf("our aggregated role does not grant our kinds: %+v", ours.Rules)
		}
		for _, name := range []string{"capi-aggregated-manager-role", "capi-kubeadm-control-plane-aggregated-manager-role"} {
			theirs := &rbacv1.ClusterRole{}
			if err := c.Get(ctx, ctrlclient.ObjectKey{Name: name}, theirs); err != nil {
				t.Fatal(err)
			}
			if theirs.AggregationRule == nil || !slices.ContainsFunc(theirs.AggregationRule.ClusterRoleSelectors, func(s metav1.LabelSelector) bool {
				selector, err := metav1.LabelSelectorAsSelector(&s)
				return err == nil && selector.Matches(labels.Set(ours.Labels))
			}) {
				t.Errorf("%s does not aggregate %s (labels %v)", name, ours.Name, ours.Labels)
			}
		}
	})

	t.Run("the manager Deployment", func(t *testing.T) {
		deployment := &appsv1.Deployment{}
		if err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: providerNamespace, Name: "capm3-controller-manager"}, deployment); err != nil {
			t.Fatal(err)
		}
		manager := deployment.Spec.Template.Spec.Containers[0]
		if manager.Image != testImage {
			t.Errorf("manager image %s, want the release's %s", manager.Image, testImage)
		}
		// clusterctl substituted the variables, defaults included.
		for _, arg := range []string{"--diagnostics-address=:8443", "--insecure-diagnostics=false", `--identity-allowed-cidrs=""`} {
			if !slices.Contains(manager.Args, arg) {
				t.Errorf("manager args %v lack %s", manager.Args, arg)
			}
		}
	})

	t.Run("webhooks wired for cert-manager's CA injection", func(t *testing.T) {
		certificate := &unstructured.Unstructured{}
		certificate.SetGroupVersionKind(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"})
		if err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: providerNamespace, Name: "capm3-serving-cert"}, certificate); err != nil {
			t.Fatal(err)
		}
		secretName, _, _ := unstructured.NestedString(certificate.Object, "spec", "secretName")
		dnsNames, _, _ := unstructured.NestedStringSlice(certificate.Object, "spec", "dnsNames")
		service := &corev1.Service{}
		if err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: providerNamespace, Name: "capm3-webhook-service"}, service); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(dnsNames, service.Name+"."+service.Namespace+".svc") {
			t.Errorf("certificate dnsNames %v do not name the webhook Service", dnsNames)
		}
		deployment := &appsv1.Deployment{}
		if err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: providerNamespace, Name: "capm3-controller-manager"}, deployment); err != nil {
			t.Fatal(err)
		}
		if volumes := deployment.Spec.Template.Spec.Volumes; len(volumes) != 1 || volumes[0].Secret == nil || volumes[0].Secret.SecretName != secretName {
			t.Errorf("the manager does not mount the certificate's Secret %q: %+v", secretName, volumes)
		}

		mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
		validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := c.Get(ctx, ctrlclient.ObjectKey{Name: "capm3-mutating-webhook-configuration"}, mutating); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, ctrlclient.ObjectKey{Name: "capm3-validating-webhook-configuration"}, validating); err != nil {
			t.Fatal(err)
		}
		want := providerNamespace + "/" + certificate.GetName()
		var services []*admissionregistrationv1.ServiceReference
		for _, w := range mutating.Webhooks {
			services = append(services, w.ClientConfig.Service)
		}
		for _, w := range validating.Webhooks {
			services = append(services, w.ClientConfig.Service)
		}
		for name, annotations := range map[string]map[string]string{"mutating": mutating.Annotations, "validating": validating.Annotations} {
			if got := annotations["cert-manager.io/inject-ca-from"]; got != want {
				t.Errorf("%s webhook configuration: inject-ca-from %q, want %q", name, got, want)
			}
		}
		for _, s := range services {
			if s == nil || s.Name != service.Name || s.Namespace != service.Namespace || !strings.HasPrefix(*s.Path, "/") {
				t.Errorf("a webhook does not call the provider's Service: %+v", s)
			}
		}
	})

	t.Run("clusterctl's inventory", func(t *testing.T) {
		providers := &clusterctlv1.ProviderList{}
		if err := c.List(ctx, providers); err != nil {
			t.Fatal(err)
		}
		found := slices.ContainsFunc(providers.Items, func(p clusterctlv1.Provider) bool {
			return p.Name == "infrastructure-metal3" && p.Namespace == providerNamespace && p.Version == metal3Version &&
				p.Type == string(clusterctlv1.InfrastructureProviderType)
		})
		if !found {
			t.Errorf("inventory: %+v", providers.Items)
		}
	})
}
