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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

const (
	// SecretFinalizer keeps an identity Secret while a Metal3Cluster
	// or Metal3Machine uses it: without it, hosts could be neither
	// provisioned nor released.
	SecretFinalizer = "infrastructure.cluster.x-k8s.io/identity-in-use"
	// ClusterctlMoveLabel makes clusterctl move carry the identity Secret
	// with the cluster that uses it.
	ClusterctlMoveLabel = "clusterctl.cluster.x-k8s.io/move"
)

// Secrets protects the kubeconfig Secrets named by identityRefs.
// It reads Secret metadata from the manager's cache (no data, no request)
// and writes only when the finalizer or label is missing.
type Secrets struct {
	Client   client.Client
	Metadata client.Reader
}

// Protect puts the finalizer and the move label on the Secret namespace/name.
// A missing Secret is not an error here: the IdentityReady condition says so.
func (s *Secrets) Protect(ctx context.Context, namespace, name string) error {
	meta, err := s.get(ctx, namespace, name)
	if err != nil || meta == nil {
		return err
	}
	_, labelled := meta.Labels[ClusterctlMoveLabel]
	// A Secret already being deleted cannot take a new finalizer; if it is
	// deleting, ours is on it or it was not in use until now.
	protected := controllerutil.ContainsFinalizer(meta, SecretFinalizer) || !meta.DeletionTimestamp.IsZero()
	if protected && labelled {
		return nil
	}
	patch := client.MergeFrom(meta.DeepCopy())
	if meta.DeletionTimestamp.IsZero() {
		controllerutil.AddFinalizer(meta, SecretFinalizer)
	}
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	meta.Labels[ClusterctlMoveLabel] = ""
	if err := s.Client.Patch(ctx, meta, patch); err != nil {
		return fmt.Errorf("protect identity Secret %s/%s: %w", namespace, name, err)
	}
	return nil
}

// Release removes the finalizer from namespace/name unless a Metal3Cluster
// or Metal3Machine other than leaving still uses it.
func (s *Secrets) Release(ctx context.Context, namespace, name string, leaving client.Object) error {
	if name == "" {
		return nil
	}
	inUse, err := s.inUse(ctx, namespace, name, leaving)
	if err != nil || inUse {
		return err
	}
	meta, err := s.get(ctx, namespace, name)
	if err != nil || meta == nil || !controllerutil.ContainsFinalizer(meta, SecretFinalizer) {
		return err
	}
	patch := client.MergeFrom(meta.DeepCopy())
	controllerutil.RemoveFinalizer(meta, SecretFinalizer)
	if err := s.Client.Patch(ctx, meta, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("release identity Secret %s/%s: %w", namespace, name, err)
	}
	return nil
}

// inUse reports whether a Metal3Cluster or Metal3Machine other than
// leaving, and not being deleted, names the Secret in its identityRef; the
// lookup goes through RefIndex.
func (s *Secrets) inUse(ctx context.Context, namespace, name string, leaving client.Object) (bool, error) {
	for _, list := range []client.ObjectList{&infrav1.Metal3ClusterList{}, &infrav1.Metal3MachineList{}} {
		if err := s.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{RefIndex: name}); err != nil {
			return true, fmt.Errorf("list users of identity Secret %s/%s: %w", namespace, name, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return true, err
		}
		for _, item := range items {
			obj, ok := item.(client.Object)
			if ok && obj.GetDeletionTimestamp().IsZero() && obj.GetUID() != leaving.GetUID() {
				return true, nil
			}
		}
	}
	return false, nil
}

func (s *Secrets) get(ctx context.Context, namespace, name string) (*metav1.PartialObjectMetadata, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := s.Metadata.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, meta); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read identity Secret %s/%s: %w", namespace, name, err)
	}
	return meta, nil
}
