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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DataFinalizer keeps a Metal3Data until the Secrets it wrote next to the
// BareMetalHost and the IP address claims it made are released.
const DataFinalizer = "metal3data.infrastructure.cluster.x-k8s.io"

// DataIdentityAnnotation records, on a Metal3Data, the identity through
// which its Secrets were written next to the host (JSON), so they can be
// deleted through it after the Metal3Machine is gone.
const DataIdentityAnnotation = "infrastructure.cluster.x-k8s.io/data-identity"

// Condition of a Metal3Data besides Ready and Paused.
const (
	// Metal3DataSecretsRenderedCondition is true when the metadata and
	// network data Secrets asked for by the template have been written next
	// to the BareMetalHost.
	Metal3DataSecretsRenderedCondition = "SecretsRendered"
)

// Reasons of the SecretsRendered condition.
const (
	// Metal3DataSecretsRenderedReason: the Secrets are written and current.
	Metal3DataSecretsRenderedReason = "SecretsRendered"
	// Metal3DataWaitingForHostReason: the Metal3Machine has no
	// BareMetalHost yet, and the template reads values from the host.
	Metal3DataWaitingForHostReason = "WaitingForHost"
	// Metal3DataWaitingForIPAddressReason: an address requested from an IP
	// pool has not been allocated yet.
	Metal3DataWaitingForIPAddressReason = "WaitingForIPAddress"
	// Metal3DataRenderingFailedReason: the template cannot be rendered for
	// this machine (e.g. a missing label, annotation or host interface, or
	// a pool that does not exist); the message says why.
	Metal3DataRenderingFailedReason = "RenderingFailed"
)

// Metal3DataSpec identifies the machine's data: which claim it answers, from
// which template, with which index.
type Metal3DataSpec struct {
	// index is the index allocated to the machine in the template. Values
	// derived from it (e.g. host names) are unique among the template's
	// machines.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Index *int32 `json:"index,omitempty"`

	// templateReference is copied from the template's templateReference.
	// +optional
	TemplateReference string `json:"templateReference,omitempty"`

	// metaData names the Secret the rendered metadata is written to. Empty
	// means a name derived from the Metal3Data; status.metaData reports
	// where it was actually written.
	// +optional
	MetaData *corev1.SecretReference `json:"metaData,omitempty"`

	// networkData names the Secret the rendered network data is written to.
	// Empty means a name derived from the Metal3Data; status.networkData
	// reports where it was actually written.
	// +optional
	NetworkData *corev1.SecretReference `json:"networkData,omitempty"`

	// claim is the Metal3DataClaim this data answers.
	// +optional
	Claim *Metal3ObjectRef `json:"claim,omitempty"`

	// template is the Metal3DataTemplate the data is rendered from.
	// +optional
	Template *Metal3ObjectRef `json:"template,omitempty"`
}

// Metal3DataStatus is the observed state of a Metal3Data.
type Metal3DataStatus struct {
	// ready is true when every Secret asked for by the template has been
	// rendered and written.
	// +optional
	Ready *bool `json:"ready,omitempty"`

	// errorMessage explains the last rendering failure, if any.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ErrorMessage string `json:"errorMessage,omitempty"`

	// lastUpdated is when the Secrets were last written.
	// +optional
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`

	// metaData is the Secret the metadata was written to. It is next to the
	// BareMetalHost, which may be in another namespace or, with an
	// identityRef, on another cluster.
	// +optional
	MetaData *SecretReference `json:"metaData,omitempty"`

	// networkData is the Secret the network data was written to. It is next
	// to the BareMetalHost, which may be in another namespace or, with an
	// identityRef, on another cluster.
	// +optional
	NetworkData *SecretReference `json:"networkData,omitempty"`

	// observedGeneration is the generation of the spec that the status
	// reports on.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions describe the state of the data: Ready, Paused and
	// SecretsRendered.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:path=metal3datas,scope=Namespaced,categories=cluster-api,shortName=m3d;m3data;m3datas;metal3d;metal3data
// +kubebuilder:printcolumn:name="Index",type="integer",JSONPath=".spec.index",description="Index of the machine in the template"
// +kubebuilder:printcolumn:name="Ready",type="boolean",JSONPath=".status.ready",description="Whether the Secrets are rendered"
// +kubebuilder:printcolumn:name="Claim",type="string",JSONPath=".spec.claim.name",description="Metal3DataClaim the data answers"
// +kubebuilder:printcolumn:name="Template",type="string",JSONPath=".spec.template.name",priority=1,description="Metal3DataTemplate the data is rendered from"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation"

// Metal3Data is the data of one machine, rendered from a Metal3DataTemplate
// for a Metal3DataClaim: it writes the machine's metadata and network data
// into Secrets that the BareMetalHost is provisioned with.
type Metal3Data struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec identifies the machine's data.
	// +optional
	Spec Metal3DataSpec `json:"spec,omitempty,omitzero"`

	// status is the observed state.
	// +optional
	Status Metal3DataStatus `json:"status,omitempty"`
}

// GetConditions returns the conditions of the data.
func (d *Metal3Data) GetConditions() []metav1.Condition {
	return d.Status.Conditions
}

// SetConditions replaces the conditions of the data.
func (d *Metal3Data) SetConditions(conditions []metav1.Condition) {
	d.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// Metal3DataList is a list of Metal3Data.
type Metal3DataList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the Metal3Data objects.
	Items []Metal3Data `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &Metal3Data{}, &Metal3DataList{})
}
