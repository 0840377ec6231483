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
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// Metal3ClusterFinalizer lets the controller clean up before a Metal3Cluster
// goes: deletion waits until no Metal3Machine of the cluster remains.
const Metal3ClusterFinalizer = "metal3cluster.infrastructure.cluster.x-k8s.io"

// Metal3ClusterSpec is the desired state of the infrastructure of one cluster.
type Metal3ClusterSpec struct {
	// controlPlaneEndpoint is where the workload cluster's API server is
	// reached, typically a virtual IP in front of the control plane hosts.
	// +optional
	ControlPlaneEndpoint APIEndpoint `json:"controlPlaneEndpoint,omitempty,omitzero"`

	// noCloudProvider, when true, makes the provider set each Node's
	// providerID itself because no cloud provider will.
	//
	// Deprecated: use cloudProviderEnabled=false instead.
	// +optional
	NoCloudProvider *bool `json:"noCloudProvider,omitempty"`

	// cloudProviderEnabled says whether a cloud provider (such as the Metal3
	// cloud controller manager) sets the Nodes' providerID. When false or
	// unset (as upstream CAPM3 reads it), the provider sets it, finding each
	// Node by the host's metal3.io/uuid label, else by its hostname.
	// +optional
	CloudProviderEnabled *bool `json:"cloudProviderEnabled,omitempty"`

	// failureDomains the cluster's machines may be spread over, by name.
	// A host belongs to a failure domain through its
	// infrastructure.cluster.x-k8s.io/failure-domain label.
	// +optional
	FailureDomains map[string]FailureDomainSpec `json:"failureDomains,omitempty"`

	// identityRef names the kubeconfig Secret used to reach the
	// BareMetalHosts of this cluster's machines. Empty: the provider's own
	// credentials, with the hosts in this object's namespace. A
	// Metal3Machine may override it with its own identityRef.
	// +optional
	IdentityRef *IdentityRef `json:"identityRef,omitempty"`

	// hostMode says how the cluster's machines get their hosts:
	// "BareMetalHost" (the default) claims BareMetalHosts directly;
	// "HostClaim" asks for each host with a HostClaim that the pool's
	// binder fulfils, so the identity never sees a BareMetalHost or a BMC
	// credential. A Metal3Machine may override it with its own hostMode.
	// +optional
	HostMode HostMode `json:"hostMode,omitempty"`
}

// APIEndpoint is a reachable Kubernetes API endpoint.
type APIEndpoint struct {
	// host is the hostname or IP address the API server serves on.
	Host string `json:"host"`

	// port is the port the API server serves on.
	Port int `json:"port"`
}

// IsZero reports whether the endpoint is unset.
func (e APIEndpoint) IsZero() bool { return e.Host == "" && e.Port == 0 }

// FailureDomainSpec describes one failure domain of the cluster.
type FailureDomainSpec struct {
	// controlPlane says whether control plane machines may be placed here.
	// +optional
	ControlPlane bool `json:"controlPlane,omitempty"`

	// attributes are free-form properties of the failure domain.
	// +optional
	Attributes map[string]string `json:"attributes,omitempty"`
}

// Metal3ClusterStatus is the observed state of a Metal3Cluster, following the
// CAPI v1beta2 InfraCluster contract.
type Metal3ClusterStatus struct {
	// initialization reports when the cluster's infrastructure is ready for
	// machines; CAPI waits for it before creating any.
	// +optional
	Initialization Metal3ClusterInitializationStatus `json:"initialization,omitempty,omitzero"`

	// observedGeneration is the generation of the spec that the status
	// reports on.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, Paused and IdentityReady.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// failureDomains are the failure domains of spec.failureDomains, as the
	// list the CAPI contract asks for.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	FailureDomains []clusterv1.FailureDomain `json:"failureDomains,omitempty"`

	// identity is the identity the cluster was last reconciled with.
	// +optional
	Identity *IdentityStatus `json:"identity,omitempty"`

	// lastUpdated is when the status last changed.
	// +optional
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`
}

// Metal3ClusterInitializationStatus is part of the CAPI contract.
// +kubebuilder:validation:MinProperties=1
type Metal3ClusterInitializationStatus struct {
	// provisioned is true once the cluster's infrastructure is ready.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// Metal3Cluster is the Metal3 infrastructure of one CAPI Cluster: its control
// plane endpoint, failure domains and the identity used to reach its hosts.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=metal3clusters,scope=Namespaced,categories=cluster-api,shortName=m3c;m3cluster;m3clusters;metal3c;metal3cluster
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",description="Cluster to which this Metal3Cluster belongs"
// +kubebuilder:printcolumn:name="Provisioned",type="boolean",JSONPath=".status.initialization.provisioned",description="Infrastructure is ready for machines"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status",description="Ready condition"
// +kubebuilder:printcolumn:name="Endpoint",type="string",JSONPath=".spec.controlPlaneEndpoint.host",description="Control plane endpoint host",priority=1
// +kubebuilder:printcolumn:name="Identity",type="string",JSONPath=".spec.identityRef.name",description="Kubeconfig Secret used to reach the hosts (empty: in-cluster)"
// +kubebuilder:printcolumn:name="Identity-Status",type="string",JSONPath=".status.conditions[?(@.type=='IdentityReady')].reason",description="State of the identity"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation"
type Metal3Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   Metal3ClusterSpec   `json:"spec,omitempty"`
	Status Metal3ClusterStatus `json:"status,omitempty"`
}

// GetConditions returns the conditions, for CAPI's conditions utilities.
func (c *Metal3Cluster) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions replaces the conditions, for CAPI's conditions utilities.
func (c *Metal3Cluster) SetConditions(conditions []metav1.Condition) {
	c.Status.Conditions = conditions
}

// Metal3ClusterList is a list of Metal3Clusters.
//
// +kubebuilder:object:root=true
type Metal3ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Metal3Cluster `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &Metal3Cluster{}, &Metal3ClusterList{})
}
