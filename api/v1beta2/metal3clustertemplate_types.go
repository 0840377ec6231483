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

// Metal3ClusterTemplateSpec is the desired state of a Metal3ClusterTemplate.
type Metal3ClusterTemplateSpec struct {
	// template is stamped out into a Metal3Cluster for each Cluster of a ClusterClass.
	// +required
	Template Metal3ClusterTemplateResource `json:"template,omitempty,omitzero"`
}

// Metal3ClusterTemplateResource is the part of a Metal3Cluster a template sets.
type Metal3ClusterTemplateResource struct {
	// metadata is applied to each Metal3Cluster created from the template:
	// labels and annotations only.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec of each Metal3Cluster created from the template.
	// +required
	Spec Metal3ClusterSpec `json:"spec,omitempty,omitzero"`
}

// Metal3ClusterTemplate is a template for Metal3Clusters, used by ClusterClasses.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:path=metal3clustertemplates,scope=Namespaced,categories=cluster-api,shortName=m3ct
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation"
type Metal3ClusterTemplate struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the Metal3ClusterTemplate.
	// +required
	Spec Metal3ClusterTemplateSpec `json:"spec,omitempty,omitzero"`
}

// Metal3ClusterTemplateList is a list of Metal3ClusterTemplates.
//
// +kubebuilder:object:root=true
type Metal3ClusterTemplateList struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the Metal3ClusterTemplates.
	Items []Metal3ClusterTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &Metal3ClusterTemplate{}, &Metal3ClusterTemplateList{})
}
