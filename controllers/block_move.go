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

	"k8s.io/utils/ptr"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// How clusterctl move is held back while work is in flight. clusterctl
// pauses the Cluster, then waits until no object it moves carries the
// block-move annotation. An object carries it while its work is half done
// (a machine whose host is being provisioned or released, a Metal3Data
// whose addresses or Secrets are not all there), set in the same patch that
// records the progress. The paused reconcile removes it once the object's
// controller has seen the pause and frozen what it drives (a machine's host
// is paused for BMO too): from then on nothing changes under clusterctl's
// feet, and the target picks the work up where it stopped.

// setBlockMove sets or clears the annotation on obj in memory; the caller's
// patch saves it.
func setBlockMove(obj client.Object, block bool) {
	annotations := obj.GetAnnotations()
	_, has := annotations[clusterctlv1.BlockMoveAnnotation]
	switch {
	case block && !has:
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[clusterctlv1.BlockMoveAnnotation] = "true"
		obj.SetAnnotations(annotations)
	case !block && has:
		delete(annotations, clusterctlv1.BlockMoveAnnotation)
		obj.SetAnnotations(annotations)
	}
}

// releaseMoveBlock removes the annotation from a paused object whose work is
// frozen, with a patch of its own (paused objects are not otherwise
// patched).
func releaseMoveBlock(ctx context.Context, c client.Client, obj client.Object) error {
	if _, has := obj.GetAnnotations()[clusterctlv1.BlockMoveAnnotation]; !has {
		return nil
	}
	before, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copy %T", obj)
	}
	setBlockMove(obj, false)
	if err := c.Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("let clusterctl move %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// machineInFlight reports whether a Metal3Machine's host is between states:
// bound but not provisioned yet, or being released.
func machineInFlight(m3m *infrav1.Metal3Machine) bool {
	if !hasHost(m3m) {
		return false
	}
	return !m3m.DeletionTimestamp.IsZero() || !ptr.Deref(m3m.Status.Initialization.Provisioned, false)
}

// dataInFlight reports whether a Metal3Data has started and not finished:
// addresses claimed or Secrets written but not all of them, or being
// released.
func dataInFlight(data *infrav1.Metal3Data) bool {
	if len(data.Finalizers) == 0 {
		return false
	}
	return !data.DeletionTimestamp.IsZero() || !ptr.Deref(data.Status.Ready, false)
}

// hasHost reports whether obj (a Metal3Machine) records a host, or in
// HostClaim mode a HostClaim.
func hasHost(obj client.Object) bool {
	annotations := obj.GetAnnotations()
	return annotations[infrav1.HostAnnotation] != "" || annotations[infrav1.HostClaimAnnotation] != ""
}
