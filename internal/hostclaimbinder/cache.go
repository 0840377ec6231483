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
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
)

// CacheOptions are what the binder caches of the pool cluster. It caches
// every host, claim and copy of the cluster, so a pool of thousands of each
// costs what the cached objects weigh:
//
//   - no object keeps its managedFields (the binder never reads them);
//   - a host keeps its metadata, its spec and the part of its status the
//     binder reads (readStatus);
//   - of the HardwareData, only the binder's copies are cached (those
//     labelled with their claim's UID): the Bare Metal Operator's own
//     HardwareData, one per inspected host, are never read by the binder.
//
// Secrets are not cached at all (see the manager's client options).
func CacheOptions() cache.Options {
	copied, err := labels.NewRequirement(hostclaim.ClaimUIDLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant label key
	}
	return cache.Options{
		DefaultTransform: transformObjects(),
		ByObject: map[client.Object]cache.ByObject{
			&bmov1alpha1.HardwareData{}: {Label: labels.NewSelector().Add(*copied)},
		},
	}
}

// transformObjects strips every cached object's managedFields, and a
// host's status to what the binder reads.
func transformObjects() toolscache.TransformFunc {
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

// readStatus is the part of a host's status the binder reads: the state,
// power and errors it reports to the claim (reportHost), what the pool's
// availability rules read (pool.Unavailability), and the hardware details
// it copies for the tenant (syncHardwareData). Metadata and spec are kept
// whole: hosts are written back with Update, which would drop on the
// server whatever the cache dropped there; status is never written by the
// binder, and an Update ignores it. A new reader of another status field
// adds it here.
func readStatus(in bmov1alpha1.BareMetalHostStatus) bmov1alpha1.BareMetalHostStatus {
	return bmov1alpha1.BareMetalHostStatus{
		OperationalStatus: in.OperationalStatus,
		ErrorType:         in.ErrorType,
		ErrorMessage:      in.ErrorMessage,
		PoweredOn:         in.PoweredOn,
		Provisioning:      bmov1alpha1.ProvisionStatus{State: in.Provisioning.State},
		// A copy, in slices no longer than their contents (a decoded
		// slice's capacity outgrows its length).
		HardwareDetails: in.HardwareDetails.DeepCopy(),
	}
}
