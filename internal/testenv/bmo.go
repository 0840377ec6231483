package testenv

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
)

// BMODir returns the directory holding the baremetal-operator binary and its
// CRDs (crds/), building them once with hack/tools-bin.sh.
func BMODir() (string, error) { return bmoTool.Dir() }

// BMOCRDPath is the directory of BareMetalHost (and related) CRDs matching the
// BMO binary, for Options.CRDDirectoryPaths.
func BMOCRDPath(t testing.TB) string {
	t.Helper()
	return bmoTool.crdPath(t)
}

// StartBMO runs the real Bare Metal Operator in test mode (its fixture
// provisioner stands in for Ironic) against the environment, until the test
// ends. Its output is shown if the test fails.
func (e *Env) StartBMO(t testing.TB, podNamespace string) {
	t.Helper()
	e.runTool(t, bmoTool, []string{"POD_NAMESPACE=" + podNamespace},
		"--test-mode",
		"--webhook-port=0",
		"--metrics-addr="+FreeLoopbackAddr(t),
		"--health-addr="+FreeLoopbackAddr(t),
	)
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
