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

package hostdriver

import (
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
)

// hostConditions is what BMO's computeConditions derives from a state.
type hostConditions struct {
	manageable        metav1.ConditionStatus
	manageableReason  string
	available         bool
	provisioned       bool
	progressing       metav1.ConditionStatus
	progressingReason string
}

func conditionsFor(host *bmov1alpha1.BareMetalHost) hostConditions {
	inProgress := func(reason string) hostConditions {
		return hostConditions{metav1.ConditionTrue, bmov1alpha1.ManageableReason, false, false, metav1.ConditionTrue, reason}
	}
	switch host.Status.Provisioning.State {
	case bmov1alpha1.StateNone, bmov1alpha1.StateUnmanaged:
		return hostConditions{metav1.ConditionFalse, bmov1alpha1.NotManagedReason, false, false, metav1.ConditionFalse, bmov1alpha1.NotProgressingReason}
	case bmov1alpha1.StateRegistering:
		reason := bmov1alpha1.RegisteringReason
		if host.Status.OperationalStatus == bmov1alpha1.OperationalStatusError {
			reason = bmov1alpha1.RegistrationFailedReason
		}
		return hostConditions{metav1.ConditionFalse, reason, false, false, metav1.ConditionTrue, bmov1alpha1.RegisteringReason}
	case bmov1alpha1.StateAvailable, bmov1alpha1.StateReady:
		return hostConditions{metav1.ConditionTrue, bmov1alpha1.ManageableReason, true, false, metav1.ConditionFalse, bmov1alpha1.NotProgressingReason}
	case bmov1alpha1.StateProvisioned, bmov1alpha1.StateExternallyProvisioned:
		return hostConditions{metav1.ConditionTrue, bmov1alpha1.ManageableReason, false, true, metav1.ConditionFalse, bmov1alpha1.NotProgressingReason}
	case bmov1alpha1.StateInspecting, bmov1alpha1.StateMatchProfile:
		return inProgress(bmov1alpha1.InspectingReason)
	case bmov1alpha1.StatePreparing:
		return inProgress(bmov1alpha1.PreparingReason)
	case bmov1alpha1.StateProvisioning:
		return inProgress(bmov1alpha1.ProvisioningReason)
	case bmov1alpha1.StateDeprovisioning:
		return inProgress(bmov1alpha1.DeprovisioningReason)
	case bmov1alpha1.StatePoweringOffBeforeDelete:
		return inProgress(bmov1alpha1.PoweringOffBeforeDeleteReason)
	}
	return inProgress(bmov1alpha1.DeletingReason)
}

// setConditions sets the conditions BMO's computeConditions sets for a
// healthy fixture (no power failure, health unknown).
func setConditions(host *bmov1alpha1.BareMetalHost) {
	set := func(kind string, status metav1.ConditionStatus, reason string) {
		conditions.Set(host, metav1.Condition{Type: kind, Status: status, Reason: reason})
	}
	c := conditionsFor(host)
	set(bmov1alpha1.ManageableCondition, c.manageable, c.manageableReason)
	if c.available {
		set(bmov1alpha1.AvailableForProvisioningCondition, metav1.ConditionTrue, bmov1alpha1.AvailableReason)
	} else {
		set(bmov1alpha1.AvailableForProvisioningCondition, metav1.ConditionFalse, bmov1alpha1.NotAvailableReason)
	}
	if c.provisioned {
		set(bmov1alpha1.ProvisionedCondition, metav1.ConditionTrue, bmov1alpha1.ProvisionedReason)
		set(bmov1alpha1.ReadyCondition, metav1.ConditionTrue, bmov1alpha1.ProvisionedReason)
	} else {
		set(bmov1alpha1.ProvisionedCondition, metav1.ConditionFalse, bmov1alpha1.NotProvisionedReason)
		set(bmov1alpha1.ReadyCondition, metav1.ConditionFalse, bmov1alpha1.NotProvisionedReason)
	}
	set(bmov1alpha1.ProgressingCondition, c.progressing, c.progressingReason)
	switch host.Status.OperationalStatus {
	case bmov1alpha1.OperationalStatusError:
		set(bmov1alpha1.ReadyCondition, metav1.ConditionFalse, bmov1alpha1.ErrorReason)
	case bmov1alpha1.OperationalStatusDetached:
		set(bmov1alpha1.ReadyCondition, metav1.ConditionFalse, bmov1alpha1.DetachedReason)
		set(bmov1alpha1.ProgressingCondition, metav1.ConditionFalse, bmov1alpha1.DetachedReason)
	}
	if meta.FindStatusCondition(host.Status.Conditions, bmov1alpha1.HealthyCondition) == nil {
		set(bmov1alpha1.HealthyCondition, metav1.ConditionUnknown, bmov1alpha1.UnknownHealthReason)
	}
}
