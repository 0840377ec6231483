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

// DataTemplateFinalizer keeps a Metal3DataTemplate while Metal3Data rendered
// from it exist.
const DataTemplateFinalizer = "metal3datatemplate.infrastructure.cluster.x-k8s.io"

// Condition of a Metal3DataTemplate besides Ready and Paused.
const (
	// Metal3DataTemplateIndexesAllocatedCondition is true when every
	// Metal3DataClaim that refers to the template has been given an index
	// and a Metal3Data.
	Metal3DataTemplateIndexesAllocatedCondition = "IndexesAllocated"
)

// Reasons of the IndexesAllocated condition.
const (
	// Metal3DataTemplateIndexesAllocatedReason: every claim has its index and
	// its Metal3Data.
	Metal3DataTemplateIndexesAllocatedReason = "IndexesAllocated"
	// Metal3DataTemplateAllocationPendingReason: some claims are still waiting
	// for an index or a Metal3Data.
	Metal3DataTemplateAllocationPendingReason = "AllocationPending"
	// Metal3DataTemplateAllocationFailedReason: an index or a Metal3Data could
	// not be created; the message says for which claim and why.
	Metal3DataTemplateAllocationFailedReason = "AllocationFailed"
)

// Metal3DataTemplateSpec describes the metadata and network data to render
// for every machine that uses the template.
type Metal3DataTemplateSpec struct {
	// clusterName is the name of the CAPI Cluster the template was written
	// for.
	//
	// Deprecated: a template is not bound to a Cluster: several clusters
	// (e.g. of one ClusterClass) may use it, each machine's data belongs to
	// the machine's Cluster, and the template is neither owned by nor
	// deleted with a Cluster. The field is kept for compatibility (v1beta1
	// still requires it) and is no longer used; setting it draws a warning.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ClusterName string `json:"clusterName,omitempty"`

	// metaData describes the metadata of each machine. Empty means no
	// metadata Secret is rendered.
	// +optional
	MetaData *MetaData `json:"metaData,omitempty"`

	// networkData describes the network configuration of each machine. Empty
	// means no network data Secret is rendered.
	// +optional
	NetworkData *NetworkData `json:"networkData,omitempty"`

	// templateReference is a name shared by successive versions of a
	// template (a new template is usually created for each change), so
	// that the data of a machine can be matched across those versions.
	// +optional
	TemplateReference string `json:"templateReference,omitempty"`
}

// IndexEntry is the index allocated to one Metal3DataClaim of a template.
type IndexEntry struct {
	// name of the Metal3DataClaim.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Name string `json:"name,omitempty"`

	// index allocated to the claim.
	// +required
	// +kubebuilder:validation:Minimum=0
	Index *int32 `json:"index,omitempty"`
}

// Metal3DataTemplateStatus is the observed state of a Metal3DataTemplate.
type Metal3DataTemplateStatus struct {
	// indexes lists the index allocated to each Metal3DataClaim of the
	// template. Indexes are unique.
	// +optional
	// +listType=map
	// +listMapKey=index
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	Indexes []IndexEntry `json:"indexes,omitempty"`

	// lastUpdated is when the indexes last changed.
	// +optional
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`

	// observedGeneration is the generation of the spec that the status
	// reports on.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions describe the state of the template: Ready, Paused and
	// IndexesAllocated.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io/move="
// +kubebuilder:resource:path=metal3datatemplates,scope=Namespaced,categories=cluster-api,shortName=m3dt;m3datatemplate;m3datatemplates;metal3dt;metal3datatemplate
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".spec.clusterName",description="Cluster the template names (deprecated spec.clusterName; a template may serve several clusters)"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description="Whether every claim has its data"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation"

// Metal3DataTemplate is the recipe for the metadata and network data of the
// machines of a Metal3MachineTemplate. Each machine claims data from it with
// a Metal3DataClaim, gets an index, and receives a Metal3Data that renders
// the recipe into Secrets for its BareMetalHost.
type Metal3DataTemplate struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired data.
	// +optional
	Spec Metal3DataTemplateSpec `json:"spec,omitempty,omitzero"`

	// status is the observed state.
	// +optional
	Status Metal3DataTemplateStatus `json:"status,omitempty"`
}

// GetConditions returns the conditions of the template.
func (t *Metal3DataTemplate) GetConditions() []metav1.Condition {
	return t.Status.Conditions
}

// SetConditions replaces the conditions of the template.
func (t *Metal3DataTemplate) SetConditions(conditions []metav1.Condition) {
	t.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// Metal3DataTemplateList is a list of Metal3DataTemplates.
type Metal3DataTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the templates.
	Items []Metal3DataTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &Metal3DataTemplate{}, &Metal3DataTemplateList{})
}
