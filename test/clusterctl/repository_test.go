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

// Package clusterctl_test checks the provider's packaging the way its users
// consume it: through the clusterctl library (init, generate cluster, move)
// against a local repository built from this tree's release artifacts.
package clusterctl_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/config"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/metal3-io/cluster-api-provider-metal3/internal/release"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

const (
	// metal3Version is the version the local repository publishes us
	// under: the next patch of the release series in metadata.yaml, as
	// CAPI's local-overrides tooling names development builds.
	metal3Version = "v1.14.99"
	// capiVersion is the Cluster API of go.mod, whose components the
	// repository renders from the module's config/.
	capiVersion = "v1.14.2"
	// testImage is the manager image the release names.
	testImage = "registry.example.com/capm3/manager:" + metal3Version
)

// capiProvider is one Cluster API provider the repository serves, rendered
// from the CAPI module as CAPI's own create-local-repository tooling does.
type capiProvider struct {
	label, name, componentsFile, configFolder string
	providerType                              clusterctlv1.ProviderType
}

var capiProviders = []capiProvider{
	{label: "cluster-api", name: "cluster-api", componentsFile: "core-components.yaml",
		configFolder: "core/config/default", providerType: clusterctlv1.CoreProviderType},
	{label: "bootstrap-kubeadm", name: "kubeadm", componentsFile: "bootstrap-components.yaml",
		configFolder: "bootstrap/kubeadm/config/default", providerType: clusterctlv1.BootstrapProviderType},
	{label: "control-plane-kubeadm", name: "kubeadm", componentsFile: "control-plane-components.yaml",
		configFolder: "controlplane/kubeadm/config/default", providerType: clusterctlv1.ControlPlaneProviderType},
}

// repository is a clusterctl repository on disk: our release, built by the
// release package exactly as `make release-manifests` does, and CAPI's core
// and kubeadm providers, rendered from the CAPI module as CAPI's own
// create-local-repository tooling does.
type repository struct {
	dir       string
	providers []repositoryProvider
}

type repositoryProvider struct {
	name         string
	providerType clusterctlv1.ProviderType
	url          string
}

// localRepository builds the repository once for the test.
func localRepository(t *testing.T) *repository {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	repo := &repository{dir: t.TempDir()}

	metal3Dir := filepath.Join(repo.dir, "infrastructure-metal3", metal3Version)
	if _, err := release.Build(release.Options{Root: root, OutDir: metal3Dir, Image: testImage}); err != nil {
		t.Fatalf("build the release: %v", err)
	}
	repo.providers = append(repo.providers, repositoryProvider{
		name: "metal3", providerType: clusterctlv1.InfrastructureProviderType, url: filepath.Join(metal3Dir, release.ComponentsFile),
	})

	capi := testenv.CAPIModuleDir(t)
	metadata, err := os.ReadFile(filepath.Join(capi, "metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range capiProviders {
		resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(capi, p.configFolder))
		if err != nil {
			t.Fatalf("render %s: %v", p.configFolder, err)
		}
		components, err := resMap.AsYaml()
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(repo.dir, p.label, capiVersion)
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string][]byte{p.componentsFile: components, "metadata.yaml": metadata} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		repo.providers = append(repo.providers, repositoryProvider{
			name: p.name, providerType: p.providerType, url: filepath.Join(dir, p.componentsFile),
		})
	}
	return repo
}

// addUpstreamCAPM3 publishes upstream CAPM3's release u in the repository
// beside ours, under the same provider (metal3): clusterctl finds every
// version in infrastructure-metal3/ and installs u with `clusterctl init
// --infrastructure metal3:<u.Version>`, or upgrades from it, reading u's
// own metadata.yaml for u. The files are copied: clusterctl lists the
// versions as directories, which a symbolic link is not.
func (r *repository) addUpstreamCAPM3(t *testing.T, u *testenv.UpstreamRelease) {
	t.Helper()
	dir := filepath.Join(r.dir, "infrastructure-metal3", u.Version)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(u.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, entry := range entries {
		data, err := os.ReadFile(filepath.Join(u.Dir, entry.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, entry.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// config is a fresh clusterctl configuration pointing at the repository
// only, with no variables set and no user overrides.
func (r *repository) config(t *testing.T) *config.MemoryReader {
	t.Helper()
	reader := config.NewMemoryReader()
	for _, p := range r.providers {
		if _, err := reader.AddProvider(p.name, p.providerType, p.url); err != nil {
			t.Fatal(err)
		}
	}
	reader.Set("overridesFolder", filepath.Join(r.dir, "no-overrides"))
	return reader
}

// newClusterctl is a clusterctl client reading its configuration (providers
// and variables) from reader only.
func newClusterctl(t *testing.T, reader *config.MemoryReader) client.Client {
	t.Helper()
	ctx := context.Background()
	cfg, err := config.New(ctx, "", config.InjectReader(reader))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(ctx, "", client.InjectConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
