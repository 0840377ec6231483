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
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

var (
	moduleDirs   = map[string]string{}
	moduleDirsMu sync.Mutex
)

// moduleDir is where module (a dependency in go.mod) sits in the module cache.
func moduleDir(t T, module string) string {
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
func CAPICRDPath(t T) string {
	t.Helper()
	return filepath.Join(moduleDir(t, "sigs.k8s.io/cluster-api"), "core", "config", "crd", "bases")
}

// CAPIModuleDir is where the Cluster API module of go.mod sits, for tests
// that render its config/ (the components clusterctl would install).
func CAPIModuleDir(t T) string {
	t.Helper()
	return moduleDir(t, "sigs.k8s.io/cluster-api")
}

// CAPIKubeadmCRDPaths are the directories of the kubeadm bootstrap and
// control plane CRDs of the CAPI version in go.mod.
func CAPIKubeadmCRDPaths(t T) []string {
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
func CertManagerCRDPath(t T) string {
	t.Helper()
	certManagerCRDs.once.Do(func() {
		certManagerCRDs.dir, certManagerCRDs.err = runToolsBin("cert-manager-crds")
	})
	if certManagerCRDs.err != nil {
		t.Fatalf("%v", certManagerCRDs.err)
	}
	return filepath.Join(certManagerCRDs.dir, "crds")
}

var upstreamCAPM3CRDs = struct {
	once sync.Once
	dir  string
	err  error
}{}

// UpstreamCAPM3CRDPath is the directory of upstream CAPM3's CRDs (v1.13.2,
// whose v1beta1 schemas are those v1.12 stored with), fetched once by
// hack/tools-bin.sh.
func UpstreamCAPM3CRDPath(t T) string {
	t.Helper()
	upstreamCAPM3CRDs.once.Do(func() {
		upstreamCAPM3CRDs.dir, upstreamCAPM3CRDs.err = runToolsBin("upstream-capm3-crds")
	})
	if upstreamCAPM3CRDs.err != nil {
		t.Fatalf("%v", upstreamCAPM3CRDs.err)
	}
	return filepath.Join(upstreamCAPM3CRDs.dir, "crds")
}
