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
	"net"
	"os"
	"path/filepath"

	certutil "k8s.io/client-go/util/cert"
)

// IPAMCRDPath is the directory of the IPPool, IPClaim and IPAddress CRDs
// matching the IPAM binary, for Options.CRDDirectoryPaths.
func IPAMCRDPath(t T) string {
	t.Helper()
	return ipamTool.crdPath(t)
}

// StartIPAM runs the real Metal3 IP Address Manager against the environment,
// until the test ends. Its output is shown if the test fails.
//
// Besides IPAMCRDPath, the environment needs Cluster API's CRDs (CAPICRDPath):
// the IPAM also serves CAPI IPAddressClaims and cannot start its controllers
// without the ipam.cluster.x-k8s.io kinds.
func (e *Env) StartIPAM(t T) {
	t.Helper()
	// The IPAM always registers its webhooks and has no flag to turn the
	// webhook server off, and that server will not start without a serving
	// certificate. The API server is never told about these webhooks, so a
	// throw-away self-signed pair is enough.
	certDir := filepath.Join(t.TempDir(), "ipam-webhook-certs")
	writeSelfSignedCert(t, certDir)
	// The webhook server has no host flag and listens on every interface;
	// only the port can be chosen.
	_, webhookPort, err := net.SplitHostPort(FreeLoopbackAddr(t))
	if err != nil {
		t.Fatalf("webhook port: %v", err)
	}
	e.runTool(t, ipamTool, nil,
		"--webhook-port="+webhookPort,
		"--webhook-cert-dir="+certDir,
		"--health-addr="+FreeLoopbackAddr(t),
		// "0" turns controller-runtime's metrics server off; otherwise it
		// would take :8443 on every interface and clash between tests.
		"--diagnostics-address=0",
		// One IPAM per API server: nothing to elect, and no Lease to wait for.
		"--leader-elect=false",
	)
}

// writeSelfSignedCert puts a serving certificate for localhost in dir under
// the names controller-runtime's webhook server reads (tls.crt, tls.key).
func writeSelfSignedCert(t T, dir string) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatalf("generate webhook certificate: %v", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatalf("webhook cert dir: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		t.Fatalf("write webhook certificate: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600); err != nil {
		t.Fatalf("write webhook key: %v", err)
	}
}
