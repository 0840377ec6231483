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
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// Metal3MachineTemplateSpec is the desired state of a Metal3MachineTemplate.
type Metal3MachineTemplateSpec struct {
	// template is stamped out into a Metal3Machine for each Machine of a
	// MachineDeployment, MachineSet or control plane.
	// +required
	Template Metal3MachineTemplateResource `json:"template,omitempty,omitzero"`

	// nodeReuse keeps a host for the next machine of the same template when
	// a machine goes during a scale-down or upgrade, instead of releasing it
	// to the pool.
	// +optional
	// +kubebuilder:default=false
	NodeReuse *bool `json:"nodeReuse,omitempty"`
}

// Metal3MachineTemplateResource is the part of a Metal3Machine a template sets.
type Metal3MachineTemplateResource struct {
	// metadata is applied to each Metal3Machine created from the template:
	// labels and annotations only.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec of each Metal3Machine created from the template.
	// +required
	Spec Metal3MachineSpec `json:"spec,omitempty"`
}

// Metal3MachineTemplate is a template for Metal3Machines.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:path=metal3machinetemplates,scope=Namespaced,categories=cluster-api,shortName=m3mt;m3machinetemplate;m3machinetemplates;metal3mt;metal3machinetemplate
// +kubebuilder:printcolumn:name="Identity",type="string",JSONPath=".spec.template.spec.identityRef.name",description="Kubeconfig Secret overriding the cluster's identity (empty: the cluster's)"
// +kubebuilder:printcolumn:name="Node-Reuse",type="boolean",JSONPath=".spec.nodeReuse",description="Hosts are kept for the next machine of this template"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation"
type Metal3MachineTemplate struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the Metal3MachineTemplate.
	// +required
	Spec Metal3MachineTemplateSpec `json:"spec,omitempty,omitzero"`
}

// Metal3MachineTemplateList is a list of Metal3MachineTemplates.
//
// +kubebuilder:object:root=true
type Metal3MachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the Metal3MachineTemplates.
	Items []Metal3MachineTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &Metal3MachineTemplate{}, &Metal3MachineTemplateList{})
}
