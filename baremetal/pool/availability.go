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

package pool

import (
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// Why a host cannot be taken now. A host in any other provisioning state
// than available (or the deprecated ready) is unavailable for that state,
// in its own words ("provisioning", "deprovisioning", …).
const (
	BeingDeleted     = "being deleted"
	InUse            = "in use"
	ReportingError   = "reporting an error"
	MarkedUnhealthy  = "marked unhealthy"
	PausedOrDetached = "paused or detached"
	Registering      = "registering"
)

// Unavailability says why host cannot be taken now, or "" if it can:
// registered and inspected (available, or the deprecated ready), not
// consumed, reporting no error (neither an error message nor the error
// operational status: BMO may set one before the other), not marked
// unhealthy, not paused or detached, not being deleted. Power does not
// matter: the consumer sets it.
func Unavailability(host *bmov1alpha1.BareMetalHost) string {
	switch {
	case !host.DeletionTimestamp.IsZero():
		return BeingDeleted
	case host.Spec.ConsumerRef != nil:
		return InUse
	}
	return unavailabilityOfUnconsumed(host)
}

// unavailabilityOfUnconsumed is Unavailability for a host not being
// deleted, whatever its consumerRef says.
func unavailabilityOfUnconsumed(host *bmov1alpha1.BareMetalHost) string {
	if host.Status.OperationalStatus == bmov1alpha1.OperationalStatusError || host.Status.ErrorMessage != "" {
		return ReportingError
	}
	if UnhealthyMark(host.Annotations) != "" {
		return MarkedUnhealthy
	}
	for _, annotation := range []string{bmov1alpha1.PausedAnnotation, bmov1alpha1.DetachedAnnotation} {
		if _, ok := host.Annotations[annotation]; ok {
			return PausedOrDetached
		}
	}
	switch state := host.Status.Provisioning.State; state {
	case bmov1alpha1.StateAvailable, bmov1alpha1.StateReady:
		return ""
	case bmov1alpha1.StateNone:
		return Registering
	default:
		return string(state)
	}
}

// UnhealthyMark returns the annotation of annotations that marks a host
// (or a claim) unhealthy: UnhealthyAnnotation, else the deprecated
// DeprecatedUnhealthyAnnotation, with any value; "" if neither is there.
func UnhealthyMark(annotations map[string]string) string {
	for _, key := range []string{UnhealthyAnnotation, DeprecatedUnhealthyAnnotation} {
		if _, ok := annotations[key]; ok {
			return key
		}
	}
	return ""
}

// reservedForCluster reports whether host's consumerRef is upstream CAPM3
// v1.14's node reuse reservation for cluster ("<namespace>/<name>"): on
// releasing a host it keeps for node reuse, upstream points the host's
// consumerRef at the machine's Cluster (besides its node reuse label), so
// that no other consumer takes it. The host is in use for everyone else;
// for the consumer its label keeps it for, it is the kept host.
func reservedForCluster(host *bmov1alpha1.BareMetalHost, cluster string) bool {
	ref := host.Spec.ConsumerRef
	if ref == nil || cluster == "" || ref.Kind != "Cluster" {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == clusterv1.GroupVersion.Group && ref.Namespace+"/"+ref.Name == cluster
}

// Available reports whether host can be taken now.
func Available(host *bmov1alpha1.BareMetalHost) bool { return Unavailability(host) == "" }

// needsAdmin reports whether a host unavailable for reason may stay so
// until the pool admin acts: a consumer never waits for such a host, even
// one kept for it.
func needsAdmin(reason string) bool {
	return reason == BeingDeleted || reason == ReportingError || reason == MarkedUnhealthy
}
