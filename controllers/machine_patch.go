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

package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// patchMetal3Machine is the deferred patch of a Metal3Machine's reconcile:
// what the reconcile changed since before, in at most two requests, a merge
// patch of metadata and spec, then one of the whole status, conditions
// included. It stamps status.observedGeneration, as Cluster API's
// WithStatusObservedGeneration does.
//
// Why not Cluster API's patch helper, which the other kinds use: it writes
// the conditions in a request of their own (optimistically locked, so that
// it can merge them with another writer's) and then the rest of the status,
// so nearly every reconcile of a machine cost two status requests, the
// machine kind's biggest share of the requests an association makes (see
// docs/performance.md). Neither reason for the split holds here:
//   - every condition on a Metal3Machine is this provider's:
//     dropForeignConditions removes any other before the first patch, and
//     nothing else writes them (Cluster API reads them);
//   - the reconcile starts from a cache that shows its own previous writes
//     (ownWrites.stale), so the list it holds is the whole truth.
//
// So the conditions go with the status they summarise: a merge patch
// replaces the list wholly, as it does every list of the status.
func patchMetal3Machine(ctx context.Context, c client.Client, before, m3m *infrav1.Metal3Machine) error {
	m3m.Status.ObservedGeneration = m3m.Generation
	if !equality.Semantic.DeepEqual(before.ObjectMeta, m3m.ObjectMeta) || !equality.Semantic.DeepEqual(before.Spec, m3m.Spec) {
		// The object as it will be, but for its status: the patch holds
		// metadata and spec only.
		written := m3m.DeepCopy()
		before.Status.DeepCopyInto(&written.Status)
		if err := c.Patch(ctx, written, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("patch Metal3Machine %s: %w", client.ObjectKeyFromObject(m3m), err)
		}
		m3m.ResourceVersion = written.ResourceVersion
		if !equality.Semantic.DeepEqual(before.Spec, m3m.Spec) {
			observeOwnSpecWrite(m3m, written.Generation)
		}
	}
	if equality.Semantic.DeepEqual(before.Status, m3m.Status) {
		return nil
	}
	// The base is the object as written above with the old status: the
	// patch holds the status only.
	base := m3m.DeepCopy()
	before.Status.DeepCopyInto(&base.Status)
	written := m3m.DeepCopy()
	if err := c.Status().Patch(ctx, written, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("patch the status of Metal3Machine %s: %w", client.ObjectKeyFromObject(m3m), err)
	}
	m3m.ResourceVersion = written.ResourceVersion
	return nil
}

// observeOwnSpecWrite stamps the status about to be written with the
// generation the reconcile's own spec write made (the providerID, once the
// host is provisioned): the status was worked out with that spec in hand.
// Stamped with the generation read instead, it would be out of date the
// moment it landed, and the next reconcile would write the whole status
// again only to say so: one write more per machine, at the busiest time.
// Only when the spec write is the one change since the read: each spec
// change moves the generation by one, so a generation further on holds
// someone else's change, which this status has not seen (a metadata-only
// write moves it not at all, and is not given here).
func observeOwnSpecWrite(m3m *infrav1.Metal3Machine, written int64) {
	read := m3m.Generation
	if written != read+1 {
		return
	}
	m3m.Generation = written
	m3m.Status.ObservedGeneration = written
	for i := range m3m.Status.Conditions {
		if m3m.Status.Conditions[i].ObservedGeneration == read {
			m3m.Status.Conditions[i].ObservedGeneration = written
		}
	}
}
