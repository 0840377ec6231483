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

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RemediationType names a way of remediating an unhealthy machine.
type RemediationType string

const (
	// RebootRemediationStrategy power-cycles the host.
	RebootRemediationStrategy RemediationType = "Reboot"

	// DefaultRemediationRetryLimit is how many reboots are tried when the
	// strategy sets no limit.
	DefaultRemediationRetryLimit = 1
	// DefaultRemediationTimeout is how long a reboot is given to make the
	// node healthy when the strategy sets no timeout.
	DefaultRemediationTimeout = "600s"
	// MinRemediationTimeout is the shortest timeout accepted: a host takes
	// minutes to power-cycle and boot.
	MinRemediationTimeout = "100s"
	// DefaultRemediationTimeoutSeconds is DefaultRemediationTimeout in
	// seconds, as timeoutSeconds holds it.
	DefaultRemediationTimeoutSeconds = 600
	// MinRemediationTimeoutSeconds is MinRemediationTimeout in seconds, as
	// timeoutSeconds holds it.
	MinRemediationTimeoutSeconds = 100
)

// Metal3RemediationSpec is the desired remediation of one unhealthy machine.
type Metal3RemediationSpec struct {
	// strategy of the remediation.
	// +optional
	Strategy *RemediationStrategy `json:"strategy,omitempty"`
}

// RemediationStrategy says how to remediate, how often to try and how long to wait.
type RemediationStrategy struct {
	// type of remediation; only Reboot is supported.
	// +optional
	// +kubebuilder:validation:Enum=Reboot
	Type RemediationType `json:"type,omitempty"`

	// retryLimit is how many times remediation is tried before the machine
	// is given up on.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1
	RetryLimit int32 `json:"retryLimit,omitempty"`

	// timeoutSeconds is how long each try waits for the node to become
	// healthy, in seconds: at least 100, as a host takes minutes to
	// power-cycle and boot.
	// +optional
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:default=600
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
}

// RemediationPhase is where a remediation stands. status.phase holds one of
// the RemediationPhase* values as a plain string; they are untyped so that
// they compare with and assign to it directly.
type RemediationPhase string

const (
	// RemediationPhaseRunning: the host is being power-cycled.
	RemediationPhaseRunning = "Running"
	// RemediationPhaseWaiting: waiting for the node to come back healthy.
	RemediationPhaseWaiting = "Waiting"
	// RemediationPhaseDeleting: remediation failed; the machine is being deleted.
	RemediationPhaseDeleting = "Deleting machine"
	// RemediationPhaseFailed: remediation gave up and nothing will replace
	// the machine (it has no owner), or the strategy is not supported.
	RemediationPhaseFailed = "Failed"
)

