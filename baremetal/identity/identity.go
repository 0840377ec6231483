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

package identity

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Key names one set of credentials: a kubeconfig Secret and the context
// chosen in it, and, when they come from a Metal3ClusterIdentity, its name.
// The zero key is the provider's in-cluster identity.
//
// A key of a Metal3ClusterIdentity is unresolved (ClusterIdentity set, no
// Secret) until the identity is read and found to admit the object's
// namespace (ClusterIdentities.Resolve); because it carries the identity's
// name it can never equal the zero key, so an identity that could not be
// resolved is never mistaken for the provider's own credentials.
//
// Keys are how objects name their credentials, not connections: package
// hostaccess connects once per set of credentials (server, user, namespace
// of the hosts), so every key whose Secret holds the same ones, directly or
// through any Metal3ClusterIdentity, shares one client, one informer cache
// and one health probe.
type Key struct {
	// ClusterIdentity is the Metal3ClusterIdentity the credentials come
	// from; empty for a Secret identityRef and in-cluster.
	ClusterIdentity string
	SecretNamespace string
	SecretName      string
	// Context as written in the identityRef or the identity's secretRef;
	// empty means the current context.
	Context string
}

// InCluster is the key of the provider's own credentials.
var InCluster = Key{}

// IsInCluster reports whether k is the provider's own identity.
func (k Key) IsInCluster() bool { return k == InCluster }

// Resolved reports whether k names its Secret: always, but for a
// Metal3ClusterIdentity not resolved yet.
func (k Key) Resolved() bool { return k.ClusterIdentity == "" || k.SecretName != "" }

// Connection is the credentials of k alone, without the identity they were
// found through: the key of the host-access layer's connections. It is
// meaningful only for a resolved key.
func (k Key) Connection() Key {
	return Key{SecretNamespace: k.SecretNamespace, SecretName: k.SecretName, Context: k.Context}
}

// SameConnection reports whether k and other are resolved and use the same
// credentials.
func (k Key) SameConnection(other Key) bool {
	return k.Resolved() && other.Resolved() && k.Connection() == other.Connection()
}

// Secret is the namespace/name of the kubeconfig Secret.
func (k Key) Secret() types.NamespacedName {
	return types.NamespacedName{Namespace: k.SecretNamespace, Name: k.SecretName}
}

func (k Key) String() string {
	secret := fmt.Sprintf("secret %s/%s", k.SecretNamespace, k.SecretName)
	if k.Context != "" {
		secret += fmt.Sprintf(" context %q", k.Context)
	}
	switch {
	case k.IsInCluster():
		return "in-cluster"
	case k.ClusterIdentity == "":
		return secret
	case !k.Resolved():
		return "Metal3ClusterIdentity " + k.ClusterIdentity
	default:
		return fmt.Sprintf("Metal3ClusterIdentity %s (%s)", k.ClusterIdentity, secret)
	}
}

// Identity is the resolved identity of one object: the credentials, and the
// object's own namespace, where the hosts are when neither the identity nor
// its context says otherwise.
type Identity struct {
	Key             Key
	ObjectNamespace string
	// Mode is how the object's hosts are had through the identity; it is
	// not part of the key: one set of credentials is one connection, in
	// whichever modes it is used.
	Mode infrav1.HostMode
}

// fromRef turns an identityRef of an object in namespace into an
// Identity; a nil ref is the in-cluster identity. A ref of kind
// Metal3ClusterIdentity gives an unresolved key: which Secret it stands for,
// and whether namespace may use it, is ClusterIdentities.Resolve's to say.
func fromRef(ref *infrav1.IdentityRef, namespace string, mode infrav1.HostMode) Identity {
	id := Identity{ObjectNamespace: namespace, Mode: mode}
	if mode == "" {
		id.Mode = infrav1.HostModeBareMetalHost
	}
	switch {
	case ref == nil:
	case ref.KindOrDefault() == infrav1.IdentityKindMetal3ClusterIdentity:
		id.Key = Key{ClusterIdentity: ref.Name}
	default:
		id.Key = Key{SecretNamespace: namespace, SecretName: ref.Name, Context: ref.Context}
	}
	return id
}

// UsesHostClaims reports whether the identity's hosts are had through
// HostClaims.
func (id Identity) UsesHostClaims() bool { return id.Mode == infrav1.HostModeHostClaim }

// OfCluster resolves a Metal3Cluster's identity: its own identityRef,
// else in-cluster, in the cluster's host mode.
func OfCluster(cluster *infrav1.Metal3Cluster) Identity {
	return fromRef(cluster.Spec.IdentityRef, cluster.Namespace, cluster.Spec.HostMode)
}

// machineMode is a machine's host mode: the one it has a host through,
// whatever the specs say now; else its own hostMode, else its cluster's.
func machineMode(machine *infrav1.Metal3Machine, cluster *infrav1.Metal3Cluster) infrav1.HostMode {
	switch {
	case machine.Annotations[infrav1.HostClaimAnnotation] != "":
		return infrav1.HostModeHostClaim
	case machine.Annotations[infrav1.HostAnnotation] != "":
		return infrav1.HostModeBareMetalHost
	case machine.Spec.HostMode != "":
		return machine.Spec.HostMode
	case cluster != nil:
		return cluster.Spec.HostMode
	}
	return ""
}

