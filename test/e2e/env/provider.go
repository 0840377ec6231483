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
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// startProvider runs the manager built from this tree against mgmt until t
// ends, as `clusterctl init` installs it (testenv.RunShipped): as its
// ServiceAccount, with the ClusterRoles and Roles of the release and its
// Deployment's arguments. Only what cannot be the same here differs:
// webhooks are served by the environment (envtest points the API server at
// its own local server), probes and metrics listen on free loopback ports,
// and the identities' and workload clusters' API servers are on loopback,
// which the operator must allow explicitly, for each. extraArgs
// (--name=value) replace the Deployment's flags of the same names.
func startProvider(t testenv.T, mgmt *testenv.Env, extraArgs ...string) *testenv.Process {
	t.Helper()
	path, err := testenv.Manager.Path()
	if err != nil {
		t.Fatalf("%v", err)
	}
	flags := map[string]string{
		"webhook-port":            "0",
		"health-addr":             testenv.FreeLoopbackAddr(t),
		"diagnostics-address":     testenv.FreeLoopbackAddr(t),
		"identity-allow-loopback": "true",
		"workload-allow-loopback": "true",
	}
	testenv.AddFlags(flags, extraArgs)
	return mgmt.RunShipped(t, testenv.ShippedProvider(t, nil), path, flags)
}
