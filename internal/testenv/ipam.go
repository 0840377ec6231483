package testenv

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

var (
	ipamOnce sync.Once
	ipamDir  string
	ipamErr  error
)

// IPAMDir returns the directory holding the ip-address-manager binary and its
// CRDs (crds/), building them once with hack/tools-bin.sh.
func IPAMDir() (string, error) {
	ipamOnce.Do(func() {
		ipamDir, ipamErr = runToolsBin("ipam")
	})
	return ipamDir, ipamErr
}

// IPAMCRDPath is the directory of the IPPool, IPClaim and IPAddress CRDs
// matching the IPAM binary, for Options.CRDDirectoryPaths.
func IPAMCRDPath(t testing.TB) string {
	t.Helper()
	dir, err := IPAMDir()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return filepath.Join(dir, "crds")
}

// StartIPAM runs the real Metal3 IP Address Manager against the environment,
// until the test ends. Its output is shown if the test fails.
//
// Besides IPAMCRDPath, the environment needs Cluster API's CRDs (CAPICRDPath):
// the IPAM also serves CAPI IPAddressClaims and cannot start its controllers
// without the ipam.cluster.x-k8s.io kinds.
func (e *Env) StartIPAM(t testing.TB) {
	t.Helper()
	dir, err := IPAMDir()
	if err != nil {
		t.Fatalf("%v", err)
	}
	user, err := e.AddUser(envtest.User{Name: "ip-address-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatalf("add IPAM user: %v", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatalf("IPAM kubeconfig: %v", err)
	}
	tmp := t.TempDir()
	kubeconfigPath := filepath.Join(tmp, "ipam-kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatalf("write IPAM kubeconfig: %v", err)
	}

	// The IPAM always registers its webhooks and has no flag to turn the
	// webhook server off, and that server will not start without a serving
	// certificate. The API server is never told about these webhooks, so a
	// throw-away self-signed pair is enough.
	certDir := filepath.Join(tmp, "ipam-webhook-certs")
	writeSelfSignedCert(t, certDir)
	// The webhook server has no host flag and listens on every interface;
	// only the port can be chosen.
	_, webhookPort, err := net.SplitHostPort(FreeLoopbackAddr(t))
	if err != nil {
		t.Fatalf("webhook port: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "ip-address-manager"),
		"--kubeconfig="+kubeconfigPath,
		"--webhook-port="+webhookPort,
		"--webhook-cert-dir="+certDir,
		"--health-addr="+FreeLoopbackAddr(t),
		// "0" turns controller-runtime's metrics server off; otherwise it
		// would take :8443 on every interface and clash between tests.
		"--diagnostics-address=0",
		// One IPAM per API server: nothing to elect, and no Lease to wait for.
		"--leader-elect=false",
	)
	var output syncBuffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start ip-address-manager: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("ip-address-manager output:\n%s", output.String())
		}
	})
}

// writeSelfSignedCert puts a serving certificate for localhost in dir under
// the names controller-runtime's webhook server reads (tls.crt, tls.key).
func writeSelfSignedCert(t testing.TB, dir string) {
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