// Metal3RemediationStatus is the observed state of a Metal3Remediation.
type Metal3RemediationStatus struct {
	// phase of the remediation: one of the RemediationPhase* values.
	// +optional
	// +kubebuilder:validation:Enum=Running;Waiting;Deleting machine;Failed
	Phase string `json:"phase,omitempty"`

	// retryCount is how many times remediation has been tried.
	// +optional
	// +kubebuilder:validation:Minimum=1
	RetryCount int32 `json:"retryCount,omitempty"`

	// lastRemediated is when remediation was last tried.
	// +optional
	LastRemediated *metav1.Time `json:"lastRemediated,omitempty"`

	// conditions: HostFound, PowerCycled, NodeRestored and Paused.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

const (
	// Metal3RemediationFinalizer keeps a remediation until its host is
	// powered on again and its node's labels are restored, should the
	// MachineHealthCheck delete it halfway through.
	Metal3RemediationFinalizer = "metal3remediation.infrastructure.cluster.x-k8s.io"

	// RemediationNodeBackupAnnotation holds, on a Metal3Remediation, the
	// labels and annotations of the Node it deleted (JSON: {"labels": {…},
	// "annotations": {…}}), until they are restored onto the Node that
	// registers after the reboot. Kept on the object, not in memory, so that
	// a provider restart between the deletion and the restore loses nothing.
	RemediationNodeBackupAnnotation = "remediation.metal3.io/node-backup"

	// RemediationNodeStrategyAnnotation records, on a Metal3Remediation,
	// how it takes the machine's Node out of service while the host is
	// powered off: RemediationNodeOutOfServiceTaint or
	// RemediationNodeDeletion. Decided once per remediation from the
	// workload cluster's Kubernetes version and written before the Node is
	// touched, so a provider restart, or a version read that fails later,
	// never switches a remediation from one to the other halfway.
	RemediationNodeStrategyAnnotation = "remediation.metal3.io/node-strategy"
	// RemediationNodeOutOfServiceTaint: the Node is tainted
	// node.kubernetes.io/out-of-service while the host is off and keeps its
	// identity (Kubernetes 1.28 and later, upstream CAPM3's flow there).
	RemediationNodeOutOfServiceTaint = "OutOfServiceTaint"
	// RemediationNodeDeletion: the Node is saved and deleted while the host
	// is off, and its labels and annotations restored on the Node that
	// registers after (older workload clusters, or one whose version cannot
	// be read).
	RemediationNodeDeletion = "Deletion"

	// RemediationRebootAnnotationPrefix starts the Bare Metal Operator reboot
	// annotation a remediation sets on its host (reboot.metal3.io/<key>):
	// the host stays powered off while it is there and powers on when it is
	// removed. The key ends with the Metal3Machine's consumer ID, which
	// names the remediated machine in the pool and survives clusterctl move.
	RemediationRebootAnnotationPrefix = "reboot.metal3.io/capm3-remediation-"
	// UpstreamRemediationRebootAnnotationPrefix is upstream CAPM3's reboot
	// annotation, keyed by the Metal3Remediation's UID: a remediation in
	// flight when upstream CAPM3 was replaced by this provider left it on
	// its host, which the Bare Metal Operator keeps powered off while it is
	// there. The remediation that adopts it, or the host's release,
	// removes it.
	UpstreamRemediationRebootAnnotationPrefix = "reboot.metal3.io/metal3-remediation-"

	// RemediationHistoryAnnotation holds, on a Metal3Machine, what its last
	// remediation left when the MachineHealthCheck deleted it (JSON: the
	// retry count, the last reboot and when the machine was found healthy).
	// A remediation created for the machine within its timeout of that
	// counts on from it: a machine a reboot heals only for a moment is not
	// rebooted forever, it is replaced after retryLimit reboots.
	RemediationHistoryAnnotation = "remediation.metal3.io/last-remediation"
)

// Condition types of a Metal3Remediation besides Paused.
const (
	// RemediationHostFoundCondition: the unhealthy machine's host is reached
	// through the machine's identity and still consumed by it.
	RemediationHostFoundCondition = "HostFound"
	// RemediationPowerCycledCondition: the current try has powered the host
	// off and on again.
	RemediationPowerCycledCondition = "PowerCycled"
	// RemediationNodeRestoredCondition: the Node deleted while the host was
	// off has registered again and has its labels and annotations back; or,
	// with the out-of-service taint, the Node is back in service (the taint
	// removed once the host is powered on).
	RemediationNodeRestoredCondition = "NodeRestored"
)

// Reasons of the Metal3Remediation conditions.
const (
	// RemediationMachineNotFoundReason: no Machine of the remediation's name.
	RemediationMachineNotFoundReason = "MachineNotFound"
	// RemediationMetal3MachineNotFoundReason: the Machine's infrastructure
	// is not a Metal3Machine that exists.
	RemediationMetal3MachineNotFoundReason = "Metal3MachineNotFound"
	// RemediationHostNotAssociatedReason: the Metal3Machine has no host.
	RemediationHostNotAssociatedReason = "HostNotAssociated"
	// RemediationHostFoundReason: the host is found.
	RemediationHostFoundReason = "HostFound"
	// RemediationPoweringOffReason: the reboot annotation is set; waiting
	// for the host to power off, then for its Node to be deleted.
	RemediationPoweringOffReason = "PoweringOff"
	// RemediationPoweringOnReason: the reboot annotation is removed; waiting
	// for the host to power on.
	RemediationPoweringOnReason = "PoweringOn"
	// RemediationPowerCycledReason: the host was powered off and on.
	RemediationPowerCycledReason = "PowerCycled"
	// RemediationWorkloadClusterUnreachableReason: the workload cluster
	// cannot be reached to delete or restore the Node.
	RemediationWorkloadClusterUnreachableReason = "WorkloadClusterUnreachable"
	// RemediationWaitingForNodeReason: the Node is deleted; waiting for it
	// to register again.
	RemediationWaitingForNodeReason = "WaitingForNode"
	// RemediationNodeRestoredReason: the Node is back with its labels and
	// annotations, or back in service without the out-of-service taint.
	RemediationNodeRestoredReason = "NodeRestored"
	// RemediationWaitingForDrainReason: the Node is tainted out-of-service;
	// waiting for its terminating pods and its volume attachments to be
	// gone before the host is powered on.
	RemediationWaitingForDrainReason = "WaitingForDrain"
	// RemediationOutOfServiceReason: the Node is tainted out-of-service and
	// drained; the taint stays until the host is powered on.
	RemediationOutOfServiceReason = "OutOfService"
)

// Metal3Remediation remediates one unhealthy Metal3Machine, created by a
// MachineHealthCheck from a Metal3RemediationTemplate.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:path=metal3remediations,scope=Namespaced,categories=cluster-api,shortName=m3r;m3remediation
// +kubebuilder:printcolumn:name="Strategy",type="string",JSONPath=".spec.strategy.type",description="Remediation strategy"
// +kubebuilder:printcolumn:name="Phase",type="string",JSONPath=".status.phase",description="Phase of the remediation"
// +kubebuilder:printcolumn:name="Retries",type="integer",JSONPath=".status.retryCount",description="Tries so far"
// +kubebuilder:printcolumn:name="Retry-Limit",type="integer",JSONPath=".spec.strategy.retryLimit",description="Maximum tries"
// +kubebuilder:printcolumn:name="Last-Remediated",type="date",JSONPath=".status.lastRemediated",description="Time of the last try"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation"
type Metal3Remediation struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the Metal3Remediation.
	// +optional
	Spec Metal3RemediationSpec `json:"spec,omitempty"`

	// status is the observed state of the Metal3Remediation.
	// +optional
	Status Metal3RemediationStatus `json:"status,omitempty"`
}

// GetConditions returns the conditions, for CAPI's conditions utilities.
func (r *Metal3Remediation) GetConditions() []metav1.Condition { return r.Status.Conditions }

// SetConditions replaces the conditions, for CAPI's conditions utilities.
func (r *Metal3Remediation) SetConditions(conditions []metav1.Condition) {
	r.Status.Conditions = conditions
}

// Metal3RemediationList is a list of Metal3Remediations.
//
// +kubebuilder:object:root=true
type Metal3RemediationList struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the Metal3Remediations.
	Items []Metal3Remediation `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &Metal3Remediation{}, &Metal3RemediationList{})
}
