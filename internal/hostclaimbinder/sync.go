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
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// secretRef is one of a claim's Secrets: what it is for, the claim's
// reference, and the Synchronized reason of a failure to copy it.
type secretRef struct {
	purpose string
	ref     *corev1.SecretReference
	reason  string
}

func secretRefs(claim *bmov1alpha1.HostClaim) []secretRef {
	return []secretRef{
		{purpose: pool.UserDataPurpose, ref: claim.Spec.UserData, reason: bmov1alpha1.BadUserDataSecretReason},
		{purpose: pool.MetaDataPurpose, ref: claim.Spec.MetaData, reason: bmov1alpha1.BadMetaDataSecretReason},
		{purpose: pool.NetworkDataPurpose, ref: claim.Spec.NetworkData, reason: bmov1alpha1.BadNetworkDataSecretReason},
	}
}

// syncFailure is a claim's Secret that cannot be copied for a reason the
// tenant must fix, or one that does not exist yet (waiting); it is
// reported, not retried with backoff (the Secret watch brings the claim
// back when the Secret is written).
type syncFailure struct {
	reason, message string
	waiting         bool
}

func (f *syncFailure) Error() string { return f.message }

// syncHost brings host in line with claim and returns the host as written.
// A paused claim pauses its host and changes nothing else on it. Otherwise
// the claim's Secrets are copied next to the host, and the host is given
// what to provision, its power and the claim's reboot requests; if a
// Secret cannot be copied, the host is left to provision what it had
// (never provisioned without the tenant's data).
func (r *Reconciler) syncHost(ctx context.Context, claim *bmov1alpha1.HostClaim, host *bmov1alpha1.BareMetalHost) (*bmov1alpha1.BareMetalHost, error) {
	updated, err := r.hostAsClaimed(ctx, claim, host)
	if err != nil {
		return nil, err
	}
	return r.patchHost(ctx, host, updated)
}

// hostAsClaimed returns a copy of host as claim has it (syncHost), with
// the claim's conditions set and its Secrets copied next to host.
func (r *Reconciler) hostAsClaimed(ctx context.Context, claim *bmov1alpha1.HostClaim, host *bmov1alpha1.BareMetalHost) (*bmov1alpha1.BareMetalHost, error) {
	updated := host.DeepCopy()
	if _, paused := claim.Annotations[hostclaim.PausedAnnotation]; paused {
		if _, has := updated.Annotations[hostclaim.PausedAnnotation]; !has {
			if updated.Annotations == nil {
				updated.Annotations = map[string]string{}
			}
			updated.Annotations[hostclaim.PausedAnnotation] = hostclaim.PausedByBinder
		}
		setCondition(claim, bmov1alpha1.SynchronizedCondition, metav1.ConditionFalse, bmov1alpha1.HostPausedReason,
			"the claim is paused: its host is paused and not synchronized")
		return updated, nil
	}
	if updated.Annotations[hostclaim.PausedAnnotation] == hostclaim.PausedByBinder {
		delete(updated.Annotations, hostclaim.PausedAnnotation)
	}
	// What the pool's deploy policy refuses never reaches the host; nor
	// does a claim whose Secrets cannot be copied: the host is left to
	// provision what it had (never provisioned without the tenant's data).
	failure := r.Options.Deploy.check(claim)
	if failure == nil {
		copies, err := r.syncSecrets(ctx, claim, host)
		switch {
		case errors.As(err, &failure):
		case err != nil:
			return nil, err
		default:
			updated.Spec.Image = claim.Spec.Image.DeepCopy()
			updated.Spec.CustomDeploy = claim.Spec.CustomDeploy.DeepCopy()
			updated.Spec.Online = claim.Spec.PoweredOn
			updated.Spec.UserData = copies[pool.UserDataPurpose]
			updated.Spec.MetaData = copies[pool.MetaDataPurpose]
			updated.Spec.NetworkData = copies[pool.NetworkDataPurpose]
			setCondition(claim, bmov1alpha1.SynchronizedCondition, metav1.ConditionTrue, bmov1alpha1.ConfigurationSyncedReason,
				"the host has the claim's image, data and power")
		}
	}
	if failure != nil {
		r.refuse(ctx, claim, failure)
	}
	updated.Annotations = hostclaim.MirrorReboots(claim.Annotations, updated.Annotations)
	if _, err := r.markUnhealthy(ctx, claim, updated); err != nil {
		return nil, err
	}
	return updated, nil
}

