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
