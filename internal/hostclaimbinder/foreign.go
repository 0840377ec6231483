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
	"context"
	"fmt"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
)

// Another HostClaim controller on the same pool.
//
// The Bare Metal Operator v0.14 has a HostClaim controller of its own
// (behind --hostclaims), with the same finalizer name and a consumerRef of
// the same kind. Two controllers binding one claim could give it two hosts,
// each then provisioned with the tenant's data. This binder always records
// the claim's UID in the consumerRef; BMO's records none. A host naming a
// claim without its UID was bound by another controller: the binder leaves
// that claim alone (no binding, no sync, no release: its finalizer is the
// other controller's to remove), and says so on the claim. BMO's controller
// does not detect this binder's bindings the same way, so a pool runs one
// of them (docs/hostclaim-binder.md).

// hostClaimNameIndex indexes hosts bound to a HostClaim without its UID by
// "<claim namespace>/<claim name>".
const hostClaimNameIndex = "hostclaimbinder.consumerNameWithoutUID"

// boundWithoutUID is the index function of hostClaimNameIndex.
func boundWithoutUID(o client.Object) []string {
	host, ok := o.(*bmov1alpha1.BareMetalHost)
	if !ok || !isClaimRef(host.Spec.ConsumerRef) || host.Spec.ConsumerRef.UID != "" {
		return nil
	}
	return []string{host.Spec.ConsumerRef.Namespace + "/" + host.Spec.ConsumerRef.Name}
}

// boundElsewhere is the host another HostClaim controller bound claim to,
// or nil.
func (r *Reconciler) boundElsewhere(ctx context.Context, claim *bmov1alpha1.HostClaim) (*bmov1alpha1.BareMetalHost, error) {
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := r.Client.List(ctx, hosts, client.MatchingFields{hostClaimNameIndex: claim.Namespace + "/" + claim.Name}); err != nil {
		return nil, fmt.Errorf("list hosts bound to the claim by another controller: %w", err)
	}
	if len(hosts.Items) == 0 {
		return nil, nil
	}
	return &hosts.Items[0], nil
}

// leaveToOtherController reports on claim that another HostClaim
// controller bound it to host, which the binder therefore leaves alone.
// Nothing else of the claim is written.
func (r *Reconciler) leaveToOtherController(ctx context.Context, claim *bmov1alpha1.HostClaim, host *bmov1alpha1.BareMetalHost) error {
	message := fmt.Sprintf("Host %s/%s names this claim as its consumer without the claim's UID, as another HostClaim controller "+
		"(the Bare Metal Operator's --hostclaims) binds: the HostClaim binder leaves the claim to it. "+
		"Run one HostClaim controller per pool (docs/hostclaim-binder.md)", host.Namespace, host.Name)
	previous := meta.FindStatusCondition(claim.Status.Conditions, hostclaim.HandledByBinderCondition)
	if previous != nil && previous.Status == metav1.ConditionFalse && previous.Message == message {
		return nil
	}
	ctrl.LoggerFrom(ctx).Info("HostClaim bound by another controller: left alone", "host", klog.KObj(host))
	r.Recorder.Eventf(claim, nil, corev1.EventTypeWarning, hostclaim.BoundByAnotherControllerReason, "LeaveClaim", "%s", message)
	original := claim.DeepCopy()
	setCondition(claim, hostclaim.HandledByBinderCondition, metav1.ConditionFalse, hostclaim.BoundByAnotherControllerReason, message)
	return r.writeStatus(ctx, original, claim)
}
