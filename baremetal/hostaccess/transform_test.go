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
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestTransformHostKeepsWhatTheProviderReads: the host cache keeps
// metadata (but managedFields), spec, and the status fields the provider
// reads; the rest of the status is dropped.
func TestTransformHostKeepsWhatTheProviderReads(t *testing.T) {
	g := NewWithT(t)
	now := metav1.Now()
	host := &bmov1alpha1.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{
			Name: "host-0", Namespace: "pool", Labels: map[string]string{"rack": "r1"},
			Annotations:   map[string]string{bmov1alpha1.PausedAnnotation: ""},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "baremetal-operator"}},
		},
		Spec: bmov1alpha1.BareMetalHostSpec{Online: true, BootMACAddress: "00:11:22:33:44:55", ConsumerRef: &corev1.ObjectReference{Name: "m"}},
		Status: bmov1alpha1.BareMetalHostStatus{
			OperationalStatus: bmov1alpha1.OperationalStatusError, ErrorType: bmov1alpha1.ProvisioningError,
			ErrorMessage: "boom", ErrorCount: 2, PoweredOn: true, LastUpdated: &now,
			Provisioning: bmov1alpha1.ProvisionStatus{State: bmov1alpha1.StateProvisioned, ID: "id", Image: bmov1alpha1.Image{URL: "http://image"}},
			HardwareDetails: &bmov1alpha1.HardwareDetails{
				Hostname: "node-0",
				NIC:      []bmov1alpha1.NIC{{Name: "eno1", MAC: "00:11:22:33:44:55", IP: "10.0.0.2", Model: "x", LLDP: &bmov1alpha1.LLDP{PortID: "p"}}},
				CPU:      bmov1alpha1.CPU{Flags: []string{"fpu"}}, Storage: []bmov1alpha1.Storage{{Name: "/dev/sda"}},
			},
			GoodCredentials:  bmov1alpha1.CredentialsStatus{Version: "1"},
			OperationHistory: bmov1alpha1.OperationHistory{Inspect: bmov1alpha1.OperationMetric{Start: now}},
		},
	}
	want := host.DeepCopy()
	want.ManagedFields = nil
	want.Status = bmov1alpha1.BareMetalHostStatus{
		OperationalStatus: bmov1alpha1.OperationalStatusError, ErrorType: bmov1alpha1.ProvisioningError,
		ErrorMessage: "boom", ErrorCount: 2, PoweredOn: true,
		Provisioning: bmov1alpha1.ProvisionStatus{State: bmov1alpha1.StateProvisioned},
		HardwareDetails: &bmov1alpha1.HardwareDetails{
			Hostname: "node-0", NIC: []bmov1alpha1.NIC{{Name: "eno1", MAC: "00:11:22:33:44:55", IP: "10.0.0.2"}},
		},
	}

	out, err := TransformHost()(host)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(want))

	// Not inspected yet: no hardware details appear.
	out, err = TransformHost()(&bmov1alpha1.BareMetalHost{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.(*bmov1alpha1.BareMetalHost).Status.HardwareDetails).To(BeNil())

	// Tombstones and other kinds pass through.
	tombstone := toolscache.DeletedFinalStateUnknown{Key: "pool/host-0", Obj: host}
	out, err = TransformHost()(tombstone)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(tombstone))
}
