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

// Metal3ClusterIdentitySpec is the desired state of a Metal3ClusterIdentity.
type Metal3ClusterIdentitySpec struct {
	// secretRef names the Secret holding the kubeconfig of the pool, and
	// the context to use in it.
	SecretRef KubeconfigSecretReference `json:"secretRef"`

	// allowedNamespaces says from which namespaces a Metal3Cluster (or a
	// Metal3Machine or Metal3MachineTemplate) may use this identity. When it
	// is unset, or sets neither list nor selector, no namespace may: an
	// identity is unusable until its admin says who may use it.
	// +optional
	AllowedNamespaces *AllowedNamespaces `json:"allowedNamespaces,omitempty"`

	// allowedHostModes are the host modes objects may use this identity
	// in; empty means both, as before the field existed. The admin decides
	// what the identity's credentials are used for, not the tenant: an
	// identity meant for HostClaim mode lists HostClaim alone, and a tenant
	// asking for BareMetalHost mode with it is refused (IdentityReady
	// False, reason HostModeNotAllowed) before anything is read through it,
	// whatever the kubeconfig's Role would allow.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=2
	AllowedHostModes []HostMode `json:"allowedHostModes,omitempty"`
}

// KubeconfigSecretReference names a Secret holding a kubeconfig under the
// key "kubeconfig" (else "value"), as an identityRef of kind Secret does,
// and the context of that kubeconfig to use.
type KubeconfigSecretReference struct {
	// name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// namespace of the Secret. Empty means the namespace the provider runs
	// in (capm3-system when installed by clusterctl). Keeping the Secret
	// there, where tenants have no access, is the point of a cluster
	// identity: tenants use the credentials without being able to read
	// them.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// context selects a context of the kubeconfig. Empty means the
	// kubeconfig's current context.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Context string `json:"context,omitempty"`
}

// AllowedNamespaces says which namespaces may use a cluster identity. A
// namespace is admitted when it is named in list or its labels match
// selector; with neither set, none is.
type AllowedNamespaces struct {
	// list names admitted namespaces. An empty list admits none by itself.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=512
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	List []string `json:"list,omitempty"`

	// selector admits the namespaces whose labels it matches. An empty
	// selector ({}) matches every namespace, including those created later;
	// an unset one matches none. Every namespace carries its name in the
	// kubernetes.io/metadata.name label, so matchExpressions on that label
	// can also admit namespaces by name.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// Metal3ClusterIdentityStatus is the observed state of a Metal3ClusterIdentity.
type Metal3ClusterIdentityStatus struct {
	// observedGeneration is the generation of the spec that the status
	// reports on.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready says whether the Secret holds a usable kubeconfig.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// clusters is how many Metal3Clusters use this identity, so that an
	// admin sees whether it can be changed or deleted without harm.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Clusters int32 `json:"clusters,omitempty"`
}

// Metal3ClusterIdentity is a kubeconfig for reaching a pool of hosts that a
// platform admin provides to chosen namespaces, without handing the
// kubeconfig to them: the Secret stays in a namespace tenants cannot read,
// and an identityRef of kind Metal3ClusterIdentity names the identity, not
// the Secret. Being cluster-scoped, it can only be written with rights
// granted cluster-wide, which tenants lack: that is what keeps a tenant from
// pointing the provider at a Secret of another namespace.
//
// clusterctl move takes every identity, with the Secret it owns (the
// provider puts an ownerReference on it), once: the CRD's move-hierarchy
// label makes them a hierarchy of their own, copied to the target and left
// in the source, as cluster-wide objects are.
//
// +kubebuilder:object:root=true
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io/move-hierarchy=true"
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:path=metal3clusteridentities,scope=Cluster,categories=cluster-api,shortName=m3ci;metal3ci;metal3clusteridentity
// +kubebuilder:printcolumn:name="Secret",type="string",JSONPath=".spec.secretRef.name",description="Kubeconfig Secret of the identity"
// +kubebuilder:printcolumn:name="Secret-Namespace",type="string",JSONPath=".spec.secretRef.namespace",description="Namespace of the Secret (empty: the provider's)",priority=1
// +kubebuilder:printcolumn:name="Clusters",type="integer",JSONPath=".status.clusters",description="Metal3Clusters using the identity"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status",description="Ready condition"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation"
type Metal3ClusterIdentity struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   Metal3ClusterIdentitySpec   `json:"spec,omitempty"`
	Status Metal3ClusterIdentityStatus `json:"status,omitempty"`
}

// GetConditions returns the conditions, for CAPI's conditions utilities.
func (i *Metal3ClusterIdentity) GetConditions() []metav1.Condition { return i.Status.Conditions }

// SetConditions replaces the conditions, for CAPI's conditions utilities.
func (i *Metal3ClusterIdentity) SetConditions(conditions []metav1.Condition) {
	i.Status.Conditions = conditions
}

// Metal3ClusterIdentityList is a list of Metal3ClusterIdentities.
//
// +kubebuilder:object:root=true
type Metal3ClusterIdentityList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Metal3ClusterIdentity `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &Metal3ClusterIdentity{}, &Metal3ClusterIdentityList{})
}
