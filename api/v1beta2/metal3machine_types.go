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
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

const (
	// Metal3MachineFinalizer keeps a Metal3Machine until its host is
	// deprovisioned and released.
	Metal3MachineFinalizer = "metal3machine.infrastructure.cluster.x-k8s.io"

	// HostAnnotation records the associated BareMetalHost as
	// "<namespace>/<name>", as upstream CAPM3 does. Written with the
	// finalizer, before the claim, it is an intent until the claim is
	// confirmed (HostRecordConfirmed), and fixed from then on.
	HostAnnotation = "metal3.io/BareMetalHost"

	// HostClaimAnnotation records, in HostClaim mode, the machine's
	// HostClaim in the pool as "<namespace>/<name>". A machine carrying it
	// stays in HostClaim mode whatever its cluster says later, as one with
	// HostAnnotation stays with its BareMetalHost.
	HostClaimAnnotation = "infrastructure.cluster.x-k8s.io/host-claim"
	// HostLostAnnotation, set (any value) by an operator on a deleting
	// Metal3Machine whose host cannot be found through its identity
	// (HostAssociated False, reason HostNotFound), lets the machine go
	// without releasing its host. It changes nothing while a host or claim
	// naming the machine as its consumer can be found: that one is always
	// released first.
	HostLostAnnotation = "infrastructure.cluster.x-k8s.io/host-lost"
	// HostReleasedAnnotation on a deleting Metal3Machine records the host
	// the provider released ("<namespace>/<name>"), so that the rest of the
	// deletion (data, identity) does not wait for a host it can no longer
	// check: after hosts moved to another namespace (docs/move.md), the
	// recorded host's name is no longer where the machine recorded it. Like
	// host-lost, it changes nothing while a host naming the machine as its
	// consumer can be found.
	HostReleasedAnnotation = "infrastructure.cluster.x-k8s.io/host-released"
)

// Metal3MachineSpec is the desired state of one machine's bare metal host.
// Either image or customDeploy is needed, so it is never empty.
type Metal3MachineSpec struct {
	// providerID is metal3://<host-namespace>/<host-name>/<metal3machine-name>
	// once the machine has a host; set by the provider, or by a cloud
	// provider when cloudProviderEnabled is true, and matches the Node's.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ProviderID string `json:"providerID,omitempty"`

	// image to write to the host's disk. Either image or customDeploy is needed.
	// +optional
	Image Image `json:"image,omitempty,omitzero"`

	// customDeploy deploys the host with a custom Ironic deploy method
	// instead of an image. Either image or customDeploy is needed.
	// +optional
	CustomDeploy CustomDeploy `json:"customDeploy,omitempty,omitzero"`

	// userData is a Secret with cloud-init (or ignition) data for the host.
	// Usually empty: the bootstrap provider's data is used. An empty
	// namespace means the Metal3Machine's.
	// +optional
	UserData *corev1.SecretReference `json:"userData,omitempty"`

	// hostSelector restricts which hosts may be chosen for this machine.
	// +optional
	HostSelector *HostSelector `json:"hostSelector,omitempty"`

	// dataTemplate is the Metal3DataTemplate metadata and network data are
	// rendered from for this machine. Keys it renders take precedence over
	// those of metaData.
	// +optional
	DataTemplate *Metal3ObjectRef `json:"dataTemplate,omitempty"`

	// metaData is a Secret with metadata for the host, used as is.
	// +optional
	MetaData *corev1.SecretReference `json:"metaData,omitempty"`

	// networkData is a Secret with network data for the host, used as is.
	// +optional
	NetworkData *corev1.SecretReference `json:"networkData,omitempty"`

	// automatedCleaningMode sets the host's disk cleaning on provisioning and
	// deprovisioning: "metadata" cleans, "disabled" does not. Empty keeps the
	// host's own setting.
	// +optional
	// +kubebuilder:validation:Enum=metadata;disabled
	AutomatedCleaningMode string `json:"automatedCleaningMode,omitempty,omitzero"`

	// failureDomain the machine should be placed in; copied from the Machine.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	FailureDomain string `json:"failureDomain,omitempty"`

	// identityRef overrides the Metal3Cluster's identityRef for this machine:
	// the kubeconfig Secret used to reach its host. Once the machine has a
	// host it cannot change, so the host is never lost track of.
	// +optional
	IdentityRef *IdentityRef `json:"identityRef,omitempty"`

	// hostMode overrides the Metal3Cluster's hostMode for this machine.
	// Once the machine has a host (or a HostClaim) it cannot change.
	// +optional
	HostMode HostMode `json:"hostMode,omitempty"`
}

