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

package v1beta2

import "k8s.io/apimachinery/pkg/api/meta"

// HostRecordConfirmed reports whether m's HostAnnotation records a host the
// machine took, rather than the one it is about to take.
//
// The provider writes the annotation with the machine's finalizer, before
// it claims the host (one write of the machine instead of two). Until the
// claim is confirmed, the annotation is an intent: a reconcile that
// crashed, or lost the host to another consumer, resumes from it or points
// it at another host. Once confirmed it never changes (the webhook refuses
// it), and a machine whose confirmed host is gone waits for it (reason
// HostNotFound) rather than take another.
//
// Confirmation is what the status written with the claim says, and what
// the spec says once the host is provisioned (a status does not survive
// clusterctl move, which only moves machines with a Node, hence a provider
// ID): the HostAssociated condition with reason Associated or
// HostNotFound, a HostProvisioned condition (set from the association on,
// never removed, so an identity failure that rewrites HostAssociated does
// not undo the confirmation), or a provider ID.
func HostRecordConfirmed(m *Metal3Machine) bool {
	if m.Spec.ProviderID != "" || meta.FindStatusCondition(m.Status.Conditions, HostProvisionedCondition) != nil {
		return true
	}
	associated := meta.FindStatusCondition(m.Status.Conditions, HostAssociatedCondition)
	return associated != nil && (associated.Reason == AssociatedReason || associated.Reason == HostNotFoundReason)
}
