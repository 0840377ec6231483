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
	"strings"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// reconcileDelete gives a deleted claim's host back to the pool:
// deprovisioned first (BMO cleans it), released once it is no longer
// provisioned, kept for the claim's node reuse key if the claim asks. Then
// the copies of its Secrets and its HardwareData go, and the finalizer
// last, so nothing of the claim outlives it.
func (r *Reconciler) reconcileDelete(ctx context.Context, claim *bmov1alpha1.HostClaim) error {
	if !controllerutil.ContainsFinalizer(claim, bmov1alpha1.HostClaimFinalizer) {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	if _, paused := claim.Annotations[hostclaim.PausedAnnotation]; paused {
		// Paused means hands off, deletion included (as for Cluster API's
		// paused objects); removing the annotation resumes it.
		log.Info("claim deleted while paused; waiting for it to be resumed")
		return nil
	}
	host, err := r.boundHost(ctx, claim)
	if err != nil {
		return err
	}
	hostNamespace := ""
	if ref := claim.Status.BareMetalHost; ref != nil {
		hostNamespace = ref.Namespace
	}
	if host != nil {
		hostNamespace = host.Namespace
		released, err := r.release(ctx, claim, host)
		if err != nil || !released {
			return err
		}
	}
	if hostNamespace != "" {
		for _, s := range secretRefs(claim) {
			key := types.NamespacedName{Namespace: hostNamespace, Name: hostclaim.SecretCopyName(claim.Name, claim.UID, s.purpose)}
			if err := r.deleteSecretCopy(ctx, key, claim.UID, false); err != nil {
				return err
			}
		}
	}
	if err := r.deleteHardwareData(ctx, claim); err != nil {
		return err
	}
	old := claim.DeepCopy()
	controllerutil.RemoveFinalizer(claim, bmov1alpha1.HostClaimFinalizer)
	if err := r.Client.Patch(ctx, claim, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("remove finalizer: %w", err)
	}
	r.states.forget(client.ObjectKeyFromObject(claim))
	r.marks.forget(claim.UID)
	log.Info("claim cleaned up")
	return nil
}

// release deprovisions host and, once BMO is done with it, frees it, in
// one guarded update. It reports whether the host is released; until then
// the host's changes bring the claim back (claimsForHost).
func (r *Reconciler) release(ctx context.Context, claim *bmov1alpha1.HostClaim, host *bmov1alpha1.BareMetalHost) (bool, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("host", klog.KObj(host))
	keptFor := ""
	unhealthy := pool.UnhealthyMark(claim.Annotations) != ""
	if claim.Annotations[hostclaim.KeepOnReleaseAnnotation] == "true" && !unhealthy {
		// A host remediation gave up on is kept for nobody: the key's
		// next claim would wait for it until the pool admin repairs it.
		keptFor = hostclaim.ReuseID(claim)
	}
	if hasProvisioningSpec(host) {
		updated := host.DeepCopy()
		if _, err := r.markUnhealthy(ctx, claim, updated); err != nil {
			return false, err
		}
		updated.Spec.Image, updated.Spec.CustomDeploy = nil, nil
		updated.Spec.UserData, updated.Spec.MetaData, updated.Spec.NetworkData = nil, nil, nil
		updated.Spec.Online = false
		if keptFor != "" {
			// Marked now, so that a claim of the key coming meanwhile
			// waits for this host rather than take another (Select).
			if updated.Annotations == nil {
				updated.Annotations = map[string]string{}
			}
			updated.Annotations[keptForAnnotation] = keptFor
		}
		if _, err := r.patchHost(ctx, host, updated); err != nil {
			return false, err
		}
		log.Info("deprovisioning the host of a deleted claim")
		r.Recorder.Eventf(claim, nil, corev1.EventTypeNormal, "HostDeprovisioning", "Release",
			"Deprovisioning host %s/%s", host.Namespace, host.Name)
		return false, nil
	}
	switch host.Status.Provisioning.State {
	case bmov1alpha1.StateProvisioning, bmov1alpha1.StateProvisioned, bmov1alpha1.StateDeprovisioning:
		log.V(1).Info("waiting for the host to be deprovisioned", "state", host.Status.Provisioning.State)
		return false, nil
	}
	updated := host.DeepCopy()
	updated.Spec.ConsumerRef = nil
	unhealthy, err := r.markUnhealthy(ctx, claim, updated)
	if err != nil {
		return false, err
	}
	if updated.Annotations[hostclaim.PausedAnnotation] == hostclaim.PausedByBinder {
		delete(updated.Annotations, hostclaim.PausedAnnotation)
	}
	// A reboot the claim asked for must not hold off the next user.
	hostclaim.UnmirrorReboots(updated.Annotations)
	delete(updated.Annotations, keptForAnnotation) // the claim may have changed its mind
	if keptFor != "" {
		if updated.Annotations == nil {
			updated.Annotations = map[string]string{}
		}
		updated.Annotations[keptForAnnotation] = keptFor
		updated.Annotations[keptSinceAnnotation] = r.now().UTC().Format(time.RFC3339)
	}
	// An update, not a patch: it carries the resourceVersion the decision
	// was made on, so a host changed meanwhile is looked at again.
	if err := r.Client.Update(ctx, updated); err != nil {
		return false, fmt.Errorf("release host %s/%s: %w", host.Namespace, host.Name, err)
	}
	releasesTotal.Inc()
	switch {
	case keptFor != "":
		log.Info("released the host, kept for node reuse", "keptFor", keptFor)
		r.Recorder.Eventf(claim, nil, corev1.EventTypeNormal, "HostReleased", "Release",
			"Released host %s/%s, kept for node reuse key %s", host.Namespace, host.Name, keptFor)
	case unhealthy:
		// The mark named is the one the host carries: the binder's, or
		// one an operator had put there before.
		mark := pool.UnhealthyMark(updated.Annotations)
		log.Info("released the host, marked unhealthy: it takes no claim until the pool admin clears the mark",
			"annotation", mark)
		r.Recorder.Eventf(host, claim, corev1.EventTypeWarning, "HostMarkedUnhealthy", "Release",
			"Remediation of HostClaim %s/%s gave up on this host; it takes no claim until %s is removed",
			claim.Namespace, claim.Name, mark)
	default:
		log.Info("released the host")
		r.Recorder.Eventf(claim, nil, corev1.EventTypeNormal, "HostReleased", "Release",
			"Released host %s/%s", host.Namespace, host.Name)
	}
	return true, nil
}

// hasProvisioningSpec reports whether host is still given something to
// provision or power by its claim.
func hasProvisioningSpec(host *bmov1alpha1.BareMetalHost) bool {
	s := host.Spec
	return s.Image != nil || s.CustomDeploy != nil || s.UserData != nil || s.MetaData != nil || s.NetworkData != nil || s.Online
}

// deleteHardwareData deletes the claim's HardwareData copy, if it is the
// binder's. It is owned by the claim too, which only helps once the claim
// is gone; the finalizer waits for this.
func (r *Reconciler) deleteHardwareData(ctx context.Context, claim *bmov1alpha1.HostClaim) error {
	hd := &bmov1alpha1.HardwareData{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(claim), hd); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("get HardwareData %s: %w", klog.KObj(claim), err)
	}
	if hd.Labels[hostclaim.ClaimUIDLabel] != string(claim.UID) {
		return nil
	}
	if err := r.Client.Delete(ctx, hd, client.Preconditions{UID: &hd.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete HardwareData %s: %w", klog.KObj(hd), err)
	}
	return nil
}

// keptHostReconciler ends node reuse reservations nobody will come back
// for: a host kept for "<namespace>/<key>" that no claim of the namespace
// carries any more is freed once kept for longer than Grace.
type keptHostReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Grace    time.Duration
	now      func() time.Time
}

