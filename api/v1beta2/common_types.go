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
	"k8s.io/apimachinery/pkg/selection"
)

// APIEndpoint is a reachable Kubernetes API endpoint.
// +kubebuilder:validation:MinProperties=1
type APIEndpoint struct {
	// host is the hostname or IP address the API server serves on.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Host string `json:"host,omitempty"`

	// port is the port the API server serves on.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
}

// IsZero reports whether the endpoint is unset.
func (e APIEndpoint) IsZero() bool { return e.Host == "" && e.Port == 0 }

// HostSelector matches hosts by their labels; every condition must hold.
type HostSelector struct {
	// matchLabels are labels a host must have with these values.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// matchExpressions are set-based requirements on a host's labels.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	MatchExpressions []HostSelectorRequirement `json:"matchExpressions,omitempty"`
}

// HostSelectorRequirement is one set-based requirement on a label.
type HostSelectorRequirement struct {
	// key of the label.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Key string `json:"key,omitempty"`

	// operator relating the label's value to values: in, notin, exists,
	// !, =, ==, !=, gt, lt.
	// +required
	Operator selection.Operator `json:"operator,omitempty"`

	// values the operator compares with.
	// +required
	// +listType=set
	// +kubebuilder:validation:MaxItems=512
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	Values []string `json:"values,omitempty"`
}

// Image is an operating system image written to a host's disk.
type Image struct {
	// url the image is downloaded from.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Format=uri
	URL string `json:"url,omitempty"`

	// checksum of the image (md5, sha256 or sha512), or a URL to a file of
	// checksums. May be empty when diskFormat is live-iso, which needs none.
	// +required
	// +kubebuilder:validation:MinLength=0
	// +kubebuilder:validation:MaxLength=512
	Checksum *string `json:"checksum,omitempty"`

	// checksumType is the algorithm of checksum. Empty: detected from the checksum.
	// +optional
	// +kubebuilder:validation:Enum=md5;sha256;sha512
	ChecksumType string `json:"checksumType,omitempty"`

	// diskFormat of the image. live-iso boots the image from memory and
	// needs no checksum.
	// +optional
	// +kubebuilder:validation:Enum=raw;qcow2;vdi;vmdk;live-iso
	DiskFormat string `json:"diskFormat,omitempty"`
}

// IsZero reports whether no image is set.
func (i Image) IsZero() bool {
	return i.URL == "" && i.Checksum == nil && i.ChecksumType == "" && i.DiskFormat == ""
}

// CustomDeploy selects a custom deploy method of Ironic.
type CustomDeploy struct {
	// method is the name of the custom deploy step, as the deploy ramdisk
	// knows it; only of use with a ramdisk that implements it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Method string `json:"method,omitempty"`
}

// Metal3ObjectRef names an object of this API group by name and namespace;
// its kind is implied by the field that holds it.
// +structType=atomic
type Metal3ObjectRef struct {
	// name of the object.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// namespace of the object. Empty means the namespace of the referring
	// object.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Namespace string `json:"namespace,omitempty"`
}

// IdentityRef names the credentials used to reach the BareMetalHosts, by
// kind:
//   - Secret (the default, as before kind existed): a Secret in the same
//     namespace as the object that refers to it, holding a kubeconfig under
//     the key "kubeconfig" (else "value"). The tenant holds the credentials.
//   - Metal3ClusterIdentity: a cluster-scoped identity set up by a platform
//     admin, whose kubeconfig Secret tenants cannot read. It is usable only
//     from the namespaces its allowedNamespaces admits, and it chooses the
//     context itself.
//
// The BareMetalHosts are looked up in the namespace of the chosen context,
// or in the referring object's namespace when the context sets none.
//
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind != 'Metal3ClusterIdentity' || !has(self.context) || size(self.context) == 0",message="context must be empty when kind is Metal3ClusterIdentity: the identity's secretRef chooses the context"
type IdentityRef struct {
	// kind of the credentials: Secret or Metal3ClusterIdentity. Empty
	// means Secret.
	// +optional
	// +kubebuilder:default=Secret
	Kind IdentityKind `json:"kind,omitempty"`

	// name of the Secret holding the kubeconfig, or of the
	// Metal3ClusterIdentity.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// context selects a context of the kubeconfig. Empty means the
	// kubeconfig's current context. Only for kind Secret: a
	// Metal3ClusterIdentity names its context in its own secretRef.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Context string `json:"context,omitempty"`
}

// IdentityKind says what an identityRef's name refers to.
// +kubebuilder:validation:Enum=Secret;Metal3ClusterIdentity
type IdentityKind string

