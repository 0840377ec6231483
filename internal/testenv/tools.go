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
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// builtTool is a controller binary hack/tools-bin.sh builds from the Go
// module proxy and caches, with the CRDs it serves in crds/ beside it.
type builtTool struct {
	// kind is the tools-bin.sh argument; binary the file it builds.
	kind, binary string

	once sync.Once
	dir  string
	err  error
}

var (
	bmoTool           = &builtTool{kind: "bmo", binary: "baremetal-operator"}
	ipamTool          = &builtTool{kind: "ipam", binary: "ip-address-manager"}
	inClusterIPAMTool = &builtTool{kind: "incluster-ipam", binary: "ipam-incluster"}
)

// Dir builds the tool once per test process and returns its directory.
func (b *builtTool) Dir() (string, error) {
	b.once.Do(func() {
		b.dir, b.err = runToolsBin(b.kind)
	})
	return b.dir, b.err
}

func (b *builtTool) crdPath(t T) string {
	t.Helper()
	dir, err := b.Dir()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return filepath.Join(dir, "crds")
}

// runTool runs tool against the environment as a system:masters user named
// after it, with args and extraEnv, until the test ends (see RunProcess).
func (e *Env) runTool(t T, tool *builtTool, extraEnv []string, args ...string) {
	t.Helper()
	dir, err := tool.Dir()
	if err != nil {
		t.Fatalf("%v", err)
	}
	e.RunProcess(t, filepath.Join(dir, tool.binary), extraEnv, args...)
}

// RunProcess runs the controller binary at path against the environment as
// a system:masters user named after it, with args and extraEnv, until the
// test ends. The kubeconfig is handed over in KUBECONFIG, which every
// controller-runtime manager reads. Its output is shown if the test fails.
func (e *Env) RunProcess(t T, path string, extraEnv []string, args ...string) {
	t.Helper()
	name := filepath.Base(path)
	user, err := e.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatalf("add %s user: %v", name, err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatalf("%s kubeconfig: %v", name, err)
	}
	kubeconfigPath := filepath.Join(t.TempDir(), name+"-kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatalf("write %s kubeconfig: %v", name, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+kubeconfigPath), extraEnv...)
	var output syncBuffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, output.String())
		}
	})
}