// refuse reports in the claim's Synchronized condition what of it is not
// passed to its host, with an Event when that changes; a Secret waited for
// is only logged (it is usually written a moment after the claim).
func (r *Reconciler) refuse(ctx context.Context, claim *bmov1alpha1.HostClaim, failure *syncFailure) {
	previous := meta.FindStatusCondition(claim.Status.Conditions, bmov1alpha1.SynchronizedCondition)
	setCondition(claim, bmov1alpha1.SynchronizedCondition, metav1.ConditionFalse, failure.reason, failure.message)
	changed := previous == nil || previous.Reason != failure.reason || previous.Message != failure.message
	if changed && failure.waiting {
		ctrl.LoggerFrom(ctx).Info("the claim waits for its Secrets", "why", failure.message)
		return
	}
	if changed {
		ctrl.LoggerFrom(ctx).Info("the claim is not synchronized to its host", "reason", failure.reason, "why", failure.message)
		r.Recorder.Eventf(claim, nil, corev1.EventTypeWarning, failure.reason, "Sync", "%s", failure.message)
	}
}

// patchHost sends the difference between host and updated, guarded by the
// resourceVersion so a concurrent change is never overwritten, and nothing
// when there is none.
func (r *Reconciler) patchHost(ctx context.Context, host, updated *bmov1alpha1.BareMetalHost) (*bmov1alpha1.BareMetalHost, error) {
	if diff, err := client.MergeFrom(host).Data(updated); err != nil {
		return nil, fmt.Errorf("diff host %s/%s: %w", host.Namespace, host.Name, err)
	} else if string(diff) == "{}" {
		return host, nil
	}
	if err := r.Client.Patch(ctx, updated, client.MergeFromWithOptions(host, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, fmt.Errorf("update host %s/%s: %w", host.Namespace, host.Name, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("updated host", "host", klog.KObj(host))
	return updated, nil
}

// syncSecrets copies the claim's Secrets next to host and returns the
// references of the copies by purpose; copies of Secrets the claim no
// longer references are deleted. All are tried, the first failure is
// returned (a *syncFailure when the tenant must act).
func (r *Reconciler) syncSecrets(ctx context.Context, claim *bmov1alpha1.HostClaim, host *bmov1alpha1.BareMetalHost) (map[string]*corev1.SecretReference, error) {
	copies := map[string]*corev1.SecretReference{}
	var failures []*syncFailure
	for _, s := range secretRefs(claim) {
		name := hostclaim.SecretCopyName(claim.Name, claim.UID, s.purpose)
		if s.ref == nil || s.ref.Name == "" {
			if err := r.deleteSecretCopy(ctx, types.NamespacedName{Namespace: host.Namespace, Name: name}, claim.UID, true); err != nil {
				return nil, err
			}
			continue
		}
		err := r.copySecret(ctx, claim, host, s.ref, name)
		var failure *syncFailure
		switch {
		case errors.As(err, &failure):
			failure.reason = s.reason
			if failure.waiting {
				failure.reason = hostclaim.WaitingForSecretReason
			}
			failures = append(failures, failure)
		case err != nil:
			return nil, err
		default:
			copies[s.purpose] = &corev1.SecretReference{Namespace: host.Namespace, Name: name}
		}
	}
	if len(failures) > 0 {
		return nil, joinFailures(failures)
	}
	return copies, nil
}

// joinFailures is one report of failures: the reason of the first the
// tenant must fix, or WaitingForSecret when every one is a Secret that
// does not exist yet.
func joinFailures(failures []*syncFailure) *syncFailure {
	joined := &syncFailure{reason: failures[0].reason, waiting: true}
	messages := make([]string, 0, len(failures))
	for _, f := range failures {
		messages = append(messages, f.message)
		if joined.waiting && !f.waiting {
			joined.reason, joined.waiting = f.reason, false
		}
	}
	joined.message = strings.Join(messages, "; ")
	return joined
}

// copySecret writes the data of the claim's Secret ref to the copy named
// name next to host: labelled with the claim's UID, owned by the host (so
// it goes with it). A Secret of that name not labelled for this claim is
// never overwritten.
func (r *Reconciler) copySecret(ctx context.Context, claim *bmov1alpha1.HostClaim, host *bmov1alpha1.BareMetalHost,
	ref *corev1.SecretReference, name string,
) error {
	if ref.Namespace != "" && ref.Namespace != claim.Namespace {
		// Tenants may only hand over their own Secrets: the binder can
		// read every namespace, the tenant cannot.
		return &syncFailure{message: fmt.Sprintf("Secret %s/%s is not in the claim's namespace %s; only Secrets of the claim's namespace are used",
			ref.Namespace, ref.Name, claim.Namespace)}
	}
	sourceKey := types.NamespacedName{Namespace: claim.Namespace, Name: ref.Name}
	key := types.NamespacedName{Namespace: host.Namespace, Name: name}
	cachedSource, err := r.secretMetadata(ctx, sourceKey)
	if err != nil {
		return err
	}
	cachedCopy, err := r.secretMetadata(ctx, key)
	if err != nil {
		return err
	}
	if r.copies.inSync(key, host.UID, cachedSource, cachedCopy) {
		return nil
	}
	source := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, sourceKey, source); err != nil {
		if apierrors.IsNotFound(err) {
			return &syncFailure{waiting: true, message: fmt.Sprintf("waiting for Secret %s of namespace %s, which does not exist",
				ref.Name, claim.Namespace)}
		}
		return fmt.Errorf("get Secret %s: %w", sourceKey, err)
	}
	owner := metav1.OwnerReference{
		APIVersion: bmov1alpha1.GroupVersion.String(), Kind: "BareMetalHost", Name: host.Name, UID: host.UID,
	}
	// create writes the copy; an existing Secret of that name, the claim's
	// or not, is never overwritten by it (AlreadyExists).
	create := func() error {
		fresh := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: key.Namespace, Name: key.Name,
				Labels:          map[string]string{hostclaim.ClaimUIDLabel: string(claim.UID)},
				Annotations:     map[string]string{hostclaim.ClaimAnnotation: claim.Namespace + "/" + claim.Name},
				OwnerReferences: []metav1.OwnerReference{owner},
			},
			Type: corev1.SecretTypeOpaque,
			Data: source.Data,
		}
		if err := r.Client.Create(ctx, fresh); err != nil {
			return err
		}
		r.copies.record(host.UID, source, fresh)
		ctrl.LoggerFrom(ctx).Info("copied Secret next to the host", "secret", klog.KObj(source), "copy", key.String())
		return nil
	}
	if cachedCopy == nil {
		// No copy cached: created without a read first. Only a copy
		// the cache does not show yet makes it fail; it is read then.
		err := create()
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return fmt.Errorf("create Secret %s: %w", key, err)
			}
			return nil
		}
	}
	current := &corev1.Secret{}
	err = r.APIReader.Get(ctx, key, current)
	switch {
	case apierrors.IsNotFound(err):
		if err := create(); err != nil {
			return fmt.Errorf("create Secret %s: %w", key, err)
		}
	case err != nil:
		return fmt.Errorf("get Secret %s: %w", key, err)
	case current.Labels[hostclaim.ClaimUIDLabel] != string(claim.UID):
		return &syncFailure{message: fmt.Sprintf("Secret %s next to the host exists and was not written for this claim", key)}
	case maps.EqualFunc(current.Data, source.Data, bytes.Equal) && len(current.OwnerReferences) == 1 && current.OwnerReferences[0].UID == host.UID:
		r.copies.record(host.UID, source, current)
	default:
		current.Data = source.Data
		current.OwnerReferences = []metav1.OwnerReference{owner}
		if err := r.Client.Update(ctx, current); err != nil {
			return fmt.Errorf("update Secret %s: %w", key, err)
		}
		r.copies.record(host.UID, source, current)
		ctrl.LoggerFrom(ctx).Info("updated the copy of a Secret", "secret", klog.KObj(source), "copy", key.String())
	}
	return nil
}

