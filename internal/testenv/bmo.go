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
	"bytes"
	"context"
	"net"
	"sync"
)

// BMODir returns the directory holding the baremetal-operator binary and its
// CRDs (crds/), building them once with hack/tools-bin.sh.
func BMODir() (string, error) { return bmoTool.Dir() }

// BMOCRDPath is the directory of BareMetalHost (and related) CRDs matching the
// BMO binary, for Options.CRDDirectoryPaths.
func BMOCRDPath(t T) string {
	t.Helper()
	return bmoTool.crdPath(t)
}

// StartBMO runs the real Bare Metal Operator in test mode (its fixture
// provisioner stands in for Ironic) against the environment, until the test
// ends. Its output is shown if the test fails.
func (e *Env) StartBMO(t T, podNamespace string) {
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
func FreeLoopbackAddr(t T) string {
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
