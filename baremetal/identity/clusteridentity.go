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
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// DefaultProviderNamespace is where the provider runs when clusterctl
// installs it, and so where a Metal3ClusterIdentity's secretRef without a
// namespace points unless the manager is told otherwise.
const DefaultProviderNamespace = "capm3-system"

// ClusterIdentities resolves identityRefs of kind Metal3ClusterIdentity into
// the Secret and context of the identity, for the namespaces it admits. It
// is the one place where a cluster identity is allowed or refused: the
// host-access layer refuses keys it did not resolve.
type ClusterIdentities struct {
	// Reader reads Metal3ClusterIdentities and Namespace metadata: the
	// manager's cache, which holds these cluster-scoped kinds whatever
	// namespaces the manager is limited to, so resolving costs no request
	// and sees what the watches that re-trigger the controllers saw.
	Reader client.Reader
	// ProviderNamespace is where a secretRef without a namespace points.
	ProviderNamespace string
}

// Resolve returns id with the Secret and context of its
// Metal3ClusterIdentity filled in, if that identity admits
// id.ObjectNamespace; an id of another kind is returned as it is. The
// identity is read again at every call, whatever id.Key already holds: a key
// recorded earlier (in a status, or on a Metal3Data, which tenants can
// write) proves nothing about what the identity allows now.
//
// When the identity is missing, does not admit the namespace or may not be
// used in id.Mode, the error is an *Error (IdentityNotFound,
// NamespaceNotAllowed, HostModeNotAllowed) and the returned id keeps
// an unresolved key, which the host-access layer refuses: nothing is done
// with the identity's credentials for that namespace.
func (r *ClusterIdentities) Resolve(ctx context.Context, id Identity) (Identity, error) {
	name := id.Key.ClusterIdentity
	if name == "" {
		return id, nil
	}
	id.Key = Key{ClusterIdentity: name}
	ci := &infrav1.Metal3ClusterIdentity{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Name: name}, ci); err != nil {
		if apierrors.IsNotFound(err) {
			return id, NewError(id.Key, infrav1.IdentityNotFoundReason, true, err, "Metal3ClusterIdentity %s not found", name)
		}
		return id, fmt.Errorf("get Metal3ClusterIdentity %s: %w", name, err)
	}
	namespace, err := r.namespace(ctx, id.ObjectNamespace)
	if err != nil {
		return id, err
	}
	admitted, err := AdmitsNamespace(ci.Spec.AllowedNamespaces, namespace)
	if err != nil {
		return id, NewError(id.Key, infrav1.IdentityNamespaceNotAllowedReason, true, err,
			"its spec.allowedNamespaces cannot be evaluated, so namespace %s is not admitted: %v", id.ObjectNamespace, err)
	}
	if !admitted {
		return id, NewError(id.Key, infrav1.IdentityNamespaceNotAllowedReason, true, nil,
			"namespace %s is not admitted by its spec.allowedNamespaces", id.ObjectNamespace)
	}
	if modes := ci.Spec.AllowedHostModes; len(modes) > 0 && !slices.Contains(modes, id.Mode.OrDefault()) {
		return id, NewError(id.Key, infrav1.IdentityHostModeNotAllowedReason, true, nil,
			"host mode %s is not among its spec.allowedHostModes %v: set the Metal3Cluster's (or Metal3MachineTemplate's) hostMode to one of them",
			id.Mode.OrDefault(), modes)
	}
	secretRef := ci.Spec.SecretRef
	if secretRef.Namespace == "" {
		secretRef.Namespace = r.ProviderNamespace
	}
	id.Key = Key{ClusterIdentity: name, SecretNamespace: secretRef.Namespace, SecretName: secretRef.Name, Context: secretRef.Context}
	return id, nil
}

// namespace reads the metadata of namespace, which is all admission looks
// at; a namespace that is gone is admitted by no list or selector.
func (r *ClusterIdentities) namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Reader.Get(ctx, client.ObjectKey{Name: name}, meta); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get Namespace %s: %w", name, err)
	}
	return &corev1.Namespace{ObjectMeta: meta.ObjectMeta}, nil
}
