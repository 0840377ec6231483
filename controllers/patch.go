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

// Every reconciler of this package runs the same skeleton, in this order:
//
//  1. fetch the object, and what its pause and its work depend on (its
//     Cluster, and for a machine its Metal3Cluster and identity), each read
//     once and passed along;
//  2. pause: a paused object gets its Paused condition and nothing else,
//     no finalizer either (TestDataKindsHonourPause);
//  3. finalizer, and the consumer ID where the kind carries one, persisted
//     alone by persistFinalizer before the patch helper exists: the
//     reconcile ends there, and the write's update event brings the next;
//  4. the patch helper, and its deferred patch through patchUnlessGone;
//  5. reconcileDelete or reconcileNormal.
//
// Metal3ClusterIdentity has no Cluster, pause nor finalizer (steps 1, 4, 5);
// Metal3MachineTemplate only copies a field to machines (steps 1, 2 on its own
// paused annotation, as upstream CAPM3, and 5).

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// persistFinalizer adds finalizer to obj and, when withConsumerID, its
// consumer ID (infrav1.EnsureConsumerID), and writes them in a patch of
// their own, with what records add to obj then (they run only when the
// patch is written). It reports whether it wrote: the caller then returns,
// and the write's update event brings the next reconcile, which finds both
// in place before it creates its patch helper; or it goes on with obj as
// written (the Metal3Machine, whose first write also records its host).
//
// Why apart from the deferred patch: a finalizer must be on the object
// before anything it guards exists (a host claimed, Secrets written next to
// it), or a deletion in between would leave them behind; and the consumer
// ID names what is written in a pool, so it must be the one persisted. A
// deferred patch that sometimes writes metadata only and sometimes
// everything needs a flag set in one place and read in another.
//
// Deleting objects get nothing: a finalizer is never added to an object on
// its way out.
func persistFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string, withConsumerID bool,
	records ...func(),
) (bool, error) {
	if !obj.GetDeletionTimestamp().IsZero() {
		return false, nil
	}
	before, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return false, fmt.Errorf("copy %T", obj)
	}
	changed := controllerutil.AddFinalizer(obj, finalizer)
	if withConsumerID && infrav1.EnsureConsumerID(obj) {
		changed = true
	}
	if !changed {
		return false, nil
	}
	for _, record := range records {
		record()
	}
	// A merge patch, as the patch helper's: the finalizer list goes whole.
	if err := c.Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		return false, fmt.Errorf("add finalizer %s to %s: %w", finalizer, client.ObjectKeyFromObject(obj), err)
	}
	return true, nil
}

// patchUnlessGone is the deferred patch of every reconcile: helper's patch
// of obj, where an object deleted meanwhile is no error (its last
// finalizer went in this patch, or someone deleted an object that has
// none).
func patchUnlessGone(ctx context.Context, helper *patch.Helper, obj client.Object, opts ...patch.Option) error {
	return ignoreGone(helper.Patch(ctx, obj, opts...))
}

// ignoreGone drops an error made only of NotFound errors. Cluster API's
// patch helper returns its requests' errors (conditions, spec and
// metadata, status) as an aggregate, wrapped: apierrors.IsNotFound does not
// see through an aggregate, so testing it alone never matches there.
func ignoreGone(err error) error {
	if err == nil || allNotFound(err) {
		return nil
	}
	return err
}

// allNotFound reports whether err is NotFound, or an aggregate (at any
// depth, wrapped or not) of NotFound errors only.
func allNotFound(err error) bool {
	var agg kerrors.Aggregate
	if !errors.As(err, &agg) {
		return apierrors.IsNotFound(err)
	}
	errs := agg.Errors()
	if len(errs) == 0 {
		return false
	}
	for _, e := range errs {
		if !allNotFound(e) {
			return false
		}
	}
	return true
}
