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
	"bufio"
	"context"
	"encoding/base64"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/config"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/yamlprocessor"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	infrav1beta1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// flavors are the templates/ flavors; "" is the default one.
var flavors = []string{"", "identity", "cluster-identity", "multi-pool", "topology", "v1beta1"}

func flavorName(flavor string) string {
	if flavor == "" {
		return "default"
	}
	return flavor
}

// documentedVariable is one row of the variables table of templates/README.md.
type documentedVariable struct {
	name     string
	flavors  []string // flavor names, "default" for the default one
	required string   // "yes", "no" or "clusterctl"
	example  string
}

// readDocumentedVariables parses templates/README.md's variables table: the
// documentation is what the tests generate clusters from.
func readDocumentedVariables(t *testing.T) map[string]documentedVariable {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "templates", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	vars := map[string]documentedVariable{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		cells := strings.Split(scanner.Text(), "|")
		if len(cells) != 8 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		cell := func(i int) string { return strings.Trim(strings.TrimSpace(cells[i]), "`") }
		v := documentedVariable{name: cell(1), required: cell(3), example: cell(6)}
		for _, flavor := range strings.Split(cell(2), ",") {
			v.flavors = append(v.flavors, strings.TrimSpace(flavor))
		}
		vars[v.name] = v
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	if len(vars) < 10 {
		t.Fatalf("templates/README.md documents only %d variables", len(vars))
	}
	return vars
}

func (v documentedVariable) usedBy(flavor string) bool {
	return slices.Contains(v.flavors, "all") || slices.Contains(v.flavors, flavorName(flavor))
}

// poolKubeconfig is a kubeconfig as a pool admin hands it to a tenant.
const poolKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: pool-east
  cluster: {server: "https://pool-east.example.com:6443"}
users:
- name: capm3-tenant-a
  user: {token: not-a-real-token}
contexts:
- name: pool-east
  context: {cluster: pool-east, user: capm3-tenant-a, namespace: pool-east}
current-context: pool-east
`

// setExamples gives every documented variable of flavor its example value,
// but those clusterctl sets and those in skip.
func setExamples(reader *config.MemoryReader, vars map[string]documentedVariable, flavor string, skip ...string) {
	for _, v := range vars {
		if v.usedBy(flavor) && v.required != "clusterctl" && !slices.Contains(skip, v.name) {
			reader.Set(v.name, v.example)
		}
	}
	// The examples are placeholders; a real kubeconfig shows the Secret
	// takes what `base64 -w0` gives.
	for _, name := range []string{"POOL_KUBECONFIG_B64", "WORKER_POOL_KUBECONFIG_B64"} {
		if _, ok := vars[name]; ok && vars[name].usedBy(flavor) && !slices.Contains(skip, name) {
			reader.Set(name, base64.StdEncoding.EncodeToString([]byte(poolKubeconfig)))
		}
	}
}

// generate runs `clusterctl generate cluster` for flavor.
func generate(t *testing.T, reader *config.MemoryReader, kubeconfig, flavor string, listOnly bool) (client.Template, error) {
	t.Helper()
	c := newClusterctl(t, reader)
	return c.GetClusterTemplate(context.Background(), client.GetClusterTemplateOptions{
		Kubeconfig: client.Kubeconfig{Path: kubeconfig},
		ProviderRepositorySource: &client.ProviderRepositorySourceOptions{
			InfrastructureProvider: "metal3:" + metal3Version, Flavor: flavor,
		},
		TargetNamespace:          "tenant-a",
		ClusterName:              "tenant-a-1",
		KubernetesVersion:        "v1.34.1",
		ControlPlaneMachineCount: ptr.To[int64](3),
		WorkerMachineCount:       ptr.To[int64](2),
		ListVariablesOnly:        listOnly,
	})
}

// managementAPIServer is an API server holding every CRD the templates use
// (Cluster API core, kubeadm bootstrap and control plane, ours, the Bare
// Metal Operator's, the Metal3 IPAM's), with our webhooks serving. Both
// versions of our kinds are in the scheme: envtest then points the CRDs'
// conversion at the local webhook server, which serves /convert as the
// manager does, for templates written at v1beta1.
func managementAPIServer(t *testing.T) (*testenv.Env, string) {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, infrav1beta1.AddToScheme, infrav1.AddToScheme, bmov1alpha1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	env := testenv.Start(t, testenv.Options{
		Scheme: scheme,
		CRDs:   testenv.ProviderCRDs(t),
		CRDDirectoryPaths: append([]string{testenv.CAPICRDPath(t), testenv.BMOCRDPath(t), testenv.IPAMCRDPath(t)},
			testenv.CAPIKubeadmCRDPaths(t)...),
		WebhookPaths: testenv.ProviderWebhookPaths(t),
	})
	env.ServeProviderWebhooks(t)
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}}); err != nil {
		t.Fatal(err)
	}
	return env, env.WriteKubeconfig(t)
}

// TestGenerateCluster runs `clusterctl generate cluster` for every flavor
// against a management API server holding every CRD involved, with our
// webhooks serving.
func TestGenerateCluster(t *testing.T) {
	env, kubeconfig := managementAPIServer(t)
	documented := readDocumentedVariables(t)
	repo := localRepository(t)

	// templates/README.md lists exactly the variables each flavor uses, and
	// calls required exactly those without a default. The topology flavor
	// includes the variables of the ClusterClass clusterctl adds.
	t.Run("the README documents every variable", func(t *testing.T) {
		reader := repo.config(t)
		for _, flavor := range flavors {
			t.Run(flavorName(flavor), func(t *testing.T) {
				template, err := generate(t, reader, kubeconfig, flavor, true)
				if err != nil {
					t.Fatal(err)
				}
				used := template.VariableMap()
				if flavor == "topology" {
					// clusterctl lists the class's variables only once it
					// renders it; they are the flavor's all the same.
					maps.Copy(used, clusterClassVariables(t))
				}
				var want []string
				for name, v := range documented {
					if v.usedBy(flavor) {
						want = append(want, name)
					}
				}
				slices.Sort(want)
				if got := slices.Sorted(maps.Keys(used)); !slices.Equal(got, want) {
					t.Fatalf("flavor %s uses %v; templates/README.md documents %v", flavorName(flavor), got, want)
				}
				for name, defaultValue := range used {
					v := documented[name]
					hasDefault := defaultValue != nil
					if v.required == "yes" && hasDefault || v.required == "no" && !hasDefault {
						t.Errorf("%s: documented required=%s, but the template gives it a default: %v", name, v.required, hasDefault)
					}
				}
			})
		}
	})

	// Each flavor, with the documented example values, renders YAML that
	// the API server accepts in a server-side dry run.
	t.Run("every flavor renders a valid cluster", func(t *testing.T) {
		for _, flavor := range flavors {
			t.Run(flavorName(flavor), func(t *testing.T) {
				reader := repo.config(t)
				setExamples(reader, documented, flavor)
				template, err := generate(t, reader, kubeconfig, flavor, false)
				if err != nil {
					t.Fatal(err)
				}
				kinds := map[string]int{}
				for _, obj := range template.Objs() {
					kinds[obj.GetKind()]++
					if err := env.Client.Create(context.Background(), &obj, ctrlclient.DryRunAll, ctrlclient.FieldValidation("Strict")); err != nil {
						t.Errorf("server-side dry run of %s %s: %v", obj.GetKind(), obj.GetName(), err)
					}
				}
				want := []string{"Cluster", "Metal3DataTemplate", "Metal3Cluster", "KubeadmControlPlane", "MachineDeployment", "KubeadmConfigTemplate"}
				if flavor == "topology" {
					want = []string{"Cluster", "Metal3DataTemplate", "ClusterClass", "Metal3ClusterTemplate", "KubeadmControlPlaneTemplate", "KubeadmConfigTemplate"}
				}
				for _, kind := range want {
					if kinds[kind] != 1 {
						t.Errorf("%d %s objects, want 1 (%v)", kinds[kind], kind, kinds)
					}
				}
			})
		}
	})

	// A required variable left unset is named by clusterctl's error.
	t.Run("a missing variable is named", func(t *testing.T) {
		for _, flavor := range flavors {
			for name, v := range documented {
				if v.required != "yes" || !v.usedBy(flavor) {
					continue
				}
				t.Run(flavorName(flavor)+"/"+name, func(t *testing.T) {
					reader := repo.config(t)
					setExamples(reader, documented, flavor, name)
					_, err := generate(t, reader, kubeconfig, flavor, false)
					if err == nil || !strings.Contains(err.Error(), name) {
						t.Fatalf("without %s: error %v, want one naming it", name, err)
					}
				})
			}
		}
	})
}

// clusterClassVariables are the clusterctl variables of clusterclass-metal3.yaml.
func clusterClassVariables(t *testing.T) map[string]*string {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "templates", "clusterclass-metal3.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	vars, err := yamlprocessor.NewSimpleProcessor().GetVariableMap(raw)
	if err != nil {
		t.Fatal(err)
	}
	return vars
}
