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

package hostclaimbinder

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Secrets are not cached (they are many, BMC credentials among them), but
// their metadata is: the binder watches it to follow the tenants' Secrets
// and its copies. That cache spares the live reads that cannot find
// anything to do:
//   - a copy the cache does not show is not read before it is created, nor
//     before it would be deleted. The cache may lag behind a copy this
//     process just created; the copy's creation, once cached, brings its
//     claim back (claimsForSecret), which then finds it.
//   - a copy already in sync is not read again while neither it nor its
//     source changed: the binder remembers at which resourceVersions it
//     last found (or made) the copy equal to its source, owned by the host
//     and labelled for the claim. Any write to either changes its
//     resourceVersion, and its watch event brings the claim back.
// Nothing is decided on the cache alone that writes: every write is still
// preceded by a live read of what it writes over, or guarded by
// AlreadyExists, or by the UID precondition.

// secretMetadata returns the cached metadata of Secret key, or nil when
// the cache does not show it.
func (r *Reconciler) secretMetadata(ctx context.Context, key types.NamespacedName) (*metav1.PartialObjectMetadata, error) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := r.SecretMetadata.Get(ctx, key, m); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get the metadata of Secret %s from the cache: %w", key, err)
	}
	return m, nil
}

// copiedVersion is the state of one copy the binder last found in sync.
type copiedVersion struct {
	source, copy types.UID
	// sourceVersion and copyVersion are the resourceVersions of the source
	// and the copy then.
	sourceVersion, copyVersion string
	// host is the UID of the host owning the copy.
	host types.UID
}

// copiedVersions remembers, by copy, the copies found in sync. The zero
// value is ready to use.
type copiedVersions struct {
	synced sync.Map // types.NamespacedName -> copiedVersion
}

// inSync reports whether the copy key, owned by host, is known to hold its
// source's data: the cached source and copy are still at the versions they
// were last found in sync at.
func (c *copiedVersions) inSync(key types.NamespacedName, host types.UID, source, copied *metav1.PartialObjectMetadata) bool {
	if source == nil || copied == nil {
		return false
	}
	v, ok := c.synced.Load(key)
	if !ok {
		return false
	}
	want := copiedVersion{
		source: source.UID, copy: copied.UID,
		sourceVersion: source.ResourceVersion, copyVersion: copied.ResourceVersion, host: host,
	}
	return v.(copiedVersion) == want //nolint:forcetypeassert // only copiedVersion is stored.
}

// record remembers that copied, owned by host, holds the data of source.
func (c *copiedVersions) record(host types.UID, source, copied client.Object) {
	c.synced.Store(client.ObjectKeyFromObject(copied), copiedVersion{
		source: source.GetUID(), copy: copied.GetUID(),
		sourceVersion: source.GetResourceVersion(), copyVersion: copied.GetResourceVersion(), host: host,
	})
}

// forget drops what is remembered of the copy key.
func (c *copiedVersions) forget(key types.NamespacedName) { c.synced.Delete(key) }