func (k *keptHostReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	host := &bmov1alpha1.BareMetalHost{}
	if err := k.Client.Get(ctx, req.NamespacedName, host); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	keptFor := host.Annotations[keptForAnnotation]
	if keptFor == "" || host.Spec.ConsumerRef != nil {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("host", klog.KObj(host), "keptFor", keptFor)
	namespace, key, _ := strings.Cut(keptFor, "/")
	claims := &bmov1alpha1.HostClaimList{}
	if err := k.Client.List(ctx, claims, client.InNamespace(namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("list HostClaims of namespace %s: %w", namespace, err)
	}
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.DeletionTimestamp.IsZero() && c.Annotations[hostclaim.NodeReuseKeyAnnotation] == key {
			// Still wanted; looked at again in case that changes.
			return ctrl.Result{RequeueAfter: k.Grace}, nil
		}
	}
	// A reservation without a valid time (set by hand) has no grace left.
	if since, err := time.Parse(time.RFC3339, host.Annotations[keptSinceAnnotation]); err == nil {
		if left := k.Grace - k.now().Sub(since); left > 0 {
			return ctrl.Result{RequeueAfter: left}, nil
		}
	}
	updated := host.DeepCopy()
	delete(updated.Annotations, keptForAnnotation)
	delete(updated.Annotations, keptSinceAnnotation)
	if err := k.Client.Patch(ctx, updated, client.MergeFromWithOptions(host, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, fmt.Errorf("free kept host %s: %w", klog.KObj(host), err)
	}
	log.Info("freed a host kept for a node reuse key no claim carries any more", "grace", k.Grace.String())
	k.Recorder.Eventf(host, nil, corev1.EventTypeNormal, "HostFreed", "NodeReuse",
		"No claim of namespace %s carries node reuse key %s any more; the host is free after %s", namespace, key, k.Grace)
	return ctrl.Result{}, nil
}
