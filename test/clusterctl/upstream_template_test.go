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
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/yamlprocessor"
	utilyaml "sigs.k8s.io/cluster-api/util/yaml"

	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// upstreamLikeFlavors are our flavors built as upstream CAPM3's release
// template is: a Cluster, a KubeadmControlPlane and a MachineDeployment with
// their templates written out (topology's come from its ClusterClass).
var upstreamLikeFlavors = []string{"", "v1beta1", "identity", "cluster-identity", "multi-pool"}

// defaultedHere are the variables upstream's template requires and ours
// default, with why. Any other difference of defaults fails the test.
var defaultedHere = map[string]string{
	"CLUSTER_APIENDPOINT_PORT":      "6443, the API server's usual port",
	"IMAGE_CHECKSUM_TYPE":           "sha256, what images are published with",
	"IMAGE_FORMAT":                  "raw, written to disk as is",
	"CTLPLANE_KUBEADM_EXTRA_CONFIG": "most clusters add nothing",
	"WORKERS_KUBEADM_EXTRA_CONFIG":  "most clusters add nothing",
}

// upstreamVariableValues gives each variable of upstream's template two
// values: the fields a variable lands in are those that change from the
// first to the second. The *_KUBEADM_EXTRA_CONFIG pair is completed from
// upstream's example_variables.rc, what an upstream user would have set.
var upstreamVariableValues = map[string][2]string{
	"CLUSTER_NAME":                {"tenant-a-1", "tenant-a-2"},
	"NAMESPACE":                   {"tenant-a", "tenant-b"},
	"KUBERNETES_VERSION":          {"v1.34.1", "v1.35.0"},
	"CONTROL_PLANE_MACHINE_COUNT": {"7", "5"},
	"WORKER_MACHINE_COUNT":        {"9", "4"},
	"CLUSTER_APIENDPOINT_HOST":    {"192.0.2.10", "192.0.2.11"},
	"CLUSTER_APIENDPOINT_PORT":    {"7443", "8443"},
	"POD_CIDR":                    {`["10.10.0.0/16"]`, `["10.11.0.0/16", "fd00:11::/56"]`},
	"SERVICE_CIDR":                {`["10.20.0.0/16"]`, `["10.21.0.0/16"]`},
	"SERVICE_DOMAIN":              {"tenant-a.local", "tenant-b.local"},
	"NODE_DRAIN_TIMEOUT":          {"321", "0"},
	"IMAGE_URL":                   {"http://192.0.2.1/images/a.qcow2", "http://192.0.2.1/images/b.qcow2"},
	"IMAGE_CHECKSUM":              {"http://192.0.2.1/images/a.qcow2.sha512sum", "http://192.0.2.1/images/b.qcow2.sha512sum"},
	"IMAGE_CHECKSUM_TYPE":         {"sha512", "md5"},
	"IMAGE_FORMAT":                {"qcow2", "raw"},
}

