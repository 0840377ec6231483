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
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
)

// setCondition sets a condition of claim, observed at its generation.
func setCondition(claim *bmov1alpha1.HostClaim, conditionType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{
		Type: conditionType, Status: status, Reason: reason, Message: message,
		ObservedGeneration: claim.Generation,
	})
}

// reportHost tells the tenant what it may know of its host: which one it
// is, its power, where its provisioning is and whether it reports an
// error, with the BMC's address and credentials removed from the message.
func (r *Reconciler) reportHost(claim *bmov1alpha1.HostClaim, host *bmov1alpha1.BareMetalHost) {
	claim.Status.BareMetalHost = &bmov1alpha1.ObjectReference{Namespace: host.Namespace, Name: host.Name}
	claim.Status.PoweredOn = host.Status.PoweredOn
	setCondition(claim, bmov1alpha1.AssociatedCondition, metav1.ConditionTrue, bmov1alpha1.BareMetalHostAssociatedReason,
		fmt.Sprintf("bound to host %s/%s", host.Namespace, host.Name))

	state := host.Status.Provisioning.State
	provisioned := metav1.ConditionFalse
	if state == bmov1alpha1.StateProvisioned {
		provisioned = metav1.ConditionTrue
	}
	stateName := string(state)
	if state == bmov1alpha1.StateNone {
		stateName = string(bmov1alpha1.StateRegistering)
	}
	setCondition(claim, hostclaim.ProvisionedCondition, provisioned, hostclaim.StateReason(state),
		fmt.Sprintf("the host is %s", stateName))

	if host.Status.OperationalStatus == bmov1alpha1.OperationalStatusError || host.Status.ErrorMessage != "" {
		message := host.Status.ErrorMessage
		if message == "" {
			message = "the host reports an error"
		}
		setCondition(claim, hostclaim.HealthyCondition, metav1.ConditionFalse, hostclaim.ErrorReason(host.Status.ErrorType),
			hostclaim.Redact(message, host.Spec.BMC))
	} else {
		setCondition(claim, hostclaim.HealthyCondition, metav1.ConditionTrue, hostclaim.HealthyReason, "the host reports no error")
	}
}

// writeStatus writes claim's status if it differs from original's, with
// lastUpdated bumped only then: a status that changes at every reconcile
// would wake every watcher of claims for nothing.
func (r *Reconciler) writeStatus(ctx context.Context, original, claim *bmov1alpha1.HostClaim) error {
	before, after := original.Status.DeepCopy(), claim.Status.DeepCopy()
	before.LastUpdated, after.LastUpdated = nil, nil
	if equality.Semantic.DeepEqual(before, after) {
		return nil
	}
	now := metav1.NewTime(r.now())
	claim.Status.LastUpdated = &now
	if err := r.Client.Status().Patch(ctx, claim, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}
