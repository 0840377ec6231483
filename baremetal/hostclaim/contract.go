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

// Package hostclaim is the contract between the two halves of HostClaim
// mode: the provider, which creates HostClaims in the pool on behalf of
// Metal3Machines, and the pool-side binder (cmd/hostclaim-binder), which
// binds each claim to a BareMetalHost and reports back. A tenant in this
// mode reads and writes HostClaims, their Secrets and HardwareData in its
// own pool namespace, and nothing else: everything it learns of its host
// comes through what is defined here.
//
// What the BMO HostClaim API (metal3.io/v1alpha1) defines is used as is:
// the Associated and Synchronized conditions with their reasons,
// status.bareMetalHost, status.hardwareData and status.poweredOn. The API
// has no field for the host's provisioning state or its errors; the binder
// reports them in two more conditions, Provisioned and Healthy, whose
// reasons this package maps to and from the host's state and error type.
//
// What the data templates read of the host reaches the tenant through a
// copy of its HardwareData in the claim's namespace, named after the claim
// and owned by it, which status.hardwareData points to: spec.hardware is the
// host's hardware details (NICs with names, MACs and IPs, hostname, CPU,
// storage), its labels are the host's labels and its annotations the host's
// except BMO's own (those with a metal3.io key prefix). Never the BMC
// address, nor the name of the BMC credentials Secret.
package hostclaim

