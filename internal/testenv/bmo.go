package testenv

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

var (
	bmoOnce sync.Once
	bmoDir  string
	bmoErr  error
)

// BMODir returns the directory holding the baremetal-operator binary and its
// CRDs (crds/), building them once with hack/tools-bin.sh.
func BMODir() (string, error) {
	bmoOnce.Do(func() {
		bmoDir, bmoErr = runToolsBin("bmo")
	})
	return bmoDir, bmoErr
}

// BMOCRDPath is the directory of BareMetalHost (and related) CRDs matching the
// BMO binary, for Options.CRDDirectoryPaths.
func BMOCRDPath(t testing.TB) string {
	t.Helper()
	dir, err := BMODir()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return filepath.Join(dir, "crds")
}

// StartBMO runs the real Bare Metal Operator in test mode (its fixture
// provisioner stands in for Ironic) against the environment, until the test
// ends. Its output is shown if the test fails.
func (e *Env) StartBMO(t testing.TB, podNamespace string) {
	t.Helper()
	dir, err := BMODir()
	if err != nil {
		t.Fatalf("%v", err)
	}
	user, err := e.AddUser(envtest.User{Name: "baremetal-operator", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatalf("add BMO user: %v", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatalf("BMO kubeconfig: %v", err)
	}
	kubeconfigPath := filepath.Join(t.TempDir(), "bmo-kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatalf("write BMO kubeconfig: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "baremetal-operator"),
		"--test-mode",
		"--webhook-port=0",
		"--metrics-addr="+FreeLoopbackAddr(t),
		"--health-addr="+FreeLoopbackAddr(t),
	)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfigPath, "POD_NAMESPACE="+podNamespace)
	var output syncBuffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start baremetal-operator: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("baremetal-operator output:\n%s", output.String())
		}
	})
}

// FreeLoopbackAddr returns a loopback host:port that was free a moment ago,
// for servers a test starts (probes, metrics, webhooks).
func FreeLoopbackAddr(t testing.TB) string {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("reserve a port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a child
// process's stdout and stderr.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