// TestUpstreamTemplateVariables compares our templates with the cluster
// template of upstream CAPM3's release (the version of hack/tools-bin.sh,
// read from the Go module cache): every variable upstream's takes, ours
// take, with upstream's default, and put in the same fields, so that an
// upstream user's variables generate the same cluster here.
func TestUpstreamTemplateVariables(t *testing.T) {
	upstream := testenv.UpstreamCAPM3Source(t)
	templatePath, variablesPath := upstreamReleaseSources(t, upstream.Dir)
	upstreamTemplate := readFile(t, templatePath)
	upstreamVars := variableMap(t, upstreamTemplate)
	t.Logf("upstream CAPM3 %s: %s takes %v", upstream.Version, templatePath, slices.Sorted(maps.Keys(upstreamVars)))

	t.Run("every upstream variable is taken, with upstream's default", func(t *testing.T) {
		for name := range defaultedHere {
			if d, ok := upstreamVars[name]; !ok || d != nil {
				t.Errorf("defaultedHere lists %s, which upstream's template does not require", name)
			}
		}
		for _, flavor := range upstreamLikeFlavors {
			t.Run(flavorName(flavor), func(t *testing.T) {
				ours := variableMap(t, readTemplate(t, flavor))
				for _, name := range slices.Sorted(maps.Keys(upstreamVars)) {
					upstreamDefault := upstreamVars[name]
					ourDefault, taken := ours[name]
					switch {
					case !taken:
						t.Errorf("%s: upstream's template takes it, %s drops it", name, flavorName(flavor))
					case upstreamDefault != nil && (ourDefault == nil || *ourDefault != *upstreamDefault):
						t.Errorf("%s: default %s, upstream's %q", name, describeDefault(ourDefault), *upstreamDefault)
					case upstreamDefault == nil && ourDefault != nil && defaultedHere[name] == "":
						t.Errorf("%s: upstream requires it, %s defaults it to %q (add it to defaultedHere, with why)",
							name, flavorName(flavor), *ourDefault)
					}
				}
				var onlyOurs []string
				for name := range ours {
					if _, ok := upstreamVars[name]; !ok {
						onlyOurs = append(onlyOurs, name)
					}
				}
				slices.Sort(onlyOurs)
				t.Logf("%s also takes %v", flavorName(flavor), onlyOurs)
			})
		}
	})

	t.Run("each lands where upstream puts it", func(t *testing.T) {
		values := maps.Clone(upstreamVariableValues)
		examples := shellExports(readFile(t, variablesPath))
		for _, name := range []string{"CTLPLANE_KUBEADM_EXTRA_CONFIG", "WORKERS_KUBEADM_EXTRA_CONFIG"} {
			if strings.TrimSpace(examples[name]) == "" {
				t.Fatalf("%s sets no %s", variablesPath, name)
			}
			values[name] = [2]string{examples[name], ""}
		}
		for name := range upstreamVars {
			if _, ok := values[name]; !ok {
				t.Fatalf("upstream's template takes %s: give it two values in upstreamVariableValues", name)
			}
		}
		documented := readDocumentedVariables(t)
		for _, flavor := range upstreamLikeFlavors {
			t.Run(flavorName(flavor), func(t *testing.T) {
				ourTemplate := readTemplate(t, flavor)
				// Our flavors' own variables at their README examples.
				base := map[string]string{}
				for name, v := range documented {
					if v.usedBy(flavor) {
						base[name] = v.example
					}
				}
				for name, pair := range values {
					base[name] = pair[0]
				}
				for _, name := range slices.Sorted(maps.Keys(upstreamVars)) {
					// Object names differ on purpose (ours <cluster>-control-plane
					// and <cluster>-md-0, upstream's <cluster> and
					// <cluster>-workers), so CLUSTER_NAME is everywhere
					// in a different form; TestGenerateCluster names
					// every object of every flavor after the cluster.
					if name == "CLUSTER_NAME" {
						continue
					}
					want := footprint(t, upstreamTemplate, base, name, values[name][1])
					if len(want) == 0 {
						t.Fatalf("%s: the test's two values change nothing in upstream's template", name)
					}
					got := footprint(t, ourTemplate, base, name, values[name][1])
					var missing []string
					for _, leaf := range slices.Sorted(maps.Keys(want)) {
						if !got[leaf] {
							missing = append(missing, leaf)
						}
					}
					if len(missing) > 0 {
						t.Errorf("%s: upstream's template sets\n  %s\n%s sets\n  %s", name, strings.Join(missing, "\n  "),
							flavorName(flavor), strings.Join(slices.Sorted(maps.Keys(got)), "\n  "))
					}
				}
			})
		}
	})
}

