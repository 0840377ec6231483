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

package release_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/yamlprocessor"
	utilyaml "sigs.k8s.io/cluster-api/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/metal3-io/cluster-api-provider-metal3/internal/release"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// tiltConfig is the part of tilt-provider.json's config the checks below
// use, with Tilt's defaults where it has them.
type tiltConfig struct {
	Image             string   `json:"image"`
	Context           *string  `json:"context"`
	GoMain            *string  `json:"go_main"`
	LiveReloadDeps    []string `json:"live_reload_deps"`
	Label             string   `json:"label"`
	ManagerName       string   `json:"manager_name"`
	KustomizeFolder   *string  `json:"kustomize_folder"`
	KustomizeOptions  []string `json:"kustomize_options"`
	ApplyProviderYaml *bool    `json:"apply_provider_yaml"`
}

// undocumentedTypes are the types of the config keys that Tilt reads but
// whose type Cluster API's tilt.md does not state.
var undocumentedTypes = map[string]string{
	"image":            "string",
	"live_reload_deps": "[]string",
	"version":          "string",
	"context":          "string",
	"name":             "string",
	"manager_name":     "string",
	"kustomize_config": "bool",
}

var (
	// p.get("key"...) in a Tiltfile's enable_provider: p is a provider's config.
	tiltfileGet = regexp.MustCompile(`\bp\.get\("([a-z_]+)"`)
	// "key" in provider_config, provider_config["key"]: load_provider_tilt_files.
	tiltfileIndex = regexp.MustCompile(`"([a-z_]+)"\s+(?:not\s+)?in\s+provider_config|provider_config\["([a-z_]+)"\]`)
	// **key** (Type, default=...): tilt.md's "config fields".
	tiltDocField = regexp.MustCompile(`(?m)^\*\*([a-z_]+)\*\*(?:\s*\(([^,)]+))?`)
)

// tiltKeys is every provider config key a Tilt environment reads, by key:
// where it is read, and its type when tilt.md states it.
type tiltKeys map[string]struct {
	sources []string
	typ     string
}

func (k tiltKeys) add(key, source, typ string) {
	entry := k[key]
	if !slices.Contains(entry.sources, source) {
		entry.sources = append(entry.sources, source)
	}
	if typ != "" {
		entry.typ = map[string]string{"string": "string", "[]string": "[]string", "bool": "bool"}[strings.ToLower(typ)]
	}
	k[key] = entry
}

func (k tiltKeys) addTiltfile(t *testing.T, path, source string) {
	t.Helper()
	tiltfile := readFile(t, path)
	for _, m := range tiltfileGet.FindAllStringSubmatch(tiltfile, -1) {
		k.add(m[1], source, "")
	}
	for _, m := range tiltfileIndex.FindAllStringSubmatch(tiltfile, -1) {
		k.add(m[1]+m[2], source, "")
	}
}

