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

// Metal3RemediationTemplateSpec is the desired state of a Metal3RemediationTemplate.
type Metal3RemediationTemplateSpec struct {
	// template is stamped out into a Metal3Remediation for each machine a
	// MachineHealthCheck finds unhealthy.
	// +required
	Template Metal3RemediationTemplateResource `json:"template,omitempty,omitzero"`
}

// Metal3RemediationTemplateResource is the part of a Metal3Remediation a template sets.
type Metal3RemediationTemplateResource struct {
	// spec of each Metal3Remediation created from the template.
	// +required
	Spec Metal3RemediationSpec `json:"spec,omitempty,omitzero"`
}

// Metal3RemediationTemplateStatus is the observed state of a
// Metal3RemediationTemplate. The provider does not write it: the schema
// carries it as upstream CAPM3 does.
type Metal3RemediationTemplateStatus struct {
	// status is a Metal3Remediation status.
	// +optional
	Status Metal3RemediationStatus `json:"status,omitempty,omitzero"`
}

// Metal3RemediationTemplate is a template for Metal3Remediations, referenced
// by a MachineHealthCheck's remediation template.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:path=metal3remediationtemplates,scope=Namespaced,categories=cluster-api,shortName=m3rt;m3remediationtemplate;m3remediationtemplates;metal3rt;metal3remediationtemplate
// +kubebuilder:printcolumn:name="Strategy",type="string",JSONPath=".spec.template.spec.strategy.type",description="Remediation strategy"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation"
type Metal3RemediationTemplate struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the Metal3RemediationTemplate.
	// +optional
	Spec Metal3RemediationTemplateSpec `json:"spec,omitempty,omitzero"`

	// status is the observed state of the Metal3RemediationTemplate.
	// +optional
	Status Metal3RemediationTemplateStatus `json:"status,omitempty,omitzero"`
}

// Metal3RemediationTemplateList is a list of Metal3RemediationTemplates.
//
// +kubebuilder:object:root=true
type Metal3RemediationTemplateList struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the Metal3RemediationTemplates.
	Items []Metal3RemediationTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &Metal3RemediationTemplate{}, &Metal3RemediationTemplateList{})
}