// deleteSecretCopy deletes the copy key if it was written for claimUID.
// With trustCache, a copy the Secret metadata cache does not show as the
// claim's is not read: the claim comes back when the cache shows it
// (copies.go). A deleted claim does not come back: its copies are read.
func (r *Reconciler) deleteSecretCopy(ctx context.Context, key types.NamespacedName, claimUID types.UID, trustCache bool) error {
	if trustCache {
		cached, err := r.secretMetadata(ctx, key)
		if err != nil {
			return err
		}
		if cached == nil || cached.Labels[hostclaim.ClaimUIDLabel] != string(claimUID) {
			return nil
		}
	}
	r.copies.forget(key)
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("get Secret %s: %w", key, err)
	}
	if secret.Labels[hostclaim.ClaimUIDLabel] != string(claimUID) {
		return nil
	}
	// The UID precondition spares a Secret re-created meanwhile.
	if err := r.Client.Delete(ctx, secret, client.Preconditions{UID: &secret.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Secret %s: %w", key, err)
	}
	return nil
}

// syncHardwareData writes the tenant's copy of what its host is made of:
// a HardwareData in the claim's namespace, named after the claim and owned
// by it, with the host's hardware details and the labels and annotations
// a tenant may read (hostclaim.TenantLabels, TenantAnnotations). Nothing
// is written before the host was inspected. A HardwareData of that name
// not written for this claim (the tenant may create HardwareData) is left
// alone and not pointed to.
func (r *Reconciler) syncHardwareData(ctx context.Context, claim *bmov1alpha1.HostClaim, host *bmov1alpha1.BareMetalHost) error {
	if host.Status.HardwareDetails == nil {
		return nil
	}
	labels := hostclaim.TenantLabels(host)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[hostclaim.ClaimUIDLabel] = string(claim.UID)
	desired := &bmov1alpha1.HardwareData{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: claim.Namespace, Name: claim.Name,
			Labels: labels, Annotations: hostclaim.TenantAnnotations(host),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: bmov1alpha1.GroupVersion.String(), Kind: "HostClaim", Name: claim.Name, UID: claim.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: bmov1alpha1.HardwareDataSpec{HardwareDetails: host.Status.HardwareDetails.DeepCopy()},
	}
	// The cache holds the binder's copies only (CacheOptions): one it
	// does not show may still exist, not the binder's.
	current := &bmov1alpha1.HardwareData{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), current)
	if apierrors.IsNotFound(err) {
		err = r.Client.Create(ctx, desired)
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return fmt.Errorf("create HardwareData %s: %w", klog.KObj(desired), err)
			}
			claim.Status.HardwareData = &bmov1alpha1.ObjectReference{Namespace: claim.Namespace, Name: claim.Name}
			return nil
		}
		// Either the cache lags behind the binder's own copy, or the
		// HardwareData is someone else's: the server says which.
		err = r.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), current)
	}
	switch {
	case apierrors.IsNotFound(err):
		// Deleted since the create found it: the next round creates it.
		return fmt.Errorf("HardwareData %s was deleted while being created: %w", klog.KObj(desired), err)
	case err != nil:
		return fmt.Errorf("get HardwareData %s: %w", klog.KObj(desired), err)
	case current.Labels[hostclaim.ClaimUIDLabel] != string(claim.UID):
		ctrl.LoggerFrom(ctx).Info("a HardwareData named after the claim exists and is not the binder's; not overwritten",
			"hardwareData", klog.KObj(current))
		return nil
	case equality.Semantic.DeepEqual(current.Spec, desired.Spec) && maps.Equal(current.Labels, desired.Labels) &&
		maps.Equal(current.Annotations, desired.Annotations) && equality.Semantic.DeepEqual(current.OwnerReferences, desired.OwnerReferences):
		// Unchanged.
	default:
		updated := current.DeepCopy()
		updated.Labels, updated.Annotations = desired.Labels, desired.Annotations
		updated.OwnerReferences = desired.OwnerReferences
		updated.Spec = desired.Spec
		if err := r.Client.Update(ctx, updated); err != nil {
			return fmt.Errorf("update HardwareData %s: %w", klog.KObj(desired), err)
		}
	}
	claim.Status.HardwareData = &bmov1alpha1.ObjectReference{Namespace: claim.Namespace, Name: claim.Name}
	return nil
}
