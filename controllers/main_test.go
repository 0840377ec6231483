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

package controllers

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// The tests of this package share their API servers: one management
// cluster serving BareMetalHosts, one serving none but running the IP
// address managers, and two host pools. Each test keeps to namespaces of
// its own (testNamespace), and its provider watches only those, so what
// earlier tests left behind is invisible to it. A test that stops a server
// or needs one to itself (a workload cluster's Nodes) starts its own.
var (
	suite          testenv.Suite
	sharedMgmt     = map[bool]*testenv.Once[*testenv.Env]{withHosts: {}, noHosts: {}}
	sharedPools    [2]testenv.Once[*testenv.Env]
	testNamespaces = map[string][]string{}
	namespaceSeq   int
	namespacesMu   sync.Mutex
)

func TestMain(m *testing.M) {
	// The managers' and envtest's logs would only be noise here; a failing
	// test says what it saw.
	ctrl.SetLogger(logr.Discard())
	code := m.Run()
	suite.Close(code != 0)
	os.Exit(code)
}

// testNamespace returns the name, unique on the shared servers, that the
// test uses for the namespace it calls base. The test's provider watches
// the namespaces named so far (startControllers).
func testNamespace(t *testing.T, base string) string {
	t.Helper()
	namespacesMu.Lock()
	defer namespacesMu.Unlock()
	namespaceSeq++
	name := fmt.Sprintf("%s-%d", base, namespaceSeq)
	testNamespaces[t.Name()] = append(testNamespaces[t.Name()], name)
	t.Cleanup(func() {
		namespacesMu.Lock()
		defer namespacesMu.Unlock()
		delete(testNamespaces, t.Name())
	})
	return name
}

// namespacesOf are the namespaces the test named with testNamespace.
func namespacesOf(t *testing.T) []string {
	t.Helper()
	namespacesMu.Lock()
	defer namespacesMu.Unlock()
	return append([]string(nil), testNamespaces[t.Name()]...)
}
