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

// Metal3ClusterTemplateSpec is the desired state of a Metal3ClusterTemplate.
type Metal3ClusterTemplateSpec struct {
	// template is stamped out into a Metal3Cluster for each Cluster of a ClusterClass.
	Template Metal3ClusterTemplateResource `json:"template"`
}

// Metal3ClusterTemplateResource is the part of a Metal3Cluster a template sets.
type Metal3ClusterTemplateResource struct {
	// metadata is applied to each Metal3Cluster created from the template.
	// +optional
	ObjectMeta ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec of each Metal3Cluster created from the template.
	Spec Metal3ClusterSpec `json:"spec"`
}

// ObjectMeta is the subset of metadata a template may set on the objects it
// creates: labels and annotations only.
type ObjectMeta struct {
	// labels to set on created objects.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// annotations to set on created objects.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Metal3ClusterTemplate is a template for Metal3Clusters, used by ClusterClasses.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=metal3clustertemplates,scope=Namespaced,categories=cluster-api,shortName=m3ct
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation"
type Metal3ClusterTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec Metal3ClusterTemplateSpec `json:"spec,omitempty"`
}

// Metal3ClusterTemplateList is a list of Metal3ClusterTemplates.
//
// +kubebuilder:object:root=true
type Metal3ClusterTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Metal3ClusterTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &Metal3ClusterTemplate{}, &Metal3ClusterTemplateList{})
}
