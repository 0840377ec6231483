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
	"github.com/metal3-io/cluster-api-provider-metal3/internal/testenv"
)

// manager is the provider's manager, built from this tree.
var manager = &testenv.TreeBinary{Package: ".", Name: "capm3-manager"}

// startProvider runs the manager built from this tree against mgmt until t
// ends; tests kill and restart it through the returned Process. Webhooks
// are served by the environment (envtest points the API server at its own
// local server); the identities' and the workload clusters' API servers are
// on loopback, which the operator must allow explicitly, for each.
func startProvider(t testenv.T, mgmt *testenv.Env, extraArgs ...string) *testenv.Process {
	t.Helper()
	path, err := manager.Path()
	if err != nil {
		t.Fatalf("%v", err)
	}
	args := append([]string{
		"--webhook-port=0",
		"--health-addr=" + testenv.FreeLoopbackAddr(t),
		"--diagnostics-address=" + testenv.FreeLoopbackAddr(t), "--insecure-diagnostics",
		"--identity-allow-loopback", "--workload-allow-loopback",
	}, extraArgs...)
	return mgmt.RunProcess(t, path, nil, args...)
}
