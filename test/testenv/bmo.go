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
	"fmt"
	"sync"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
// ends. Its output is shown if the test fails. The returned Process can be
// killed and restarted meanwhile.
func (e *Env) StartBMO(t T, podNamespace string) *Process {
	t.Helper()
	return e.runTool(t, bmoTool, []string{"POD_NAMESPACE=" + podNamespace},
		"--test-mode",
		"--webhook-port=0",
		"--metrics-addr="+FreeLoopbackAddr(t),
		"--health-addr="+FreeLoopbackAddr(t),
	)
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

// RegisterHosts creates count hosts named <prefix>-<i> with BMC
// credentials in namespace of c, as a pool admin enrols machines; the Bare
// Metal Operator running there registers and inspects them.
func RegisterHosts(ctx context.Context, c client.Client, namespace, prefix string, count int) error {
	for i := range count {
		name := fmt.Sprintf("%s-%d", prefix, i)
		bmc := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-bmc"},
			StringData: map[string]string{"username": "admin", "password": "password"},
		}
		if err := c.Create(ctx, bmc); err != nil {
			return fmt.Errorf("create BMC credentials of host %s: %w", name, err)
		}
		host := &bmov1alpha1.BareMetalHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: bmov1alpha1.BareMetalHostSpec{
				Online: true, BootMACAddress: fmt.Sprintf("00:5c:52:31:%02x:%02x", len(prefix), i),
				BMC: bmov1alpha1.BMCDetails{Address: fmt.Sprintf("ipmi://192.168.122.1:%d", 6230+i), CredentialsName: bmc.Name},
			},
		}
		if err := c.Create(ctx, host); err != nil {
			return fmt.Errorf("create host %s: %w", name, err)
		}
	}
	return nil
}
