package testenv

import "testing"

// InClusterIPAMDir returns the directory holding the CAPI in-cluster IPAM
// provider binary (ipam-incluster) and its pool CRDs (crds/), building them
// once with hack/tools-bin.sh.
func InClusterIPAMDir() (string, error) { return inClusterIPAMTool.Dir() }

// InClusterIPAMCRDPath is the directory of the provider's pool CRDs
// (InClusterIPPool, GlobalInClusterIPPool and the prefix pools), for
// Options.CRDDirectoryPaths. The IPAddressClaim and IPAddress CRDs it serves
// are CAPI's own, from CAPICRDPath.
func InClusterIPAMCRDPath(t testing.TB) string {
	t.Helper()
	return inClusterIPAMTool.crdPath(t)
}

// StartInClusterIPAM runs the real CAPI in-cluster IPAM provider against the
// environment, until the test ends. Its output is shown if the test fails.
func (e *Env) StartInClusterIPAM(t testing.TB) {
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
