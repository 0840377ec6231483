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
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// conditionsOwner is an object whose status conditions the provider owns.
type conditionsOwner interface {
	client.Object
	conditions.Setter
}

// dropForeignConditions removes from obj's status every condition the
// provider does not write (own are those it does), and any its CRD would
// refuse (one without a reason), in one patch of its own, before anything
// else is written.
//
// Why: an object last reconciled by upstream CAPM3 v1.12 holds upstream's
// conditions (AssociateBMH, KubernetesNodeReady, Metal3DataReady, and Ready
// in Cluster API's v1beta1 shape, with no reason when True). The patch
// helper sends the whole list back with each status patch, and the API
// server refuses all of it for the reasonless ones: status would never be
// written again. A merge patch replaces the list wholly; the reconcile
// that follows writes the provider's own conditions.
func dropForeignConditions(ctx context.Context, c client.Client, recorder events.EventRecorder, obj conditionsOwner, own []string) error {
	var kept []metav1.Condition
	var dropped []string
	for _, cond := range obj.GetConditions() {
		if cond.Reason == "" || !slices.Contains(own, cond.Type) {
			dropped = append(dropped, cond.Type)
			continue
		}
		kept = append(kept, cond)
	}
	if len(dropped) == 0 {
		return nil
	}
	before, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%T is not a client.Object", obj)
	}
	obj.SetConditions(kept)
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("drop the conditions of another provider from %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	ctrl.LoggerFrom(ctx).Info("Dropped conditions written by another provider (or version); this provider's replace them", "conditions", dropped)
	if recorder != nil {
		recorder.Eventf(obj, nil, corev1.EventTypeNormal, "ForeignConditionsDropped", "AdoptStatus",
			"Dropped conditions this provider does not write, or without a reason (left by upstream CAPM3?): %s", strings.Join(dropped, ", "))
	}
	return nil
}
