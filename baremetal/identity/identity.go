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

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
)

// Key names one set of credentials: a kubeconfig Secret and the
// context chosen in it. The zero key is the provider's in-cluster identity.
// It is the key of the Cache: every object using the same Secret and context
// shares one client, one informer cache and one health probe.
type Key struct {
	SecretNamespace string
	SecretName      string
	// Context as written in the identityRef; empty means the current context.
	Context string
}

// InCluster is the key of the provider's own credentials.
var InCluster = Key{}

// IsInCluster reports whether k is the provider's own identity.
func (k Key) IsInCluster() bool { return k == InCluster }

// Secret is the namespace/name of the kubeconfig Secret.
func (k Key) Secret() types.NamespacedName {
	return types.NamespacedName{Namespace: k.SecretNamespace, Name: k.SecretName}
}

func (k Key) String() string {
	if k.IsInCluster() {
		return "in-cluster"
	}
	if k.Context == "" {
		return fmt.Sprintf("secret %s/%s", k.SecretNamespace, k.SecretName)
	}
	return fmt.Sprintf("secret %s/%s context %q", k.SecretNamespace, k.SecretName, k.Context)
}

// Identity is the resolved identity of one object: the credentials, and the
// object's own namespace, where the hosts are when neither the identity nor
// its context says otherwise.
type Identity struct {
	Key             Key
	ObjectNamespace string
}

// fromRef turns an identityRef of an object in namespace into an
// Identity; a nil ref is the in-cluster identity.
func fromRef(ref *infrav1.IdentityRef, namespace string) Identity {
	if ref == nil {
		return Identity{ObjectNamespace: namespace}
	}
	return Identity{
		Key:             Key{SecretNamespace: namespace, SecretName: ref.Name, Context: ref.Context},
		ObjectNamespace: namespace,
	}
}

// OfCluster resolves a Metal3Cluster's identity: its own identityRef,
// else in-cluster.
func OfCluster(cluster *infrav1.Metal3Cluster) Identity {
	return fromRef(cluster.Spec.IdentityRef, cluster.Namespace)
}

// OfMachine resolves a Metal3Machine's identity: its own identityRef,
// else the identityRef of its Metal3Cluster, else in-cluster. cluster is nil
// when the machine's Cluster has no Metal3Cluster (externally managed
// infrastructure, or another kind), which leaves the machine's own
// identityRef or in-cluster.
func OfMachine(machine *infrav1.Metal3Machine, cluster *infrav1.Metal3Cluster) Identity {
	if machine.Spec.IdentityRef != nil || cluster == nil {
		return fromRef(machine.Spec.IdentityRef, machine.Namespace)
	}
	// The Secret is looked up in the cluster's namespace, which is the
	// machine's: CAPI keeps a cluster's objects in one namespace.
	return fromRef(cluster.Spec.IdentityRef, machine.Namespace)
}

// ResolveMachine finds the Metal3Cluster of machine (through its
// Cluster's infrastructureRef) and resolves the machine's identity. A machine
// with its own identityRef needs no cluster lookup.
func ResolveMachine(ctx context.Context, c client.Reader, machine *infrav1.Metal3Machine) (Identity, error) {
	if machine.Spec.IdentityRef != nil {
		return OfMachine(machine, nil), nil
	}
	clusterName := machine.Labels[clusterv1.ClusterNameLabel]
	if clusterName == "" {
		return Identity{}, fmt.Errorf("Metal3Machine %s/%s has no %s label yet: its identity depends on its cluster",
			machine.Namespace, machine.Name, clusterv1.ClusterNameLabel)
	}
	cluster := &clusterv1.Cluster{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: machine.Namespace, Name: clusterName}, cluster); err != nil {
		return Identity{}, fmt.Errorf("get Cluster %s/%s of Metal3Machine %s: %w", machine.Namespace, clusterName, machine.Name, err)
	}
	ref := cluster.Spec.InfrastructureRef
	if ref.Kind != "Metal3Cluster" || ref.APIGroup != infrav1.GroupVersion.Group || ref.Name == "" {
		// Externally managed or other infrastructure: no cluster identity.
		return OfMachine(machine, nil), nil
	}
	m3c := &infrav1.Metal3Cluster{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: machine.Namespace, Name: ref.Name}, m3c); err != nil {
		return Identity{}, fmt.Errorf("get Metal3Cluster %s/%s of Metal3Machine %s: %w", machine.Namespace, ref.Name, machine.Name, err)
	}
	return OfMachine(machine, m3c), nil
}