// upstreamReleaseSources finds the files upstream's `make release-manifests`
// copies into its release as cluster-template.yaml and example_variables.rc.
// A release that assembles its template otherwise fails the test: this test
// would then have to assemble it the same way.
func upstreamReleaseSources(t *testing.T, dir string) (template, variables string) {
	t.Helper()
	recipe := false
	for line := range strings.SplitSeq(readFile(t, filepath.Join(dir, "Makefile")), "\n") {
		if strings.HasPrefix(line, "release-manifests:") {
			recipe = true
			continue
		}
		if !recipe {
			continue
		}
		if !strings.HasPrefix(line, "\t") {
			break
		}
		fields := strings.Fields(line)
		switch {
		case len(fields) == 3 && fields[0] == "cp" && fields[2] == "$(RELEASE_DIR)/cluster-template.yaml":
			template = filepath.Join(dir, fields[1])
		case len(fields) == 3 && fields[0] == "cp" && fields[2] == "$(RELEASE_DIR)/example_variables.rc":
			variables = filepath.Join(dir, fields[1])
		case strings.Contains(line, "cluster-template"):
			t.Fatalf("upstream's release-manifests writes its template otherwise: %q", strings.TrimSpace(line))
		}
	}
	if template == "" || variables == "" {
		t.Fatalf("upstream's Makefile (%s): release-manifests copies no cluster-template.yaml and example_variables.rc", dir)
	}
	return template, variables
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// readTemplate reads a flavor of templates/.
func readTemplate(t *testing.T, flavor string) string {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	name := "cluster-template.yaml"
	if flavor != "" {
		name = "cluster-template-" + flavor + ".yaml"
	}
	return readFile(t, filepath.Join(root, "templates", name))
}

// variableMap is what clusterctl's --list-variables reads from a template:
// each variable, with its default (nil: required).
func variableMap(t *testing.T, template string) map[string]*string {
	t.Helper()
	vars, err := yamlprocessor.NewSimpleProcessor().GetVariableMap([]byte(template))
	if err != nil {
		t.Fatal(err)
	}
	return vars
}

func describeDefault(d *string) string {
	if d == nil {
		return "none"
	}
	return fmt.Sprintf("%q", *d)
}

// footprint is the fields variable name sets in template: the leaves of
// the objects rendered from values that change when name takes alt
// instead. A leaf reads "<kind> <path> = <value>", in upstream's spelling
// (our v1beta2 image.diskFormat is v1beta1's image.format).
func footprint(t *testing.T, template string, values map[string]string, name, alt string) map[string]bool {
	t.Helper()
	first := renderLeaves(t, template, values)
	changed := maps.Clone(values)
	changed[name] = alt
	second := renderLeaves(t, template, changed)
	diff := map[string]bool{}
	for leaf := range first {
		if !second[leaf] {
			diff[leaf] = true
		}
	}
	return diff
}

// renderLeaves renders template as clusterctl does and lists its leaves.
func renderLeaves(t *testing.T, template string, values map[string]string) map[string]bool {
	t.Helper()
	rendered, err := yamlprocessor.NewSimpleProcessor().Process([]byte(template), func(name string) (string, error) {
		if v, ok := values[name]; ok {
			return v, nil
		}
		return "", errors.New("not set")
	})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := utilyaml.ToUnstructured(rendered)
	if err != nil {
		t.Fatalf("rendered template: %v\n%s", err, rendered)
	}
	leaves := map[string]bool{}
	for _, obj := range objs {
		kind := obj.GetKind()
		walkLeaves(obj.Object, "", func(path string, value any) {
			if kind == "Metal3MachineTemplate" && path == "spec.template.spec.image.diskFormat" {
				path = "spec.template.spec.image.format"
			}
			leaves[fmt.Sprintf("%s %s = %v", kind, path, value)] = true
		})
	}
	return leaves
}

func walkLeaves(node any, path string, visit func(path string, value any)) {
	switch n := node.(type) {
	case map[string]any:
		for key, child := range n {
			walkLeaves(child, strings.TrimPrefix(path+"."+key, "."), visit)
		}
	case []any:
		for i, child := range n {
			walkLeaves(child, fmt.Sprintf("%s[%d]", path, i), visit)
		}
	default:
		visit(path, n)
	}
}

// shellExports reads the `export NAME="..."` lines of a shell file as bash
// unquotes them, without running anything: upstream's example variables
// hold command substitutions meant for the nodes.
func shellExports(script string) map[string]string {
	exports := map[string]string{}
	rest := script
	for {
		i := strings.Index(rest, "export ")
		if i < 0 {
			return exports
		}
		rest = rest[i+len("export "):]
		name, value, ok := strings.Cut(rest, "=")
		if !ok || strings.ContainsAny(name, " \t\n") || !strings.HasPrefix(value, `"`) {
			continue
		}
		var b strings.Builder
		j := 1
		for ; j < len(value) && value[j] != '"'; j++ {
			if value[j] == '\\' && j+1 < len(value) {
				switch value[j+1] {
				case '"', '\\', '$', '`':
					j++
				case '\n':
					j++
					continue
				}
			}
			b.WriteByte(value[j])
		}
		exports[name] = b.String()
		rest = value[min(j+1, len(value)):]
	}
}
