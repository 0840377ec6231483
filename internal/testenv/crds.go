package testenv

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	moduleDirs   = map[string]string{}
	moduleDirsMu sync.Mutex
)

// moduleDir is where module (a dependency in go.mod) sits in the module cache.
func moduleDir(t testing.TB, module string) string {
	t.Helper()
	moduleDirsMu.Lock()
	defer moduleDirsMu.Unlock()
	if dir, ok := moduleDirs[module]; ok {
		return dir
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("locate module %s: %v", module, err)
	}
	dir := strings.TrimSpace(string(out))
	moduleDirs[module] = dir
	return dir
}

// CAPICRDPath is the directory of the Cluster API core CRDs of the CAPI
// version in go.mod.
func CAPICRDPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(moduleDir(t, "sigs.k8s.io/cluster-api"), "core", "config", "crd", "bases")
}

// CAPIModuleDir is where the Cluster API module of go.mod sits, for tests
// that render its config/ (the components clusterctl would install).
func CAPIModuleDir(t testing.TB) string {
	t.Helper()
	return moduleDir(t, "sigs.k8s.io/cluster-api")
}

// CAPIKubeadmCRDPaths are the directories of the kubeadm bootstrap and
// control plane CRDs of the CAPI version in go.mod.
func CAPIKubeadmCRDPaths(t testing.TB) []string {
	t.Helper()
	capi := CAPIModuleDir(t)
	return []string{
		filepath.Join(capi, "bootstrap", "kubeadm", "config", "crd", "bases"),
		filepath.Join(capi, "controlplane", "kubeadm", "config", "crd", "bases"),
	}
}

var certManagerCRDs = struct {
	once sync.Once
	dir  string
	err  error
}{}

// CertManagerCRDPath is the directory of cert-manager's CRDs of the version
// clusterctl installs, fetched once by hack/tools-bin.sh. With them in
// place clusterctl init finds cert-manager's API and installs nothing of it.
func CertManagerCRDPath(t testing.TB) string {
	t.Helper()
	certManagerCRDs.once.Do(func() {
		certManagerCRDs.dir, certManagerCRDs.err = runToolsBin("cert-manager-crds")
	})
	if certManagerCRDs.err != nil {
		t.Fatalf("%v", certManagerCRDs.err)
	}
	return filepath.Join(certManagerCRDs.dir, "crds")
}