// TestTiltProvider checks tilt-provider.json against the format Cluster
// API's Tilt reads from a provider repository (its Tiltfile and tilt.md, at
// the version of go.mod: tilt-prepare, which is not in the module, reads
// kustomize_folder, kustomize_options, apply_provider_yaml and version,
// which tilt.md documents), and against what Tilt then does with this tree:
// build go_main into the manager, watch live_reload_deps, render the
// kustomize folder, substitute its variables and swap the image of the
// provider's Deployment. No Tilt runs here.
func TestTiltProvider(t *testing.T) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "tilt-provider.yaml")); err == nil {
		t.Fatal("tilt-provider.yaml exists: Tilt would read it, not tilt-provider.json")
	}
	raw := []byte(readFile(t, filepath.Join(root, "tilt-provider.json")))
	var provider struct {
		Name   string         `json:"name"`
		Config map[string]any `json:"config"`
	}
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&provider); err != nil {
		t.Fatalf("tilt-provider.json: %v", err)
	}
	var settings struct {
		Name   string `json:"name"`
		Config struct {
			ConfigFolder string `json:"configFolder"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(root, "clusterctl-settings.json"))), &settings); err != nil {
		t.Fatal(err)
	}

	t.Run("every key is one Tilt reads, of its type", func(t *testing.T) {
		capi := testenv.CAPIModuleDir(t)
		keys := tiltKeys{}
		keys.addTiltfile(t, filepath.Join(capi, "Tiltfile"), "Cluster API's Tiltfile")
		doc := readFile(t, filepath.Join(capi, "docs", "book", "src", "developer", "core", "tilt.md"))
		_, fields, ok := strings.Cut(doc, "#### config fields")
		if !ok {
			t.Fatal("Cluster API's tilt.md has no config fields section")
		}
		fields, _, _ = strings.Cut(fields, "\n## ")
		for _, m := range tiltDocField.FindAllStringSubmatch(fields, -1) {
			keys.add(m[1], "Cluster API's tilt.md", m[2])
		}
		// Upstream CAPM3's own Tiltfile loads provider repositories'
		// tilt-provider.json too, and reads manager_name.
		upstream := testenv.UpstreamCAPM3Source(t)
		keys.addTiltfile(t, filepath.Join(upstream.Dir, "Tiltfile"), "upstream CAPM3 "+upstream.Version+"'s Tiltfile")
		for _, key := range []string{"image", "live_reload_deps", "label", "go_main", "kustomize_folder", "apply_provider_yaml"} {
			if _, ok := keys[key]; !ok {
				t.Fatalf("found no %s among the keys Tilt reads (%v): the format's sources changed", key, keys)
			}
		}
		t.Logf("provider config keys Tilt reads: %v", slices.Sorted(maps.Keys(keys)))
		for key, value := range provider.Config {
			known, ok := keys[key]
			if !ok {
				t.Errorf("%s: no Tilt reads it", key)
				continue
			}
			want := known.typ
			if want == "" {
				want = undocumentedTypes[key]
			}
			if got := jsonType(value); got != want {
				t.Errorf("%s (read by %s): %s, want %q", key, strings.Join(known.sources, ", "), got, want)
			}
		}
	})

	// The checks below read the config as Tilt does, typed.
	var config tiltConfig
	if err := json.Unmarshal(raw, &struct {
		Config *tiltConfig `json:"config"`
	}{&config}); err != nil {
		t.Fatalf("tilt-provider.json: %v", err)
	}
	providerDir := filepath.Join(root, ptr.Deref(config.Context, "."))

	t.Run("name and label are the provider's", func(t *testing.T) {
		// clusterctl names the provider infrastructure-<name>; tilt-prepare
		// derives the Provider object from that label of the Namespace.
		if !strings.HasPrefix(settings.Name, "infrastructure-") || provider.Name != strings.TrimPrefix(settings.Name, "infrastructure-") {
			t.Errorf("name %q; clusterctl-settings.json names the provider %q", provider.Name, settings.Name)
		}
		// The Tilt resources (capm3_binary, capm3_controller) are named as
		// the components are prefixed.
		if config.Label == "" || !strings.HasPrefix(config.ManagerName, strings.ToLower(config.Label)+"-") {
			t.Errorf("label %q: not the prefix of the manager %q", config.Label, config.ManagerName)
		}
	})

	// Tilt runs `go build <go_main>` in the context: a directory builds its
	// package, a file only itself.
	goMain := ptr.Deref(config.GoMain, "main.go")
	mainDir, built := filepath.Join(providerDir, goMain), []string(nil)
	if info, err := os.Stat(mainDir); err != nil {
		t.Fatalf("go_main %s: %v", goMain, err)
	} else if !info.IsDir() {
		mainDir, built = filepath.Dir(mainDir), []string{filepath.Base(mainDir)}
	}
	// The packages of this module the manager is built from, its own last.
	deps := goListDeps(t, providerDir, mainDir)

	t.Run("go_main builds the manager's whole package", func(t *testing.T) {
		pkg := deps[len(deps)-1]
		if built == nil {
			built = pkg.GoFiles
		}
		if pkg.Name != "main" || !slices.Equal(slices.Sorted(slices.Values(built)), slices.Sorted(slices.Values(pkg.GoFiles))) {
			t.Errorf("go build %s compiles %v of package %s %v", goMain, built, pkg.Name, pkg.GoFiles)
		}
	})

	t.Run("live_reload_deps cover what the manager is built from", func(t *testing.T) {
		watches := func(dep, rel string) bool {
			dep = filepath.Clean(dep)
			return dep == "." || rel == dep || strings.HasPrefix(rel, dep+string(filepath.Separator))
		}
		covered := func(rel string) bool {
			return slices.ContainsFunc(config.LiveReloadDeps, func(dep string) bool { return watches(dep, rel) })
		}
		for _, dep := range config.LiveReloadDeps {
			if _, err := os.Stat(filepath.Join(providerDir, dep)); err != nil {
				t.Errorf("live_reload_deps: %v", err)
			}
			// Tilt writes the binary under .tiltbuild/: watching it would
			// rebuild forever.
			if watches(dep, filepath.Join(".tiltbuild", "bin", "manager")) {
				t.Errorf("live_reload_deps: %s covers Tilt's own .tiltbuild/", dep)
			}
		}
		need := []string{"go.mod", "go.sum"}
		for _, pkg := range deps {
			rel, err := filepath.Rel(providerDir, pkg.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if rel != "." {
				need = append(need, rel)
				continue
			}
			// The package at the top: its files one by one.
			need = append(need, slices.Concat(pkg.GoFiles, pkg.EmbedFiles)...)
		}
		for _, rel := range need {
			if !covered(rel) {
				t.Errorf("the manager is built from %s; live_reload_deps %v do not watch it", rel, config.LiveReloadDeps)
			}
		}
	})

	t.Run("the manifests Tilt renders run this image as the manager", func(t *testing.T) {
		if !ptr.Deref(config.ApplyProviderYaml, true) {
			t.Fatal("apply_provider_yaml is false: Tilt would deploy no manager")
		}
		if len(config.KustomizeOptions) > 0 {
			t.Fatalf("kustomize_options %v: this test renders without options", config.KustomizeOptions)
		}
		folder := ptr.Deref(config.KustomizeFolder, "config/default")
		// As tilt-prepare: kustomize build, then envsubst (here with no
		// variable set, so every default applies), then decode.
		resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(providerDir, folder))
		if err != nil {
			t.Fatal(err)
		}
		built, err := resMap.AsYaml()
		if err != nil {
			t.Fatal(err)
		}
		substituted, err := yamlprocessor.NewSimpleProcessor().Process(built, func(string) (string, error) { return "", nil })
		if err != nil {
			t.Fatal(err)
		}
		objs, err := utilyaml.ToUnstructured(substituted)
		if err != nil {
			t.Fatal(err)
		}
		// The objects clusterctl installs from the release
		// (clusterctl-settings.json's configFolder), no more, no less.
		if settings.Config.ConfigFolder != "config/default" {
			t.Fatalf("clusterctl-settings.json's configFolder is %s; release.Components renders config/default", settings.Config.ConfigFolder)
		}
		components, err := release.Components(root, "")
		if err != nil {
			t.Fatal(err)
		}
		released, err := utilyaml.ToUnstructured(components)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := objectKeys(objs), objectKeys(released); !slices.Equal(got, want) {
			t.Errorf("Tilt deploys %v\nthe release installs %v", got, want)
		}
		var managers, namespaces []string
		for i := range objs {
			obj := &objs[i]
			// Tilt applies what it rendered: each object must be what
			// its kind says (a ConfigMap's data strings, ...).
			gvk := obj.GroupVersionKind()
			if scheme.Scheme.Recognizes(gvk) {
				typed, err := scheme.Scheme.New(gvk)
				if err != nil {
					t.Fatal(err)
				}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, typed, true); err != nil {
					t.Errorf("%s %s as Tilt renders it does not decode as a %s: %v", gvk.Kind, obj.GetName(), gvk.Kind, err)
				}
			}
			provider, labelled := obj.GetLabels()["cluster.x-k8s.io/provider"]
			switch {
			case obj.GetKind() == "Namespace" && provider == settings.Name:
				namespaces = append(namespaces, obj.GetName())
			case obj.GetKind() == "Deployment" && labelled:
				managers = append(managers, obj.GetName())
				containers := unstructuredSlice(obj.Object, "spec", "template", "spec", "containers")
				image := ""
				for _, c := range containers {
					if c["name"] == "manager" {
						image, _ = c["image"].(string)
					}
				}
				if imageName(image) != config.Image {
					t.Errorf("Deployment %s: container manager runs %q; Tilt builds %q and swaps only that image", obj.GetName(), image, config.Image)
				}
			}
		}
		if len(namespaces) != 1 {
			t.Errorf("Namespaces labelled cluster.x-k8s.io/provider=%s: %v, want one (tilt-prepare derives the Provider from it)", settings.Name, namespaces)
		}
		if !slices.Equal(managers, []string{config.ManagerName}) {
			t.Errorf("Deployments labelled cluster.x-k8s.io/provider: %v, want [%s] (manager_name)", managers, config.ManagerName)
		}
	})

	t.Run("Tilt's build directory is ignored by git", func(t *testing.T) {
		ignored := false
		for line := range strings.SplitSeq(readFile(t, filepath.Join(root, ".gitignore")), "\n") {
			if strings.Trim(strings.TrimSpace(line), "/") == ".tiltbuild" {
				ignored = true
			}
		}
		if !ignored {
			t.Error(".gitignore does not ignore .tiltbuild/, where Tilt builds the manager in this tree")
		}
	})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// objectKeys lists objects as "Kind namespace/name", sorted.
func objectKeys(objs []unstructured.Unstructured) []string {
	keys := make([]string, 0, len(objs))
	for _, obj := range objs {
		keys = append(keys, obj.GetKind()+" "+obj.GetNamespace()+"/"+obj.GetName())
	}
	slices.Sort(keys)
	return keys
}

// jsonType names a decoded JSON value's type as tilt.md does.
func jsonType(v any) string {
	switch v := v.(type) {
	case string:
		return "string"
	case bool:
		return "bool"
	case []any:
		for _, item := range v {
			if _, ok := item.(string); !ok {
				return fmt.Sprintf("list with a %T", item)
			}
		}
		return "[]string"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// imageName is an image reference without its tag or digest.
func imageName(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

// unstructuredSlice is the list of objects at fields of obj, if any.
func unstructuredSlice(obj map[string]any, fields ...string) []map[string]any {
	var node any = obj
	for _, f := range fields {
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[f]
	}
	items, _ := node.([]any)
	out := make([]map[string]any, 0, len(items))
	for _, item := range items {
		if m, ok := item.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// goPackage is what `go list -json` says of a package.
type goPackage struct {
	Name       string
	Dir        string
	GoFiles    []string
	EmbedFiles []string
	Module     *struct{ Main bool }
}

// goListDeps lists the packages of this module pkg is built from.
func goListDeps(t *testing.T, dir, pkg string) []goPackage {
	t.Helper()
	var ours []goPackage
	for _, p := range runGoList(t, dir, "-deps", pkg) {
		if p.Module != nil && p.Module.Main {
			ours = append(ours, p)
		}
	}
	if len(ours) < 2 {
		t.Fatalf("go list -deps %s: %d packages of this module", pkg, len(ours))
	}
	return ours
}

func runGoList(t *testing.T, dir string, args ...string) []goPackage {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	var pkgs []goPackage
	for decoder := json.NewDecoder(bytes.NewReader(out)); decoder.More(); {
		var p goPackage
		if err := decoder.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}
