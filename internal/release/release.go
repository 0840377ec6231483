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

// Package release renders the artifacts clusterctl installs the provider
// from: infrastructure-components.yaml (config/default built with the
// kustomize library, no kustomize binary), metadata.yaml, and the cluster
// templates. The same inputs always give the same bytes.
package release

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/yamlprocessor"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"
)

const (
	// ComponentsFile is the name clusterctl looks for in an infrastructure
	// provider's release.
	ComponentsFile = "infrastructure-components.yaml"
	// MetadataFile maps release series to the Cluster API contract.
	MetadataFile = "metadata.yaml"
	// managerImageName is the image name config/manager/manager.yaml uses,
	// which config/default's images entry (and the release) replaces.
	managerImageName = "manager"
)

// Options say where the repository is, where the artifacts go and which
// manager image they name.
type Options struct {
	// Root is the repository's top directory.
	Root string
	// OutDir receives the artifacts; it is created if missing.
	OutDir string
	// Image is the manager image reference, "registry/name:tag" or
	// "registry/name@sha256:..."; empty keeps config/default's.
	Image string
}

// Build writes every release artifact into OutDir and returns their names,
// sorted.
func Build(opts Options) ([]string, error) {
	components, err := Components(opts.Root, opts.Image)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{ComponentsFile: components}
	metadata, err := os.ReadFile(filepath.Join(opts.Root, MetadataFile))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", MetadataFile, err)
	}
	files[MetadataFile] = metadata
	templates, err := Templates(opts.Root)
	if err != nil {
		return nil, err
	}
	for name, data := range templates {
		files[name] = data
	}

	if err := os.MkdirAll(opts.OutDir, 0o750); err != nil {
		return nil, fmt.Errorf("create %s: %w", opts.OutDir, err)
	}
	names := make([]string, 0, len(files))
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(opts.OutDir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// Components renders config/default with the manager image set to image
// (unless empty), leaving clusterctl's ${VAR} and ${VAR:=default}
// references as they are for clusterctl to substitute.
func Components(root, image string) ([]byte, error) {
	memFS, err := loadConfig(root)
	if err != nil {
		return nil, err
	}
	if image != "" {
		if err := setImage(memFS, "/config/default/kustomization.yaml", image); err != nil {
			return nil, err
		}
	}
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(memFS, "/config/default")
	if err != nil {
		return nil, fmt.Errorf("build config/default: %w", err)
	}
	out, err := resMap.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("render config/default: %w", err)
	}
	return quoteConfigMapVariables(out), nil
}

// quoteConfigMapVariables double-quotes the ConfigMap data values of
// rendered that are one clusterctl variable. kustomize writes
// ${CAPM3_FAST_TRACK:=false} bare, which clusterctl's substitution would
// turn into the YAML boolean false; a ConfigMap's data are strings, and the
// API server would refuse the ConfigMap.
func quoteConfigMapVariables(rendered []byte) []byte {
	docs := strings.Split(string(rendered), "\n---\n")
	for i, doc := range docs {
		lines := strings.Split(doc, "\n")
		if !slices.Contains(lines, "kind: ConfigMap") {
			continue
		}
		inData := false
		for j, line := range lines {
			switch {
			case line == "data:":
				inData = true
			case !strings.HasPrefix(line, "  "):
				inData = false
			case inData:
				key, value, ok := strings.Cut(line, ": ")
				if ok && strings.HasPrefix(value, "${") && strings.HasSuffix(value, "}") && !strings.Contains(value[2:], "${") {
					lines[j] = key + ": " + strconv.Quote(value)
				}
			}
		}
		docs[i] = strings.Join(lines, "\n")
	}
	return []byte(strings.Join(docs, "\n---\n"))
}

