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

package v1beta1

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
	Type RemediationType `json:"type,omitempty"`

	// retryLimit is how many times remediation is tried before the machine
	// is given up on.
	// +optional
	RetryLimit int `json:"retryLimit,omitempty"`

	// timeout is how long each try waits for the node to become healthy.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// RemediationPhase is where a remediation stands.
type RemediationPhase string

const (
	// RemediationPhaseRunning: the host is being power-cycled.
	RemediationPhaseRunning RemediationPhase = "Running"
	// RemediationPhaseWaiting: waiting for the node to come back healthy.
	RemediationPhaseWaiting RemediationPhase = "Waiting"
	// RemediationPhaseDeleting: remediation failed; the machine is being deleted.
	RemediationPhaseDeleting RemediationPhase = "Deleting machine"
	// RemediationPhaseFailed: remediation failed and gave up.
	RemediationPhaseFailed RemediationPhase = "Failed"
)

// Metal3RemediationStatus is the observed state of a Metal3Remediation.
type Metal3RemediationStatus struct {
	// phase of the remediation.
	// +optional
	Phase RemediationPhase `json:"phase,omitempty"`

	// retryCount is how many times remediation has been tried.
	// +optional
	RetryCount int `json:"retryCount,omitempty"`

	// lastRemediated is when remediation was last tried.
	// +optional
	LastRemediated *metav1.Time `json:"lastRemediated,omitempty"`

	// conditions: Ready and Paused.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

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
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   Metal3RemediationSpec   `json:"spec,omitempty"`
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
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Metal3Remediation `json:"items"`
}

// Metal3RemediationTemplateSpec is the desired state of a Metal3RemediationTemplate.
type Metal3RemediationTemplateSpec struct {
	// template is stamped out into a Metal3Remediation for each machine a
	// MachineHealthCheck finds unhealthy.
	Template Metal3RemediationTemplateResource `json:"template"`
}

// Metal3RemediationTemplateResource is the part of a Metal3Remediation a template sets.
type Metal3RemediationTemplateResource struct {
	// spec of each Metal3Remediation created from the template.
	Spec Metal3RemediationSpec `json:"spec"`
}

// Metal3RemediationTemplate is a template for Metal3Remediations, referenced
// by a MachineHealthCheck's remediation template.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:path=metal3remediationtemplates,scope=Namespaced,categories=cluster-api,shortName=m3rt;m3remediationtemplate;m3remediationtemplates;metal3rt;metal3remediationtemplate
// +kubebuilder:printcolumn:name="Strategy",type="string",JSONPath=".spec.template.spec.strategy.type",description="Remediation strategy"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation"
type Metal3RemediationTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec Metal3RemediationTemplateSpec `json:"spec,omitempty"`
}

// Metal3RemediationTemplateList is a list of Metal3RemediationTemplates.
//
// +kubebuilder:object:root=true
type Metal3RemediationTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Metal3RemediationTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes,
		&Metal3Remediation{}, &Metal3RemediationList{},
		&Metal3RemediationTemplate{}, &Metal3RemediationTemplateList{})
}
