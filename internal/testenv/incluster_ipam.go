package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

var (
	inClusterIPAMOnce sync.Once
	inClusterIPAMDir  string
	inClusterIPAMErr  error
)

// InClusterIPAMDir returns the directory holding the CAPI in-cluster IPAM
// provider binary (ipam-incluster) and its pool CRDs (crds/), building them
// once with hack/tools-bin.sh.
func InClusterIPAMDir() (string, error) {
	inClusterIPAMOnce.Do(func() {
		inClusterIPAMDir, inClusterIPAMErr = runToolsBin("incluster-ipam")
	})
	return inClusterIPAMDir, inClusterIPAMErr
}

// InClusterIPAMCRDPath is the directory of the provider's pool CRDs
// (InClusterIPPool, GlobalInClusterIPPool and the prefix pools), for
// Options.CRDDirectoryPaths. The IPAddressClaim and IPAddress CRDs it serves
// are CAPI's own, from CAPICRDPath.
func InClusterIPAMCRDPath(t testing.TB) string {
	t.Helper()
	dir, err := InClusterIPAMDir()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return filepath.Join(dir, "crds")
}

// StartInClusterIPAM runs the real CAPI in-cluster IPAM provider against the
// environment, until the test ends. Its output is shown if the test fails.
func (e *Env) StartInClusterIPAM(t testing.TB) {
	t.Helper()
	dir, err := InClusterIPAMDir()
	if err != nil {
		t.Fatalf("%v", err)
	}
	user, err := e.AddUser(envtest.User{Name: "ipam-incluster", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatalf("add in-cluster IPAM user: %v", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatalf("in-cluster IPAM kubeconfig: %v", err)
	}
	kubeconfigPath := filepath.Join(t.TempDir(), "ipam-incluster-kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatalf("write in-cluster IPAM kubeconfig: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "ipam-incluster"),
		"--kubeconfig="+kubeconfigPath,
		// Port 0 skips registering the pool webhooks, so no serving certs
		// are needed; pools are then not validated, only used.
		"--webhook-port=0",
		// "0" turns the metrics and probe servers off: nothing scrapes them
		// here, and fewer ports means fewer collisions between tests.
		"--diagnostics-address=0",
		"--health-probe-bind-address=0",
		"--leader-elect=false",
	)
	var output syncBuffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start ipam-incluster: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("ipam-incluster output:\n%s", output.String())
		}
	})
}
