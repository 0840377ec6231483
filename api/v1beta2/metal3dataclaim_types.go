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

// DataClaimFinalizer keeps a Metal3DataClaim until its Metal3Data, and with
// it its index, is released.
const DataClaimFinalizer = "metal3dataclaim.infrastructure.cluster.x-k8s.io"

// Condition of a Metal3DataClaim besides Ready.
const (
	// Metal3DataClaimDataReadyCondition is true when the template has
	// created the claim's Metal3Data and that Metal3Data has rendered its
	// Secrets.
	Metal3DataClaimDataReadyCondition = "DataReady"
)

// Reasons of the DataReady condition.
const (
	// Metal3DataClaimDataReadyReason: the Metal3Data exists and is ready.
	Metal3DataClaimDataReadyReason = "DataReady"
	// Metal3DataClaimTemplateNotFoundReason: the Metal3DataTemplate named by
	// spec.template does not exist.
	Metal3DataClaimTemplateNotFoundReason = "TemplateNotFound"
	// Metal3DataClaimWaitingForDataReason: the template has not yet created
	// the Metal3Data, or the Metal3Data is not ready yet.
	Metal3DataClaimWaitingForDataReason = "WaitingForData"
	// Metal3DataClaimDataFailedReason: the Metal3Data could not be created or
	// rendered; the message says why.
	Metal3DataClaimDataFailedReason = "DataFailed"
)

// Metal3DataClaimSpec names the template a machine takes its data from.
type Metal3DataClaimSpec struct {
	// template is the Metal3DataTemplate to take data from.
	// +optional
	Template *Metal3ObjectRef `json:"template,omitempty"`
}

// Metal3DataClaimStatus is the observed state of a Metal3DataClaim.
type Metal3DataClaimStatus struct {
	// renderedData is the Metal3Data created for this claim.
	// +optional
	RenderedData *Metal3ObjectRef `json:"renderedData,omitempty"`

	// errorMessage explains the last failure to obtain the data, if any.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ErrorMessage string `json:"errorMessage,omitempty"`

	// observedGeneration is the generation of the spec that the status
	// reports on.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions describe the state of the claim: Ready and DataReady.
	// The Metal3DataTemplate controller writes them, so a claim pauses
	// with its template and has no Paused condition of its own.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:path=metal3dataclaims,scope=Namespaced,categories=cluster-api,shortName=m3dc;m3dataclaim;m3dataclaims;metal3dc;metal3dataclaim
// +kubebuilder:printcolumn:name="Template",type="string",JSONPath=".spec.template.name",description="Metal3DataTemplate the data is taken from"
// +kubebuilder:printcolumn:name="Data",type="string",JSONPath=".status.renderedData.name",description="Metal3Data created for the claim"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description="Whether the data is rendered"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation"

// Metal3DataClaim is a machine's request for data from a Metal3DataTemplate.
// A Metal3Machine creates one; the template answers by allocating an index
// and creating a Metal3Data.
type Metal3DataClaim struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the requested template.
	// +optional
	Spec Metal3DataClaimSpec `json:"spec,omitempty"`

	// status is the observed state.
	// +optional
	Status Metal3DataClaimStatus `json:"status,omitempty"`
}

// GetConditions returns the conditions of the claim.
func (c *Metal3DataClaim) GetConditions() []metav1.Condition {
	return c.Status.Conditions
}

// SetConditions replaces the conditions of the claim.
func (c *Metal3DataClaim) SetConditions(conditions []metav1.Condition) {
	c.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// Metal3DataClaimList is a list of Metal3DataClaims.
type Metal3DataClaimList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the claims.
	Items []Metal3DataClaim `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &Metal3DataClaim{}, &Metal3DataClaimList{})
}
