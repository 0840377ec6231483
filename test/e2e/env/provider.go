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

package env

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/metal3-io/cluster-api-provider-metal3/internal/testenv"
)

var managerBuild struct {
	once sync.Once
	path string
	err  error
}

// managerBinary builds the provider's manager from this tree, once per
// process, into the user's cache (go build's own cache makes a rebuild of
// an unchanged tree cheap).
func managerBinary() (string, error) {
	managerBuild.once.Do(func() {
		root, err := testenv.ModuleRoot()
		if err != nil {
			managerBuild.err = err
			return
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "capm3-e2e")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			managerBuild.err = err
			return
		}
		path := filepath.Join(dir, "capm3-manager")
		cmd := exec.CommandContext(context.Background(), "go", "build", "-o", path, ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			managerBuild.err = fmt.Errorf("build the manager: %w\n%s", err, out)
			return
		}
		managerBuild.path = path
	})
	return managerBuild.path, managerBuild.err
}

// startProvider runs the manager built from this tree against mgmt until t
// ends; tests kill and restart it through the returned Process. Webhooks
// are served by the environment (envtest points the API server at its own
// local server); the identities' API servers are on loopback, which the
// operator must allow explicitly.
func startProvider(t testenv.T, mgmt *testenv.Env, extraArgs ...string) *testenv.Process {
	t.Helper()
	path, err := managerBinary()
	if err != nil {
		t.Fatalf("%v", err)
	}
	args := append([]string{
		"--webhook-port=0",
		"--health-addr=" + testenv.FreeLoopbackAddr(t),
		"--diagnostics-address=" + testenv.FreeLoopbackAddr(t), "--insecure-diagnostics",
		"--identity-allow-loopback",
	}, extraArgs...)
	return mgmt.RunProcess(t, path, nil, args...)
}
