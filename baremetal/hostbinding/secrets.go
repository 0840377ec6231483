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

package hostbinding

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

const (
	// OwnerUIDLabel on a Secret next to a host names the object it was
	// written for by its consumer ID (infrav1.ConsumerID). Names repeat
	// across tenants (two tenants may both have a worker-0); consumer IDs
	// do not, and they survive clusterctl move.
	OwnerUIDLabel = "infrastructure.cluster.x-k8s.io/owner-uid"
	// OwnerAnnotation says, for people, which object the Secret belongs to:
	// "<kind> <namespace>/<name>".
	OwnerAnnotation = "infrastructure.cluster.x-k8s.io/owner"
)

// ErrSecretOwnedByOther means a Secret next to a host already exists under
// the name we would use, written for someone else: it is never overwritten.
var ErrSecretOwnedByOther = errors.New("a Secret of that name exists and belongs to another object")

// hostSecretName names a Secret written next to a host for owner. The hash
// of the owner's consumer ID makes it unique across tenants and management
// clusters sharing one pool namespace, and the same after a move; the
// readable part helps people find it.
func hostSecretName(owner metav1.Object, purpose string) string {
	return pool.HashedName(owner.GetName(), purpose, string(infrav1.ConsumerID(owner)))
}

// WriteSecret writes data to the Secret for owner and purpose next to host,
// owned by the object the host is bound through (so it goes with it) and
// labelled with owner. A Secret of that name written for someone else is
// never overwritten (ErrSecretOwnedByOther). It reads the Secret first:
// for Secrets that usually exist already (re-rendered data).
func WriteSecret(ctx context.Context, access hostaccess.HostAccess, host *Host,
	owner metav1.Object, ownerKind, purpose string, data map[string][]byte,
) (*corev1.SecretReference, error) {
	return writeSecret(ctx, access, host, owner, ownerKind, purpose, data, false)
}

// WriteNewSecret is WriteSecret for a Secret that usually does not exist
// yet (a new claim): it creates first and reads only if that fails, since
// Secrets are not cached and a read first would cost a request answering
// 404 each time.
func WriteNewSecret(ctx context.Context, access hostaccess.HostAccess, host *Host,
	owner metav1.Object, ownerKind, purpose string, data map[string][]byte,
) (*corev1.SecretReference, error) {
	return writeSecret(ctx, access, host, owner, ownerKind, purpose, data, true)
}

func writeSecret(ctx context.Context, access hostaccess.HostAccess, host *Host,
	owner metav1.Object, ownerKind, purpose string, data map[string][]byte, createFirst bool,
) (*corev1.SecretReference, error) {
	name := types.NamespacedName{Namespace: host.Namespace, Name: hostSecretName(owner, purpose)}
	ref := &corev1.SecretReference{Namespace: name.Namespace, Name: name.Name}
	fresh := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: name.Namespace, Name: name.Name,
			Labels:          map[string]string{OwnerUIDLabel: string(infrav1.ConsumerID(owner))},
			Annotations:     map[string]string{OwnerAnnotation: fmt.Sprintf("%s %s/%s", ownerKind, owner.GetNamespace(), owner.GetName())},
			OwnerReferences: []metav1.OwnerReference{host.Owner},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	create := func() error {
		if err := access.Client().Create(ctx, fresh); err != nil {
			return fmt.Errorf("create Secret %s next to host %s: %w", name, host.Name, err)
		}
		return nil
	}
	if createFirst {
		err := create()
		if err == nil {
			return ref, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	secret := &corev1.Secret{}
	err := access.Client().Get(ctx, name, secret)
	switch {
	case apierrors.IsNotFound(err) && !createFirst:
		if err := create(); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("get Secret %s: %w", name, err)
	case secret.Labels[OwnerUIDLabel] != string(infrav1.ConsumerID(owner)):
		return nil, fmt.Errorf("%w: %s (owner %q)", ErrSecretOwnedByOther, name, secret.Annotations[OwnerAnnotation])
	case sameData(secret.Data, data) && ownedByOnly(secret, host.Owner):
		// Unchanged: rendering runs on every reconcile, writing would not.
	default:
		// The name depends on the owner and purpose, not the host: a Secret
		// left from a claim of another host (a crash before the claim, or a
		// lost race) must now go with this host, or deleting the first
		// host would take this host's data with it.
		secret.Data = data
		secret.OwnerReferences = []metav1.OwnerReference{host.Owner}
		if err := access.Client().Update(ctx, secret); err != nil {
			return nil, fmt.Errorf("update Secret %s: %w", name, err)
		}
	}
	return ref, nil
}

// DeleteSecret deletes the Secret for owner and purpose in namespace, if it
// is owner's; a Secret of someone else's under that name is left alone.
func DeleteSecret(ctx context.Context, access hostaccess.HostAccess, namespace string, owner metav1.Object, purpose string) error {
	name := types.NamespacedName{Namespace: namespace, Name: hostSecretName(owner, purpose)}
	secret := &corev1.Secret{}
	if err := access.Client().Get(ctx, name, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("get Secret %s: %w", name, err)
	}
	if secret.Labels[OwnerUIDLabel] != string(infrav1.ConsumerID(owner)) {
		return nil
	}
	// The UID precondition keeps a Secret re-created meanwhile by someone else.
	err := access.Client().Delete(ctx, secret, client.Preconditions{UID: &secret.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Secret %s: %w", name, err)
	}
	return nil
}

func sameData(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

// ownedByOnly reports whether owner is the Secret's one owner.
func ownedByOnly(secret *corev1.Secret, owner metav1.OwnerReference) bool {
	refs := secret.OwnerReferences
	return len(refs) == 1 && refs[0].UID == owner.UID && refs[0].Kind == owner.Kind && refs[0].Name == owner.Name
}