const (
	// IdentityKindSecret: name is a kubeconfig Secret in the referring
	// object's namespace.
	IdentityKindSecret IdentityKind = "Secret"
	// IdentityKindMetal3ClusterIdentity: name is a Metal3ClusterIdentity.
	IdentityKindMetal3ClusterIdentity IdentityKind = "Metal3ClusterIdentity"
)

// KindOrDefault is the kind of the reference, Secret when it is unset:
// objects written before kind existed, or not yet defaulted, mean a Secret.
func (r *IdentityRef) KindOrDefault() IdentityKind {
	if r.Kind == "" {
		return IdentityKindSecret
	}
	return r.Kind
}

// HostMode says how a machine gets its host.
// +kubebuilder:validation:Enum=BareMetalHost;HostClaim
type HostMode string

const (
	// HostModeBareMetalHost: the provider chooses a BareMetalHost and
	// claims it itself, through the machine's identity, which therefore
	// reads and writes the hosts (and their namespace's Secrets). The
	// default, as upstream.
	HostModeBareMetalHost HostMode = "BareMetalHost"
	// HostModeHostClaim: the provider creates a HostClaim (metal3.io) in the
	// identity's namespace, with its Secrets beside it, and a binder run by
	// the pool's admin binds it to a host. The identity needs rights on
	// HostClaims, HardwareData and Secrets of its own namespace only, and
	// never sees a BareMetalHost or a BMC credential.
	HostModeHostClaim HostMode = "HostClaim"
)

// OrDefault is m, or BareMetalHost when unset.
func (m HostMode) OrDefault() HostMode {
	if m == "" {
		return HostModeBareMetalHost
	}
	return m
}

// IdentitySource says where the credentials in use come from.
// +kubebuilder:validation:Enum=InCluster;Secret;Metal3ClusterIdentity
type IdentitySource string

const (
	// IdentitySourceInCluster means the provider's own credentials, with the
	// BareMetalHosts in the object's namespace.
	IdentitySourceInCluster IdentitySource = "InCluster"
	// IdentitySourceSecret means a kubeconfig Secret named by an identityRef.
	IdentitySourceSecret IdentitySource = "Secret"
	// IdentitySourceMetal3ClusterIdentity means the kubeconfig Secret of a
	// Metal3ClusterIdentity named by an identityRef.
	IdentitySourceMetal3ClusterIdentity IdentitySource = "Metal3ClusterIdentity"
)

// IdentityStatus reports the identity an object was last reconciled with,
// after resolution (a Metal3Machine inherits its Metal3Cluster's identityRef
// unless it sets its own).
type IdentityStatus struct {
	// source of the credentials.
	// +optional
	Source IdentitySource `json:"source,omitempty"`

	// identityName is the Metal3ClusterIdentity, when source is
	// Metal3ClusterIdentity.
	// +optional
	IdentityName string `json:"identityName,omitempty"`

	// secretNamespace is the namespace of the kubeconfig Secret, when source
	// is Metal3ClusterIdentity (a Secret identityRef's is the object's own).
	// Empty while the identity cannot be used from the object's namespace.
	// +optional
	SecretNamespace string `json:"secretNamespace,omitempty"`

	// secretName is the kubeconfig Secret, when source is Secret, or the
	// one the Metal3ClusterIdentity named when it was last used.
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// context of the kubeconfig in use, when source is Secret or
	// Metal3ClusterIdentity.
	// +optional
	Context string `json:"context,omitempty"`

	// hostNamespace is the namespace where the BareMetalHosts are looked up.
	// +optional
	HostNamespace string `json:"hostNamespace,omitempty"`
}

