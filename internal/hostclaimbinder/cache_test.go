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

package hostclaimbinder

import (
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestCacheTransform pins what the binder keeps of each cached object:
// hosts lose their managedFields and every status field the binder does
// not read, but keep the hardware details it copies for tenants, and their
// metadata and spec, which it writes back; other kinds lose their
// managedFields only.
func TestCacheTransform(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "baremetal-operator", Operation: metav1.ManagedFieldsOperationUpdate}}
	details := &bmov1alpha1.HardwareDetails{
		Hostname: "node-0",
		CPU:      bmov1alpha1.CPU{Arch: "x86_64", Model: "Xeon", Count: 64, Flags: []string{"avx", "avx2", "sse4_2"}},
		NIC:      []bmov1alpha1.NIC{{Name: "eno1", MAC: "00:00:5e:00:53:01", Model: "0x8086 0x1593", SpeedGbps: 25}},
		Storage:  []bmov1alpha1.Storage{{Name: "/dev/sda", SizeBytes: 1 << 40}},
	}
	host := &bmov1alpha1.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "pool", Name: "node-0", ManagedFields: managed,
			Labels: map[string]string{"rack": "r1"}, Annotations: map[string]string{"note": "kept"},
			Finalizers: []string{bmov1alpha1.BareMetalHostFinalizer},
		},
		Spec: bmov1alpha1.BareMetalHostSpec{Online: true, BMC: bmov1alpha1.BMCDetails{Address: "redfish://10.0.0.1", CredentialsName: "bmc"}},
		Status: bmov1alpha1.BareMetalHostStatus{
			OperationalStatus: bmov1alpha1.OperationalStatusError,
			ErrorType:         bmov1alpha1.ProvisioningError,
			ErrorMessage:      "deploy failed",
			ErrorCount:        3,
			PoweredOn:         true,
			HardwareDetails:   details,
			Provisioning: bmov1alpha1.ProvisionStatus{
				State: bmov1alpha1.StateProvisioning, ID: "ironic-uuid",
				Image: bmov1alpha1.Image{URL: "http://images/os.qcow2"},
			},
			GoodCredentials:  bmov1alpha1.CredentialsStatus{Reference: &corev1.SecretReference{Namespace: "pool", Name: "bmc"}, Version: "1"},
			OperationHistory: bmov1alpha1.OperationHistory{Register: bmov1alpha1.OperationMetric{Start: metav1.Now()}},
			LastUpdated:      ptr.To(metav1.Now()),
		},
	}
	wantHost := host.DeepCopy()
	wantHost.ManagedFields = nil
	wantHost.Status = bmov1alpha1.BareMetalHostStatus{
		OperationalStatus: bmov1alpha1.OperationalStatusError,
		ErrorType:         bmov1alpha1.ProvisioningError,
		ErrorMessage:      "deploy failed",
		PoweredOn:         true,
		HardwareDetails:   details,
		Provisioning:      bmov1alpha1.ProvisionStatus{State: bmov1alpha1.StateProvisioning},
	}
	claim := &bmov1alpha1.HostClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "c", ManagedFields: managed},
		Spec:       bmov1alpha1.HostClaimSpec{PoweredOn: true},
		Status:     bmov1alpha1.HostClaimStatus{PoweredOn: true},
	}
	wantClaim := claim.DeepCopy()
	wantClaim.ManagedFields = nil
	secretMetadata := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "s", ManagedFields: managed}}
	wantSecretMetadata := secretMetadata.DeepCopy()
	wantSecretMetadata.ManagedFields = nil

	transform := transformObjects()
	for _, tc := range []struct {
		name     string
		in, want any
	}{
		{"host", host, wantHost},
		{"claim", claim, wantClaim},
		{"Secret metadata", secretMetadata, wantSecretMetadata},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := transform(tc.in)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