// OfMachine resolves a Metal3Machine's identity: its own identityRef,
// else the identityRef of its Metal3Cluster, else in-cluster; and its host
// mode (machineMode). cluster is nil
// when the machine's Cluster has no Metal3Cluster (externally managed
// infrastructure, or another kind), which leaves the machine's own
// identityRef or in-cluster.
func OfMachine(machine *infrav1.Metal3Machine, cluster *infrav1.Metal3Cluster) Identity {
	mode := machineMode(machine, cluster)
	if machine.Spec.IdentityRef != nil || cluster == nil {
		return fromRef(machine.Spec.IdentityRef, machine.Namespace, mode)
	}
	// The Secret is looked up in the cluster's namespace, which is the
	// machine's: CAPI keeps a cluster's objects in one namespace.
	return fromRef(cluster.Spec.IdentityRef, machine.Namespace, mode)
}

// ResolveMachine finds the Cluster of machine (its cluster-name label) and
// resolves the machine's identity (ResolveMachineIn), reading the Cluster's
// Metal3Cluster if the identity depends on it. A machine with its own
// identityRef needs no cluster lookup.
func ResolveMachine(ctx context.Context, c client.Reader, machine *infrav1.Metal3Machine) (Identity, error) {
	if !dependsOnCluster(machine) {
		return OfMachine(machine, nil), nil
	}
	clusterName := machine.Labels[clusterv1.ClusterNameLabel]
	if clusterName == "" {
		return Identity{}, errNoClusterLabel(machine)
	}
	cluster := &clusterv1.Cluster{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: machine.Namespace, Name: clusterName}, cluster); err != nil {
		return Identity{}, fmt.Errorf("get Cluster %s/%s of Metal3Machine %s: %w", machine.Namespace, clusterName, machine.Name, err)
	}
	return ResolveMachineIn(machine, cluster, func() (*infrav1.Metal3Cluster, error) {
		return Metal3ClusterOf(ctx, c, cluster)
	})
}

// ResolveMachineIn resolves the identity of machine from cluster, its
// Cluster as the reconcile read it: a reconcile reads a Cluster and its
// Metal3Cluster once, and passes them to whatever needs them. metal3Cluster
// returns the Cluster's Metal3Cluster (Metal3ClusterOf) and is called only
// when the identity depends on it; a reconcile that needs it for more
// passes one that reads it once (sync.OnceValues).
func ResolveMachineIn(machine *infrav1.Metal3Machine, cluster *clusterv1.Cluster, metal3Cluster func() (*infrav1.Metal3Cluster, error)) (Identity, error) {
	if !dependsOnCluster(machine) {
		return OfMachine(machine, nil), nil
	}
	clusterName := machine.Labels[clusterv1.ClusterNameLabel]
	switch {
	case clusterName == "":
		return Identity{}, errNoClusterLabel(machine)
	case cluster == nil || cluster.Namespace != machine.Namespace || cluster.Name != clusterName:
		return Identity{}, fmt.Errorf("Metal3Machine %s/%s belongs to Cluster %s, not to the Cluster it was resolved in",
			machine.Namespace, machine.Name, clusterName)
	}
	m3c, err := metal3Cluster()
	if err != nil {
		return Identity{}, fmt.Errorf("resolve the identity of Metal3Machine %s: %w", machine.Name, err)
	}
	return OfMachine(machine, m3c), nil
}

// Metal3ClusterOf reads the Metal3Cluster that cluster's infrastructureRef
// names; nil when it names another kind (externally managed or other
// infrastructure), which has no identity for the machines.
func Metal3ClusterOf(ctx context.Context, c client.Reader, cluster *clusterv1.Cluster) (*infrav1.Metal3Cluster, error) {
	ref := cluster.Spec.InfrastructureRef
	if ref.Kind != "Metal3Cluster" || ref.APIGroup != infrav1.GroupVersion.Group || ref.Name == "" {
		return nil, nil
	}
	m3c := &infrav1.Metal3Cluster{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: cluster.Namespace, Name: ref.Name}, m3c); err != nil {
		return nil, fmt.Errorf("get Metal3Cluster %s/%s of Cluster %s: %w", cluster.Namespace, ref.Name, cluster.Name, err)
	}
	return m3c, nil
}

// dependsOnCluster reports whether machine's identity, or its host mode,
// is its cluster's to say: a machine with its own identityRef depends on
// its cluster only for a host mode it neither names nor has a host in.
func dependsOnCluster(machine *infrav1.Metal3Machine) bool {
	return machine.Spec.IdentityRef == nil ||
		(machine.Spec.HostMode == "" && !hasHost(machine) && machine.Labels[clusterv1.ClusterNameLabel] != "")
}

func errNoClusterLabel(machine *infrav1.Metal3Machine) error {
	return fmt.Errorf("Metal3Machine %s/%s has no %s label yet: its identity depends on its cluster",
		machine.Namespace, machine.Name, clusterv1.ClusterNameLabel)
}

// hasHost reports whether machine records a host or a HostClaim, which
// fixes its host mode.
func hasHost(machine *infrav1.Metal3Machine) bool {
	return machine.Annotations[infrav1.HostAnnotation] != "" || machine.Annotations[infrav1.HostClaimAnnotation] != ""
}
