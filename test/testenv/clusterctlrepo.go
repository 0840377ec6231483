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

package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	clusterctlclient "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/config"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/metal3-io/cluster-api-provider-metal3/internal/release"
)

// ClusterctlRelease is the version a ClusterctlRepository publishes this
// tree's release under: the next patch of the release series in
// metadata.yaml, as Cluster API's local-overrides tooling names
// development builds.
const ClusterctlRelease = "v1.14.99"

// clusterctlImage is the manager image the repository's release names.
const clusterctlImage = "registry.example.com/capm3/manager:" + ClusterctlRelease

// ClusterctlRepository is a clusterctl local repository on disk, as users
// point clusterctl at a release: this tree's release as metal3
// ClusterctlRelease, built by the release package exactly as `make
// release-manifests` does; Cluster API's core and kubeadm providers at the
// version of go.mod, rendered from the module's config/ as Cluster API's
// create-local-repository tooling does; and, with AddUpstreamCAPM3,
// upstream CAPM3 releases beside ours under the same provider name.
type ClusterctlRepository struct {
	// Dir is the repository's root.
	Dir string
	// CAPIVersion is the Cluster API version it publishes (go.mod's).
	CAPIVersion string
	providers   []clusterctlRepositoryProvider
}

type clusterctlRepositoryProvider struct {
	name         string
	providerType clusterctlv1.ProviderType
	url          string
}

// clusterctlCAPIProviders are Cluster API's providers the repository
// serves, with where their kustomizations are in the module.
var clusterctlCAPIProviders = []struct {
	label, name, componentsFile, configFolder string
	providerType                              clusterctlv1.ProviderType
}{
	{label: "cluster-api", name: "cluster-api", componentsFile: "core-components.yaml",
		configFolder: "core/config/default", providerType: clusterctlv1.CoreProviderType},
	{label: "bootstrap-kubeadm", name: "kubeadm", componentsFile: "bootstrap-components.yaml",
		configFolder: "bootstrap/kubeadm/config/default", providerType: clusterctlv1.BootstrapProviderType},
	{label: "control-plane-kubeadm", name: "kubeadm", componentsFile: "control-plane-components.yaml",
		configFolder: "controlplane/kubeadm/config/default", providerType: clusterctlv1.ControlPlaneProviderType},
}

// NewClusterctlRepository builds the repository in a directory of t.
func NewClusterctlRepository(t T) *ClusterctlRepository {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatalf("%v", err)
	}
	repo := &ClusterctlRepository{Dir: t.TempDir(), CAPIVersion: capiModuleVersion(t)}

	metal3Dir := filepath.Join(repo.Dir, "infrastructure-metal3", ClusterctlRelease)
	if _, err := release.Build(release.Options{Root: root, OutDir: metal3Dir, Image: clusterctlImage}); err != nil {
		t.Fatalf("build the release: %v", err)
	}
	repo.providers = append(repo.providers, clusterctlRepositoryProvider{
		name: "metal3", providerType: clusterctlv1.InfrastructureProviderType, url: filepath.Join(metal3Dir, release.ComponentsFile),
	})

	capi := CAPIModuleDir(t)
	metadata, err := os.ReadFile(filepath.Join(capi, "metadata.yaml"))
	if err != nil {
		t.Fatalf("Cluster API's metadata.yaml: %v", err)
	}
	for _, p := range clusterctlCAPIProviders {
		resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(capi, p.configFolder))
		if err != nil {
			t.Fatalf("render %s: %v", p.configFolder, err)
		}
		components, err := resMap.AsYaml()
		if err != nil {
			t.Fatalf("render %s: %v", p.configFolder, err)
		}
		dir := filepath.Join(repo.Dir, p.label, repo.CAPIVersion)
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatalf("%v", err)
		}
		for name, data := range map[string][]byte{p.componentsFile: components, "metadata.yaml": metadata} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatalf("%v", err)
			}
		}
		repo.providers = append(repo.providers, clusterctlRepositoryProvider{
			name: p.name, providerType: p.providerType, url: filepath.Join(dir, p.componentsFile),
		})
	}
	return repo
}

// AddUpstreamCAPM3 publishes upstream CAPM3's release u in the repository
// beside ours, under the same provider (metal3): clusterctl finds every
// version in infrastructure-metal3/, installs u with `clusterctl init
// --infrastructure metal3:<u.Version>` and upgrades from it, reading u's
// own metadata.yaml for u. The files are copied: clusterctl lists the
// versions as directories, which a symbolic link is not.
func (r *ClusterctlRepository) AddUpstreamCAPM3(t T, u *UpstreamRelease) {
	t.Helper()
	dir := filepath.Join(r.Dir, "infrastructure-metal3", u.Version)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatalf("%v", err)
	}
	entries, err := os.ReadDir(u.Dir)
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, entry := range entries {
		data, err := os.ReadFile(filepath.Join(u.Dir, entry.Name()))
		if err != nil {
			t.Fatalf("%v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, entry.Name()), data, 0o600); err != nil {
			t.Fatalf("%v", err)
		}
	}
}