// Metal3MachineStatus is the observed state of a Metal3Machine, following the
// CAPI v1beta2 InfraMachine contract.
type Metal3MachineStatus struct {
	// conditions: Ready, Paused, IdentityReady (when the machine overrides
	// the identity), HostAssociated, HostProvisioned and DataReady.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// lastUpdated is when the status last changed.
	// +optional
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`

	// addresses of the host, from its hardware details.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Addresses []clusterv1.MachineAddress `json:"addresses,omitempty"`

	// initialization reports when the host is provisioned; CAPI then copies
	// providerID, addresses and failureDomain to the Machine.
	// +optional
	Initialization Metal3MachineInitializationStatus `json:"initialization,omitempty,omitzero"`

	// userData is the user data Secret next to the host (in the host's
	// cluster and namespace), as referenced by the host.
	// +optional
	UserData *corev1.SecretReference `json:"userData,omitempty"`

	// renderedData is the Metal3Data rendered for this machine, in this
	// machine's namespace.
	// +optional
	RenderedData *Metal3ObjectRef `json:"renderedData,omitempty"`

	// metaData is the metadata Secret next to the host.
	// +optional
	MetaData *corev1.SecretReference `json:"metaData,omitempty"`

	// networkData is the network data Secret next to the host.
	// +optional
	NetworkData *corev1.SecretReference `json:"networkData,omitempty"`

	// observedGeneration is the generation of the spec that the status
	// reports on.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// failureDomain the host is in.
	// +optional
	FailureDomain string `json:"failureDomain,omitempty"`

	// identity is the identity the machine was last reconciled with, after
	// falling back to the Metal3Cluster's and then the in-cluster one.
	// +optional
	Identity *IdentityStatus `json:"identity,omitempty"`
}

// Metal3MachineInitializationStatus is part of the CAPI contract.
// +kubebuilder:validation:MinProperties=1
type Metal3MachineInitializationStatus struct {
	// provisioned is true once the host is provisioned with the machine's image.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// Condition types of a Metal3Machine besides Ready, Paused and IdentityReady.
const (
	// HostAssociatedCondition: a BareMetalHost is claimed for the machine.
	HostAssociatedCondition = "HostAssociated"
	// HostProvisionedCondition: the host is provisioned with the machine's image.
	HostProvisionedCondition = "HostProvisioned"
	// DataReadyCondition: metadata and network data are rendered and next to the host.
	DataReadyCondition = "DataReady"
)

// Reasons of the Metal3Machine conditions.
const (
	// WaitingForClusterInfrastructureReason: the Metal3Cluster is not provisioned yet.
	WaitingForClusterInfrastructureReason = "WaitingForClusterInfrastructure"
	// WaitingForBootstrapDataReason: the bootstrap provider has not produced data yet.
	WaitingForBootstrapDataReason = "WaitingForBootstrapData"
	// NoAvailableHostReason: no host matches the selector and is free.
	NoAvailableHostReason = "NoAvailableHost"
	// HostNotFoundReason: the associated host cannot be found through the identity.
	HostNotFoundReason = "HostNotFound"
	// AssociatedReason: a host is claimed.
	AssociatedReason = "Associated"
	// ProvisioningReason: the host is being provisioned.
	ProvisioningReason = "Provisioning"
	// ProvisionedReason: the host is provisioned.
	ProvisionedReason = "Provisioned"
	// DeprovisioningReason: the host is being deprovisioned before release.
	DeprovisioningReason = "Deprovisioning"
	// HostErrorReason: the host reports an error.
	HostErrorReason = "HostError"
	// IdentityNotReadyReason: the identity cannot be used; see IdentityReady.
	IdentityNotReadyReason = "IdentityNotReady"
	// WaitingForDataReason: the host waits for the machine's metadata and
	// network data to be rendered; see DataReady.
	WaitingForDataReason = "WaitingForData"
)

// Metal3Machine is the bare metal host of one CAPI Machine.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:path=metal3machines,scope=Namespaced,categories=cluster-api,shortName=m3m;m3machine;m3machines;metal3m;metal3machine
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",description="Cluster to which this Metal3Machine belongs"
// +kubebuilder:printcolumn:name="Provisioned",type="boolean",JSONPath=".status.initialization.provisioned",description="Host is provisioned"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status",description="Ready condition"
// +kubebuilder:printcolumn:name="Host",type="string",JSONPath=".metadata.annotations['metal3\\.io/BareMetalHost']",description="Associated BareMetalHost (namespace/name)"
// +kubebuilder:printcolumn:name="Phase",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].reason",description="What the machine is waiting for, or Ready"
// +kubebuilder:printcolumn:name="ProviderID",type="string",JSONPath=".spec.providerID",description="Provider ID",priority=1
// +kubebuilder:printcolumn:name="Identity",type="string",JSONPath=".status.identity.secretName",description="Kubeconfig Secret used to reach the host (empty: in-cluster)",priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation"
type Metal3Machine struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the Metal3Machine.
	// +optional
	Spec Metal3MachineSpec `json:"spec,omitempty"`

	// status is the observed state of the Metal3Machine.
	// +optional
	Status Metal3MachineStatus `json:"status,omitempty"`
}

// GetConditions returns the conditions, for CAPI's conditions utilities.
func (m *Metal3Machine) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions replaces the conditions, for CAPI's conditions utilities.
func (m *Metal3Machine) SetConditions(conditions []metav1.Condition) {
	m.Status.Conditions = conditions
}

// Metal3MachineList is a list of Metal3Machines.
//
// +kubebuilder:object:root=true
type Metal3MachineList struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the Metal3Machines.
	Items []Metal3Machine `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &Metal3Machine{}, &Metal3MachineList{})
}