import (
	"strings"
	"unicode"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// Conditions the binder sets on a HostClaim beyond the API's own.
const (
	// ProvisionedCondition is True once the host runs the claim's image.
	// Its reason is always the host's provisioning state (StateReason), so
	// the tenant sees where its host is; its message says it in words.
	ProvisionedCondition = "Provisioned"
	// HealthyCondition is False while the host reports an operational
	// error; the reason is the error type (ErrorReason), the message the
	// host's error message with the BMC's address and credentials removed.
	HealthyCondition = "Healthy"
	// HealthyReason is the reason of a True Healthy condition.
	HealthyReason = "NoError"
	// WaitingForHostReason is the Provisioned reason of a claim that has
	// no host yet.
	WaitingForHostReason = "WaitingForHost"
	// NamespaceNotAdmittedReason is the Associated reason of a claim that
	// no HostDeployPolicy admits; it is given no host.
	NamespaceNotAdmittedReason = "NamespaceNotAdmitted"
	// ImageNotAllowedReason is the Synchronized reason of a claim whose
	// image (or checksum) URL the pool's deploy policy refuses; its host is
	// not given the image.
	ImageNotAllowedReason = "ImageNotAllowed"
	// CustomDeployNotAllowedReason is the Synchronized reason of a claim
	// whose custom deploy method the pool's deploy policy refuses.
	CustomDeployNotAllowedReason = "CustomDeployNotAllowed"
	// WaitingForSecretReason is the Synchronized reason of a claim one of
	// whose Secrets does not exist: the provider creates a claim with its
	// image and the names of its Secrets and writes the Secrets right after
	// it, owned by it, so a missing Secret is waited for, not a failure.
	// Its host is not given what to provision meanwhile; the Secret's
	// creation brings the claim back.
	WaitingForSecretReason = "WaitingForSecret"
	// UnhealthyMarkRefusedReason is the reason of the Event on a claim
	// whose unhealthy mark the binder did not carry to its host: its
	// namespace already has as many hosts marked as the pool allows.
	UnhealthyMarkRefusedReason = "UnhealthyMarkRefused"
	// HandledByBinderCondition is False on a claim the binder leaves to
	// another HostClaim controller (the Bare Metal Operator's own, behind
	// --hostclaims), which bound it: with reason
	// BoundByAnotherControllerReason, the message naming the host.
	HandledByBinderCondition = "HandledByBinder"
	// BoundByAnotherControllerReason: a host names the claim as consumer
	// without the claim's UID, which the binder always records.
	BoundByAnotherControllerReason = "BoundByAnotherController"
)

// Annotations on a HostClaim the binder acts on, and on the host it binds.
const (
	// PausedAnnotation on a claim pauses its host (BMO's pause annotation,
	// set by the binder with the value PausedByBinder) and stops the binder
	// from syncing the claim to it; removing it resumes both. The value on
	// the claim is free (the provider writes its own).
	PausedAnnotation = bmov1alpha1.PausedAnnotation
	// PausedByBinder is the value of the host's pause annotation the binder
	// sets, so that it never removes an operator's pause.
	PausedByBinder = "metal3.io/hostclaim-binder"
	// RebootAnnotationPrefix: an annotation of the claim equal to
	// "reboot.metal3.io" or starting with "reboot.metal3.io/" is mirrored on
	// its host (BMO reboots the host while it is there) and removed from
	// the host when it goes from the claim. Remediation reboots this way.
	RebootAnnotationPrefix = bmov1alpha1.RebootAnnotationPrefix
	// MirroredRebootsAnnotation on a host lists, comma separated, the
	// reboot annotations the binder mirrored there, so it removes only its own.
	MirroredRebootsAnnotation = "hostclaim.metal3.io/mirrored-reboots"

	// NodeReuseKeyAnnotation on a claim names what the claim's host may be
	// kept for when the claim is released, and which kept host a new claim
	// prefers: for the provider, "<cluster>/<MachineDeployment or control
	// plane>". Keys are scoped to the claim's namespace.
	NodeReuseKeyAnnotation = "hostclaim.metal3.io/node-reuse-key"
	// KeepOnReleaseAnnotation "true" on a claim being deleted asks the
	// binder to keep its host for the claim's node reuse key.
	KeepOnReleaseAnnotation = "hostclaim.metal3.io/keep-on-release"
	// KeptForAnnotation on a released host: "<claim namespace>/<key>". Only
	// a claim of that namespace with that key may take the host; the
	// reservation ends when such a claim takes it, or once no claim of the
	// namespace carries the key for the binder's node reuse grace period.
	KeptForAnnotation = "hostclaim.metal3.io/kept-for"
	// KeptSinceAnnotation on a kept host: when it was kept (RFC 3339).
	KeptSinceAnnotation = "hostclaim.metal3.io/kept-since"
	// UnhealthyAnnotation on a claim says remediation gave up on its host
	// (the name upstream CAPM3 v1.13+ puts on hosts). The binder marks the
	// host with it at once; the mark outlives the claim, so the released
	// host is bound to no claim (and kept for no node reuse) until the
	// pool admin, having repaired it, removes the annotation from the host.
	UnhealthyAnnotation = pool.UnhealthyAnnotation
	// DeprecatedUnhealthyAnnotation on a claim asks the same (the name
	// older providers write): the binder accepts either on a claim
	// (pool.UnhealthyMark) and writes UnhealthyAnnotation on the host.
	DeprecatedUnhealthyAnnotation = pool.DeprecatedUnhealthyAnnotation
	// UnhealthyMarkedByAnnotation on a host marked unhealthy by the
	// binder names the claim namespace whose claim asked for the mark: a
	// namespace may have only so many hosts marked at a time, so one tenant
	// cannot take the pool's hosts out of it.
	UnhealthyMarkedByAnnotation = "hostclaim.metal3.io/unhealthy-marked-by"
)

// Labels the binder puts on what it writes in the host's namespace.
const (
	// ClaimUIDLabel on a Secret copied next to a host, and on the host's
	// HardwareData copy, is the UID of the claim it was written for.
	ClaimUIDLabel = "hostclaim.metal3.io/claim-uid"
	// ClaimAnnotation on a Secret copied next to a host says which claim it
	// is for, for people: "<namespace>/<name>".
	ClaimAnnotation = "hostclaim.metal3.io/claim"
)

// knownStates are the provisioning states a host reports.
var knownStates = []bmov1alpha1.ProvisioningState{
	bmov1alpha1.StateNone, bmov1alpha1.StateUnmanaged, bmov1alpha1.StateRegistering, bmov1alpha1.StateMatchProfile,
	bmov1alpha1.StatePreparing, bmov1alpha1.StateReady, bmov1alpha1.StateAvailable, bmov1alpha1.StateProvisioning,
	bmov1alpha1.StateProvisioned, bmov1alpha1.StateExternallyProvisioned, bmov1alpha1.StateDeprovisioning,
	bmov1alpha1.StateInspecting, bmov1alpha1.StatePoweringOffBeforeDelete, bmov1alpha1.StateDeleting,
}

// StateReason is the Provisioned condition's reason for a host state: the
// state in CamelCase ("externally provisioned" is ExternallyProvisioned;
// the empty state, a host just created, is Registering).
func StateReason(state bmov1alpha1.ProvisioningState) string {
	if state == bmov1alpha1.StateNone {
		return camel(string(bmov1alpha1.StateRegistering))
	}
	return camel(string(state))
}

// StateFromReason is the host state a Provisioned reason stands for, and
// whether it stands for one (WaitingForHost does not).
func StateFromReason(reason string) (bmov1alpha1.ProvisioningState, bool) {
	for _, state := range knownStates {
		if state != bmov1alpha1.StateNone && camel(string(state)) == reason {
			return state, true
		}
	}
	return "", false
}

// ErrorReason is the Healthy condition's reason for an error type.
func ErrorReason(errorType bmov1alpha1.ErrorType) string {
	if errorType == "" {
		return "UnknownError"
	}
	return camel(string(errorType))
}

// camel turns "power management error" into "PowerManagementError".
func camel(words string) string {
	var b strings.Builder
	for _, word := range strings.Fields(words) {
		runes := []rune(word)
		runes[0] = unicode.ToUpper(runes[0])
		b.WriteString(string(runes))
	}
	return b.String()
}

// IsRebootAnnotation reports whether key is one of BMO's reboot annotations.
func IsRebootAnnotation(key string) bool {
	return key == RebootAnnotationPrefix || strings.HasPrefix(key, RebootAnnotationPrefix+"/")
}
