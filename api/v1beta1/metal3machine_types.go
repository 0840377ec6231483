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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/selection"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

const (
	// Metal3MachineFinalizer keeps a Metal3Machine until its host is
	// deprovisioned and released.
	Metal3MachineFinalizer = "metal3machine.infrastructure.cluster.x-k8s.io"

	// HostAnnotation records the associated BareMetalHost as
	// "<namespace>/<name>", as upstream CAPM3 does.
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
type Metal3MachineSpec struct {
	// providerID is metal3://<host-namespace>/<host-name>/<metal3machine-name>
	// once the machine has a host; set by the provider.
	// +optional
	ProviderID *string `json:"providerID,omitempty"`

	// image to write to the host's disk. Either image or customDeploy is needed.
	// +optional
	Image Image `json:"image,omitempty,omitzero"`

	// customDeploy deploys the host with a custom Ironic deploy method
	// instead of an image.
	// +optional
	CustomDeploy *CustomDeploy `json:"customDeploy,omitempty"`

	// userData is a Secret with cloud-init (or ignition) data for the host.
	// Usually empty: the bootstrap provider's data is used.
	// +optional
	UserData *corev1.SecretReference `json:"userData,omitempty"`

	// hostSelector restricts which hosts may be chosen for this machine.
	// +optional
	HostSelector HostSelector `json:"hostSelector,omitempty,omitzero"`

	// dataTemplate is the Metal3DataTemplate metadata and network data are
	// rendered from for this machine.
	// +optional
	DataTemplate *corev1.ObjectReference `json:"dataTemplate,omitempty"`

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
	AutomatedCleaningMode *string `json:"automatedCleaningMode,omitempty"`

	// failureDomain the machine should be placed in; copied from the Machine.
	// +optional
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

// Image is an operating system image written to a host's disk.
type Image struct {
	// url the image is downloaded from.
	URL string `json:"url"`

	// checksum of the image, or a URL to a file of checksums.
	// +optional
	Checksum string `json:"checksum,omitempty"`

	// checksumType is the algorithm of checksum. Empty: detected from the checksum.
	// +optional
	// +kubebuilder:validation:Enum=md5;sha256;sha512
	ChecksumType *string `json:"checksumType,omitempty"`

	// format of the image on disk. live-iso boots the image from memory and
	// needs no checksum.
	// +optional
	// +kubebuilder:validation:Enum=raw;qcow2;vdi;vmdk;live-iso
	DiskFormat *string `json:"format,omitempty"`
}

// IsZero reports whether no image is set.
func (i Image) IsZero() bool {
	return i.URL == "" && i.Checksum == "" && i.ChecksumType == nil && i.DiskFormat == nil
}

// CustomDeploy selects a custom deploy method of Ironic.
type CustomDeploy struct {
	// method is the name of the custom deploy step.
	Method string `json:"method"`
}

// HostSelector matches hosts by their labels; every condition must hold.
type HostSelector struct {
	// matchLabels are labels a host must have with these values.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// matchExpressions are set-based requirements on a host's labels.
	// +optional
	MatchExpressions []HostSelectorRequirement `json:"matchExpressions,omitempty"`
}

// HostSelectorRequirement is one set-based requirement on a label.
type HostSelectorRequirement struct {
	// key of the label.
	Key string `json:"key"`

	// operator relating the label's value to values: in, notin, exists,
	// !, =, ==, !=, gt, lt.
	Operator selection.Operator `json:"operator"`

	// values the operator compares with.
	Values []string `json:"values"`
}

// Metal3MachineStatus is the observed state of a Metal3Machine, following the
// CAPI v1beta2 InfraMachine contract.
type Metal3MachineStatus struct {
	// initialization reports when the host is provisioned; CAPI then copies
	// providerID, addresses and failureDomain to the Machine.
	// +optional
	Initialization Metal3MachineInitializationStatus `json:"initialization,omitempty,omitzero"`

	// observedGeneration is the generation of the spec that the status
	// reports on.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, Paused, IdentityReady (when the machine overrides
	// the identity), HostAssociated, HostProvisioned and DataReady.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// addresses of the host, from its hardware details.
	// +optional
	// +kubebuilder:validation:MaxItems=128
	Addresses []clusterv1.MachineAddress `json:"addresses,omitempty"`

	// failureDomain the host is in.
	// +optional
	FailureDomain string `json:"failureDomain,omitempty"`

	// userData is the user data Secret next to the host (in the host's
	// cluster and namespace), as referenced by the host.
	// +optional
	UserData *corev1.SecretReference `json:"userData,omitempty"`

	// renderedData is the Metal3Data rendered for this machine, in this
	// machine's namespace.
	// +optional
	RenderedData *corev1.ObjectReference `json:"renderedData,omitempty"`

	// metaData is the metadata Secret next to the host.
	// +optional
	MetaData *corev1.SecretReference `json:"metaData,omitempty"`

	// networkData is the network data Secret next to the host.
	// +optional
	NetworkData *corev1.SecretReference `json:"networkData,omitempty"`

	// identity is the identity the machine was last reconciled with, after
	// falling back to the Metal3Cluster's and then the in-cluster one.
	// +optional
	Identity *IdentityStatus `json:"identity,omitempty"`

	// lastUpdated is when the status last changed.
	// +optional
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`
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
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   Metal3MachineSpec   `json:"spec,omitempty"`
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
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Metal3Machine `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &Metal3Machine{}, &Metal3MachineList{})
}
