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

package release

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/yamlprocessor"
	utilyaml "sigs.k8s.io/cluster-api/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// repoRoot is the repository's top directory, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestEveryOverlayBuilds: config/ is the single source of every manifest,
// so each of its kustomizations must build.
func TestEveryOverlayBuilds(t *testing.T) {
	root := repoRoot(t)
	var dirs []string
	err := filepath.WalkDir(filepath.Join(root, "config"), func(path string, entry fs.DirEntry, err error) error {
		if err == nil && !entry.IsDir() && entry.Name() == "kustomization.yaml" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 6 {
		t.Fatalf("found only %d kustomizations under config/: %v", len(dirs), dirs)
	}
	for _, dir := range dirs {
		rel, _ := filepath.Rel(root, dir)
		t.Run(rel, func(t *testing.T) {
			resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
			if err != nil {
				t.Fatalf("kustomize build %s: %v", rel, err)
			}
			if resMap.Size() == 0 {
				t.Fatalf("kustomize build %s renders nothing", rel)
			}
		})
	}
}

// components renders the release components and indexes them by kind.
func components(t *testing.T, image string) map[string][]*unstructured.Unstructured {
	t.Helper()
	raw, err := Components(repoRoot(t), image)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := utilyaml.ToUnstructured(raw)
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string][]*unstructured.Unstructured{}
	for i := range objs {
		byKind[objs[i].GetKind()] = append(byKind[objs[i].GetKind()], &objs[i])
	}
	return byKind
}

// TestComponents checks what clusterctl and a cluster need of the
// components: namespace and names, CRD labels, the hardened manager with
// the release's image, the webhook certificate wiring and RBAC.
func TestComponents(t *testing.T) {
	const image = "registry.example.com:5000/team/capm3:v1.14.0"
	byKind := components(t, image)

	for kind, objs := range byKind {
		for _, obj := range objs {
			if kind == "CustomResourceDefinition" || kind == "Namespace" || strings.HasSuffix(kind, "WebhookConfiguration") ||
				strings.HasPrefix(kind, "Cluster") {
				continue
			}
			if obj.GetNamespace() != "capm3-system" || !strings.HasPrefix(obj.GetName(), "capm3-") {
				t.Errorf("%s %s/%s: want namespace capm3-system and prefix capm3-", kind, obj.GetNamespace(), obj.GetName())
			}
		}
	}

	crds := byKind["CustomResourceDefinition"]
	if len(crds) != 10 {
		t.Errorf("%d CRDs, want 10", len(crds))
	}
	for _, crd := range crds {
		labels := crd.GetLabels()
		for key, want := range map[string]string{
			"clusterctl.cluster.x-k8s.io": "", "cluster.x-k8s.io/v1beta1": "v1beta1", "cluster.x-k8s.io/v1beta2": "v1beta2", "cluster.x-k8s.io/provider": "infrastructure-metal3",
		} {
			if got, ok := labels[key]; !ok || got != want {
				t.Errorf("CRD %s: label %s = %q (set %v), want %q", crd.GetName(), key, got, ok, want)
			}
		}
	}

	deployment := &appsv1.Deployment{}
	if len(byKind["Deployment"]) != 1 {
		t.Fatalf("%d Deployments, want 1", len(byKind["Deployment"]))
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(byKind["Deployment"][0].Object, deployment); err != nil {
		t.Fatal(err)
	}
	pod := deployment.Spec.Template.Spec
	manager := pod.Containers[0]
	sc := manager.SecurityContext
	for what, ok := range map[string]bool{
		"the release's image":                    manager.Image == image,
		"pod runAsNonRoot":                       pod.SecurityContext != nil && ptrTrue(pod.SecurityContext.RunAsNonRoot),
		"seccomp RuntimeDefault":                 pod.SecurityContext != nil && pod.SecurityContext.SeccompProfile != nil && pod.SecurityContext.SeccompProfile.Type == "RuntimeDefault",
		"read-only root filesystem":              sc != nil && ptrTrue(sc.ReadOnlyRootFilesystem),
		"no privilege escalation":                sc != nil && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
		"all capabilities dropped":               sc != nil && sc.Capabilities != nil && slices.Contains(sc.Capabilities.Drop, "ALL"),
		"liveness probe on /healthz":             manager.LivenessProbe != nil && manager.LivenessProbe.HTTPGet != nil && manager.LivenessProbe.HTTPGet.Path == "/healthz",
		"readiness probe on /readyz":             manager.ReadinessProbe != nil && manager.ReadinessProbe.HTTPGet != nil && manager.ReadinessProbe.HTTPGet.Path == "/readyz",
		"resource requests and a memory limit":   !manager.Resources.Requests.Cpu().IsZero() && !manager.Resources.Limits.Memory().IsZero(),
		"metrics over HTTPS unless told":         slices.Contains(manager.Args, "--insecure-diagnostics=${CAPM3_INSECURE_DIAGNOSTICS:=false}"),
		"clusterctl variables left intact":       slices.Contains(manager.Args, "--diagnostics-address=${CAPM3_DIAGNOSTICS_ADDRESS:=:8443}"),
		"the certificate's Secret is mounted":    len(pod.Volumes) == 1 && pod.Volumes[0].Secret != nil && pod.Volumes[0].Secret.SecretName == "capm3-webhook-service-cert",
		"the manager's service account is used":  pod.ServiceAccountName == "capm3-manager",
		"runs on control plane nodes if it must": len(pod.Tolerations) > 0,
		"fast track from upstream's ConfigMap":   len(manager.EnvFrom) == 1 && manager.EnvFrom[0].ConfigMapRef != nil && manager.EnvFrom[0].ConfigMapRef.Name == "capm3-capm3fasttrack-configmap",
		"Prometheus scrape annotations":          deployment.Spec.Template.Annotations["prometheus.io/scrape"] == "true" && deployment.Spec.Template.Annotations["prometheus.io/scheme"] == "https",
	} {
		if !ok {
			t.Errorf("manager Deployment: want %s", what)
		}
	}

	certificate := byKind["Certificate"][0]
	dnsNames, _, _ := unstructured.NestedStringSlice(certificate.Object, "spec", "dnsNames")
	secretName, _, _ := unstructured.NestedString(certificate.Object, "spec", "secretName")
	if !slices.Equal(dnsNames, []string{"capm3-webhook-service.capm3-system.svc", "capm3-webhook-service.capm3-system.svc.cluster.local"}) ||
		secretName != "capm3-webhook-service-cert" {
		t.Errorf("serving certificate: dnsNames %v, secretName %q", dnsNames, secretName)
	}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		config := byKind[kind][0]
		if got := config.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != "capm3-system/capm3-serving-cert" {
			t.Errorf("%s: inject-ca-from = %q, want the serving certificate", kind, got)
		}
		webhooks, _, _ := unstructured.NestedSlice(config.Object, "webhooks")
		for _, w := range webhooks {
			service, _, _ := unstructured.NestedStringMap(w.(map[string]any), "clientConfig", "service")
			if service["name"] != "capm3-webhook-service" || service["namespace"] != "capm3-system" {
				t.Errorf("%s: webhook calls service %v", kind, service)
			}
		}
	}

	var aggregated *unstructured.Unstructured
	for _, role := range byKind["ClusterRole"] {
		if role.GetLabels()["cluster.x-k8s.io/aggregate-to-manager"] == "true" {
			aggregated = role
		}
	}
	if aggregated == nil {
		t.Error("no ClusterRole aggregates into Cluster API's manager")
	}
}

func ptrTrue(b *bool) bool { return b != nil && *b }

// TestFastTrackConfigMapSubstituted: clusterctl substitutes the
// components' variables in their text; CAPM3_FAST_TRACK=true must leave the
// ConfigMap a string, as the API server wants ConfigMap data (a bare true
// is a YAML boolean, and the ConfigMap would be refused).
func TestFastTrackConfigMapSubstituted(t *testing.T) {
	for _, value := range []string{"true", "false"} {
		raw, err := Components(repoRoot(t), "")
		if err != nil {
			t.Fatal(err)
		}
		raw, err = yamlprocessor.NewSimpleProcessor().Process(raw, func(name string) (string, error) {
			if name == "CAPM3_FAST_TRACK" {
				return value, nil
			}
			return "", errors.New("unset")
		})
		if err != nil {
			t.Fatal(err)
		}
		objs, err := utilyaml.ToUnstructured(raw)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for i := range objs {
			if objs[i].GetKind() != "ConfigMap" || objs[i].GetName() != "capm3-capm3fasttrack-configmap" {
				continue
			}
			found = true
			cm := &corev1.ConfigMap{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[i].Object, cm); err != nil {
				t.Fatalf("CAPM3_FAST_TRACK=%s: the ConfigMap is not one: %v", value, err)
			}
			if cm.Data["CAPM3_FAST_TRACK"] != value {
				t.Errorf("CAPM3_FAST_TRACK=%s: ConfigMap holds %q", value, cm.Data["CAPM3_FAST_TRACK"])
			}
		}
		if !found {
			t.Fatal("no capm3-capm3fasttrack-configmap in the components")
		}
	}
}

// TestBuildIsDeterministic: two releases of the same tree are identical,
// byte for byte.
func TestBuildIsDeterministic(t *testing.T) {
	root := repoRoot(t)
	first, second := t.TempDir(), t.TempDir()
	names, err := Build(Options{Root: root, OutDir: first, Image: "example.com/capm3:v1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(Options{Root: root, OutDir: second, Image: "example.com/capm3:v1"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{ComponentsFile, MetadataFile, "cluster-template.yaml", "cluster-template-identity.yaml",
		"cluster-template-cluster-identity.yaml", "cluster-template-multi-pool.yaml", "cluster-template-topology.yaml", "clusterclass-metal3.yaml"} {
		if !slices.Contains(names, want) {
			t.Errorf("release lacks %s (has %v)", want, names)
		}
	}
	for _, name := range names {
		a, errA := os.ReadFile(filepath.Join(first, name))
		b, errB := os.ReadFile(filepath.Join(second, name))
		if errA != nil || errB != nil {
			t.Fatalf("read %s: %v %v", name, errA, errB)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds", name)
		}
	}
}

func TestImageEntry(t *testing.T) {
	tests := []struct {
		image   string
		want    types.Image
		wantErr bool
	}{
		{image: "ghcr.io/org/capm3:v1.14.0", want: types.Image{Name: "manager", NewName: "ghcr.io/org/capm3", NewTag: "v1.14.0"}},
		{image: "localhost:5000/capm3:dev", want: types.Image{Name: "manager", NewName: "localhost:5000/capm3", NewTag: "dev"}},
		{image: "localhost:5000/capm3", want: types.Image{Name: "manager", NewName: "localhost:5000/capm3"}},
		{image: "capm3@sha256:abcd", want: types.Image{Name: "manager", NewName: "capm3", Digest: "sha256:abcd"}},
		{image: ":v1", wantErr: true},
		{image: "has space:v1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			got, err := imageEntry(tt.image)
			if (err != nil) != tt.wantErr {
				t.Fatalf("imageEntry(%q) error = %v, want error %v", tt.image, err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Fatalf("imageEntry(%q) = %+v, want %+v", tt.image, got, tt.want)
			}
		})
	}
}
