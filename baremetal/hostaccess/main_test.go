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

package hostaccess

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// The envtest tests of this package share a management and a pool API
// server; each keeps to namespaces of its own (twoClusters.ns).
var (
	suite                  testenv.Suite
	sharedMgmt, sharedPool testenv.Once[*testenv.Env]
	namespaceSeq           int
	namespaceSeqMu         sync.Mutex
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	code := m.Run()
	suite.Close(code != 0)
	os.Exit(code)
}

// uniqueNamespace returns base with a suffix no other test of the package
// gets.
func uniqueNamespace(base string) string {
	namespaceSeqMu.Lock()
	defer namespaceSeqMu.Unlock()
	namespaceSeq++
	return fmt.Sprintf("%s-%d", base, namespaceSeq)
}