// SecretReference points at a Secret, by name and namespace, as Kubernetes'
// own SecretReference does.
type SecretReference struct {
	// name of the Secret.
	// +optional
	Name string `json:"name,omitempty"`

	// namespace of the Secret. Empty means the namespace of the referring
	// object.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// Condition types shared by several kinds. Ready and Paused follow the CAPI
// v1beta2 contract; CAPI mirrors Ready into the owning object's
// InfrastructureReady condition.
const (
	// ReadyCondition summarises whether the object is in its desired state.
	ReadyCondition = "Ready"
	// PausedCondition is true while the Cluster is paused (spec.paused) or the
	// object carries the cluster.x-k8s.io/paused annotation.
	PausedCondition = "Paused"
	// IdentityReadyCondition reports whether the identity in use can reach
	// the BareMetalHosts with the permissions the provider needs.
	IdentityReadyCondition = "IdentityReady"
	// WorkloadClusterReachableCondition reports, on a Metal3Machine and its
	// Metal3Cluster, whether the provider can reach the workload cluster
	// through the kubeconfig Secret Cluster API keeps for it
	// (<cluster>-kubeconfig), which it needs to give Nodes their providerID
	// when no cloud provider does, to sync labels and to remediate. The
	// Secret is the tenant's to write, so it is judged like an identity's
	// kubeconfig; a False condition has the IdentityReady reason of the
	// same problem (InvalidKubeconfig, ContextNotFound, ServerNotAllowed,
	// NotAnAPIServer, Unreachable, Unauthorized, Forbidden), Connecting
	// while a connection is under way, or WorkloadKubeconfigNotFoundReason.
	// Absent while the provider has no need to reach the cluster.
	WorkloadClusterReachableCondition = "WorkloadClusterReachable"
)

// Reasons of the WorkloadClusterReachable condition beyond IdentityReady's.
const (
	// WorkloadClusterReachableReason: the kubeconfig passed and the
	// cluster's API server answered the discovery handshake.
	WorkloadClusterReachableReason = "Reachable"
	// WorkloadKubeconfigNotFoundReason: the cluster has no kubeconfig
	// Secret yet; its control plane provider writes it.
	WorkloadKubeconfigNotFoundReason = "KubeconfigNotFound"
)

// Reasons of the IdentityReady condition. Each names what a user must fix.
const (
	// IdentityInClusterReason: no identityRef, the provider's own credentials are used.
	IdentityInClusterReason = "InCluster"
	// IdentityReadyReason: the kubeconfig works and grants what is needed.
	IdentityReadyReason = "Ready"
	// IdentityConnectingReason: the provider is connecting to the
	// kubeconfig's server (its first connection, or new credentials), which
	// has not answered within the short time a reconcile waits; the object
	// is reconciled again once the attempt ends.
	IdentityConnectingReason = "Connecting"
	// IdentitySecretNotFoundReason: the Secret named by identityRef does not exist.
	IdentitySecretNotFoundReason = "SecretNotFound"
	// IdentityInvalidKubeconfigReason: the Secret holds no usable kubeconfig,
	// or one that uses a forbidden feature (exec plugin, file path, ...).
	IdentityInvalidKubeconfigReason = "InvalidKubeconfig"
	// IdentityContextNotFoundReason: the requested context is not in the kubeconfig.
	IdentityContextNotFoundReason = "ContextNotFound"
	// IdentityUnreachableReason: the API server of the kubeconfig cannot be reached.
	IdentityUnreachableReason = "Unreachable"
	// IdentityUnauthorizedReason: the API server rejects the credentials.
	IdentityUnauthorizedReason = "Unauthorized"
	// IdentityForbiddenReason: the credentials lack a permission the provider needs.
	IdentityForbiddenReason = "Forbidden"
	// IdentityServerNotAllowedReason: the kubeconfig's server (or what its
	// name resolves to, its proxy or its TLS settings) breaks the provider's
	// server policy; the message names the rule. Nothing was sent to it.
	IdentityServerNotAllowedReason = "ServerNotAllowed"
	// IdentityNotAnAPIServerReason: the server did not answer the discovery
	// handshake as a Kubernetes API server; its answer is not shown.
	IdentityNotAnAPIServerReason = "NotAnAPIServer"
	// IdentityNotFoundReason: the Metal3ClusterIdentity named by identityRef
	// does not exist.
	IdentityNotFoundReason = "IdentityNotFound"
	// IdentityNamespaceNotAllowedReason: the Metal3ClusterIdentity named by
	// identityRef does not admit the object's namespace (its
	// allowedNamespaces). Nothing is done with it: no host is claimed,
	// changed or released until the namespace is admitted again.
	IdentityNamespaceNotAllowedReason = "NamespaceNotAllowed"
	// IdentityHostModeNotAllowedReason: the Metal3ClusterIdentity named by
	// identityRef may not be used in the object's host mode (its
	// allowedHostModes). Nothing is done with it in that mode.
	IdentityHostModeNotAllowedReason = "HostModeNotAllowed"
	// IdentityLimitExceededReason: the identity's API server sent more
	// than the provider caches for one set of credentials (objects or
	// bytes); the connection was dropped and is retried after backoff.
	IdentityLimitExceededReason = "LimitExceeded"
	// IdentityHostAPINotServedReason: no identityRef, and the management
	// cluster serves no API for the host mode's kind (the Bare Metal
	// Operator's CRDs are not installed there). Retried: the CRDs are
	// found once installed, without a restart of the provider.
	IdentityHostAPINotServedReason = "HostAPINotServed"
)

// Generic reasons usable by any condition.
const (
	// ReadyReason is used when a condition is true because all is well.
	ReadyReason = "Ready"
	// NotReadyReason is used when a summary condition is false.
	NotReadyReason = "NotReady"
	// PausedReason is used on the Paused condition while paused.
	PausedReason = "Paused"
	// NotPausedReason is used on the Paused condition while not paused.
	NotPausedReason = "NotPaused"
	// DeletingReason is used while the object is being deleted.
	DeletingReason = "Deleting"
)
