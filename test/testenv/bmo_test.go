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
	"context"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestBMORegistersHostToAvailable proves the BMO we build is the real thing and
// runs here: started in test mode against a real API server, it inspects a new
// BareMetalHost and moves it to "available", as it would with Ironic.
func TestBMORegistersHostToAvailable(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(bmov1alpha1.AddToScheme(scheme)).To(Succeed())

	env := Start(t, Options{Scheme: scheme, CRDDirectoryPaths: []string{BMOCRDPath(t)}})
	env.StartBMO(t, "default")

	ctx := context.Background()
	bmc := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "host-0-bmc", Namespace: "default"},
		StringData: map[string]string{"username": "admin", "password": "password"},
	}
	g.Expect(env.Client.Create(ctx, bmc)).To(Succeed())
	host := &bmov1alpha1.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{Name: "host-0", Namespace: "default"},
		Spec: bmov1alpha1.BareMetalHostSpec{
			Online:         true,
			BootMACAddress: "00:5c:52:31:3a:9c",
			BMC: bmov1alpha1.BMCDetails{
				Address:         "ipmi://192.168.122.1:6233",
				CredentialsName: bmc.Name,
			},
		},
	}
	g.Expect(env.Client.Create(ctx, host)).To(Succeed())

	g.Eventually(func() (bmov1alpha1.ProvisioningState, error) {
		got := &bmov1alpha1.BareMetalHost{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(host), got)
		return got.Status.Provisioning.State, err
	}).WithTimeout(90*time.Second).WithPolling(500*time.Millisecond).
		Should(Equal(bmov1alpha1.StateAvailable), "BMO should register and inspect the host")
}