// CoreShipped is Cluster API's core provider as `clusterctl init` installs
// it from the repository (variables at their defaults), for
// RouteShippedWebhooks.
func (r *ClusterctlRepository) CoreShipped(t T) *Shipped {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.Dir, "cluster-api", r.CAPIVersion, "core-components.yaml"))
	if err != nil {
		t.Fatalf("Cluster API's core components: %v", err)
	}
	return shippedComponents(t, data, nil)
}

// Clusterctl is a clusterctl client reading its configuration (providers
// and variables) from the repository only, with no variable set and no
// user overrides.
func (r *ClusterctlRepository) Clusterctl(t T) clusterctlclient.Client {
	t.Helper()
	ctx := context.Background()
	reader := config.NewMemoryReader()
	for _, p := range r.providers {
		if _, err := reader.AddProvider(p.name, p.providerType, p.url); err != nil {
			t.Fatalf("clusterctl configuration: %v", err)
		}
	}
	reader.Set("overridesFolder", filepath.Join(r.Dir, "no-overrides"))
	cfg, err := config.New(ctx, "", config.InjectReader(reader))
	if err != nil {
		t.Fatalf("clusterctl configuration: %v", err)
	}
	c, err := clusterctlclient.New(ctx, "", clusterctlclient.InjectConfig(cfg))
	if err != nil {
		t.Fatalf("clusterctl client: %v", err)
	}
	return c
}

// ClusterctlInit runs `clusterctl init` against e from repo: Cluster API's
// core and kubeadm providers at the repository's version, and
// infrastructure ("metal3:<version>"). cert-manager's CRDs must be there
// first (CertManagerCRDPath): clusterctl then finds cert-manager's API and
// installs nothing of it, which it would download.
func (e *Env) ClusterctlInit(t T, repo *ClusterctlRepository, infrastructure string) {
	t.Helper()
	clusterctlCalls.Lock()
	defer clusterctlCalls.Unlock()
	if _, err := repo.Clusterctl(t).Init(context.Background(), clusterctlclient.InitOptions{
		Kubeconfig:              clusterctlclient.Kubeconfig{Path: e.WriteKubeconfig(t)},
		CoreProvider:            "cluster-api:" + repo.CAPIVersion,
		BootstrapProviders:      []string{"kubeadm:" + repo.CAPIVersion},
		ControlPlaneProviders:   []string{"kubeadm:" + repo.CAPIVersion},
		InfrastructureProviders: []string{infrastructure},
	}); err != nil {
		t.Fatalf("clusterctl init: %v", err)
	}
}

// ClusterctlUpgrade runs `clusterctl upgrade apply --infrastructure
// <infrastructure>` against e from repo ("metal3:<version>"), without
// waiting for the providers (no Pod runs here): clusterctl scales the old
// Deployment down, deletes the old components but the CRDs and the
// namespace, migrates stored objects if the new CRDs drop a stored
// version, and installs the new components.
func (e *Env) ClusterctlUpgrade(t T, repo *ClusterctlRepository, infrastructure string) {
	t.Helper()
	clusterctlCalls.Lock()
	defer clusterctlCalls.Unlock()
	if err := repo.Clusterctl(t).ApplyUpgrade(context.Background(), clusterctlclient.ApplyUpgradeOptions{
		Kubeconfig:              clusterctlclient.Kubeconfig{Path: e.WriteKubeconfig(t)},
		InfrastructureProviders: []string{infrastructure},
	}); err != nil {
		t.Fatalf("clusterctl upgrade apply: %v", err)
	}
}

// clusterctlCalls serialises the clusterctl calls of this package's
// helpers: clusterctl logs to one global logger.
var clusterctlCalls sync.Mutex

var capiVersion = struct {
	once    sync.Once
	version string
	err     error
}{}

// capiModuleVersion is the version of Cluster API in go.mod.
func capiModuleVersion(t T) string {
	t.Helper()
	capiVersion.once.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			capiVersion.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Version}}", "sigs.k8s.io/cluster-api")
		cmd.Dir = root
		out, err := cmd.Output()
		capiVersion.version, capiVersion.err = strings.TrimSpace(string(out)), err
	})
	if capiVersion.err != nil || capiVersion.version == "" {
		t.Fatalf("Cluster API's version in go.mod: %q, %v", capiVersion.version, capiVersion.err)
	}
	return capiVersion.version
}
