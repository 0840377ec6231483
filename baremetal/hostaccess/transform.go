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
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// TransformHost is the host cache's transform: an identity's cache holds
// every host of its namespace, thousands across identities, and most of a
// host is what the Bare Metal Operator reports for people (CPU flags,
// disks, switch ports, firmware, history) and the provider never reads.
// managedFields go, and the status keeps only what the provider reads:
//
//   - provisioning.state (selection, association, deprovisioning);
//   - operationalStatus, errorMessage, errorType, errorCount (host errors);
//   - poweredOn (remediation);
//   - hardware.nics name, mac and ip (data templates' interfaces, machine
//     addresses) and hardware.hostname (machine addresses, node names).
//
// Metadata and spec are kept whole: hosts are written back with Update,
// which would drop on the server whatever the cache dropped there; status
// is not written by the provider, and an Update ignores it.
// A new reader of another status field adds it here.
func TransformHost() toolscache.TransformFunc {
	stripManagedFields := cache.TransformStripManagedFields()
	return func(in any) (any, error) {
		out, err := stripManagedFields(in)
		if err != nil {
			return out, err
		}
		if host, ok := out.(*bmov1alpha1.BareMetalHost); ok {
			host.Status = readStatus(host.Status)
		}
		return out, nil
	}
}

// readStatus is the part of status the provider reads, in new slices
// (a decoded slice's capacity outgrows its length).
func readStatus(in bmov1alpha1.BareMetalHostStatus) bmov1alpha1.BareMetalHostStatus {
	out := bmov1alpha1.BareMetalHostStatus{
		OperationalStatus: in.OperationalStatus,
		ErrorType:         in.ErrorType,
		ErrorMessage:      in.ErrorMessage,
		ErrorCount:        in.ErrorCount,
		PoweredOn:         in.PoweredOn,
		Provisioning:      bmov1alpha1.ProvisionStatus{State: in.Provisioning.State},
	}
	if hw := in.HardwareDetails; hw != nil {
		out.HardwareDetails = &bmov1alpha1.HardwareDetails{Hostname: hw.Hostname}
		if len(hw.NIC) > 0 {
			out.HardwareDetails.NIC = make([]bmov1alpha1.NIC, len(hw.NIC))
			for i, nic := range hw.NIC {
				out.HardwareDetails.NIC[i] = bmov1alpha1.NIC{Name: nic.Name, MAC: nic.MAC, IP: nic.IP}
			}
		}
	}
	return out
}
