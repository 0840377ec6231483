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

// InClusterIPAMCRDPath is the directory of the provider's pool CRDs
// (InClusterIPPool, GlobalInClusterIPPool and the prefix pools), for
// Options.CRDDirectoryPaths. The IPAddressClaim and IPAddress CRDs it serves
// are CAPI's own, from CAPICRDPath.
func InClusterIPAMCRDPath(t T) string {
	t.Helper()
	return inClusterIPAMTool.crdPath(t)
}

// StartInClusterIPAM runs the real CAPI in-cluster IPAM provider against the
// environment, until the test ends. Its output is shown if the test fails.
func (e *Env) StartInClusterIPAM(t T) {
	t.Helper()
	e.runTool(t, inClusterIPAMTool, nil,
		// Port 0 skips registering the pool webhooks, so no serving certs
		// are needed; pools are then not validated, only used.
		"--webhook-port=0",
		// "0" turns the metrics and probe servers off: nothing scrapes them
		// here, and fewer ports means fewer collisions between tests.
		"--diagnostics-address=0",
		"--health-probe-bind-address=0",
		"--leader-elect=false",
	)
}