// Templates reads the cluster templates clusterctl serves for the release:
// templates/cluster-template*.yaml and templates/clusterclass-*.yaml, each
// checked to be YAML.
func Templates(root string) (map[string][]byte, error) {
	dir := os.DirFS(filepath.Join(root, "templates"))
	entries, err := fs.ReadDir(dir, ".")
	if err != nil {
		return nil, fmt.Errorf("read templates: %w", err)
	}
	templates := map[string][]byte{}
	for _, entry := range entries {
		name := entry.Name()
		if entry.IsDir() || filepath.Ext(name) != ".yaml" ||
			(!strings.HasPrefix(name, "cluster-template") && !strings.HasPrefix(name, "clusterclass-")) {
			continue
		}
		data, err := fs.ReadFile(dir, name)
		if err != nil {
			return nil, fmt.Errorf("read template %s: %w", name, err)
		}
		if err := checkYAML(data); err != nil {
			return nil, fmt.Errorf("template %s: %w", name, err)
		}
		templates[name] = data
	}
	if len(templates) == 0 {
		return nil, errors.New("templates/ holds no cluster-template*.yaml")
	}
	return templates, nil
}

// checkYAML fails on a document that does not parse once clusterctl has
// substituted its variables. A template is YAML only then: a variable may
// stand for whole lines (CTLPLANE_KUBEADM_EXTRA_CONFIG, as in upstream
// CAPM3's template), so each takes its default, or a placeholder when it
// has none.
func checkYAML(data []byte) error {
	processor := yamlprocessor.NewSimpleProcessor()
	variables, err := processor.GetVariableMap(data)
	if err != nil {
		return fmt.Errorf("variables: %w", err)
	}
	data, err = processor.Process(data, func(name string) (string, error) {
		if value := variables[name]; value != nil {
			return *value, nil
		}
		return "placeholder", nil
	})
	if err != nil {
		return fmt.Errorf("substitute variables: %w", err)
	}
	for i, doc := range bytes.Split(data, []byte("\n---")) {
		var v any
		if err := yaml.Unmarshal(doc, &v); err != nil {
			return fmt.Errorf("document %d: %w", i+1, err)
		}
	}
	return nil
}

// loadConfig copies the repository's config/ into an in-memory file system,
// so a release can set its image without touching the work tree.
func loadConfig(root string) (filesys.FileSystem, error) {
	memFS := filesys.MakeFsInMemory()
	configDir := os.DirFS(filepath.Join(root, "config"))
	err := fs.WalkDir(configDir, ".", func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := "/config/" + path
		if entry.IsDir() {
			return memFS.MkdirAll(target)
		}
		data, err := fs.ReadFile(configDir, path)
		if err != nil {
			return err
		}
		return memFS.WriteFile(target, data)
	})
	if err != nil {
		return nil, fmt.Errorf("load config/: %w", err)
	}
	return memFS, nil
}

// setImage points the kustomization's entry for the manager image at image.
func setImage(memFS filesys.FileSystem, path, image string) error {
	raw, err := memFS.ReadFile(path)
	if err != nil {
		return err
	}
	kustomization := &types.Kustomization{}
	if err := kyaml.Unmarshal(raw, kustomization); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	entry, err := imageEntry(image)
	if err != nil {
		return err
	}
	kustomization.Images = slices.DeleteFunc(kustomization.Images, func(i types.Image) bool { return i.Name == managerImageName })
	kustomization.Images = append(kustomization.Images, entry)
	out, err := kyaml.Marshal(kustomization)
	if err != nil {
		return err
	}
	return memFS.WriteFile(path, out)
}

// imageEntry turns "registry[:port]/name:tag" or "name@digest" into a
// kustomize images entry for the manager.
func imageEntry(image string) (types.Image, error) {
	entry := types.Image{Name: managerImageName}
	name := image
	if at := strings.LastIndex(image, "@"); at >= 0 {
		name, entry.Digest = image[:at], image[at+1:]
	} else if colon := strings.LastIndex(image, ":"); colon > strings.LastIndex(image, "/") {
		name, entry.NewTag = image[:colon], image[colon+1:]
	}
	if name == "" || strings.ContainsAny(name, " \t\n") {
		return types.Image{}, fmt.Errorf("image %q is not an image reference", image)
	}
	entry.NewName = name
	return entry, nil
}
