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
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
)

const (
	// maxClaimAttempts bounds how many candidate hosts one reconcile tries
	// when other claims win the race for them.
	maxClaimAttempts = 5
	// retryAfterLostRace is when a claim that lost every candidate it
	// tried (or found them all held by claims in flight) tries again: the
	// hosts it lost do not wake it, they are bound to other claims now.
	retryAfterLostRace = time.Second

	keptForAnnotation   = hostclaim.KeptForAnnotation
	keptSinceAnnotation = hostclaim.KeptSinceAnnotation
)

// isClaimRef reports whether ref names a HostClaim.
func isClaimRef(ref *corev1.ObjectReference) bool {
	if ref == nil || ref.Kind != "HostClaim" {
		return false
	}
	group, _, _ := strings.Cut(ref.APIVersion, "/")
	return group == bmov1alpha1.GroupVersion.Group
}

// consumes reports whether host is bound to claim: its consumerRef names
// the claim, UID included, so that a claim re-created under the same name
// never inherits its predecessor's host.
func consumes(host *bmov1alpha1.BareMetalHost, claim *bmov1alpha1.HostClaim) bool {
	ref := host.Spec.ConsumerRef
	return isClaimRef(ref) && ref.Namespace == claim.Namespace && ref.Name == claim.Name && ref.UID == claim.UID
}

func claimRef(claim *bmov1alpha1.HostClaim) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		APIVersion: bmov1alpha1.GroupVersion.String(), Kind: "HostClaim",
		Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
	}
}

// boundHost is the host bound to claim, or nil. It is found by its
// consumerRef, not the claim's status: the status may not have been
// written (a crash between the binding and the status write). When the
// cache shows none, the hosts the status or a binding of this process
// name are read from the API server, since the cache may lag behind that
// binding: binding the claim a second host would be far worse than a read.
func (r *Reconciler) boundHost(ctx context.Context, claim *bmov1alpha1.HostClaim) (*bmov1alpha1.BareMetalHost, error) {
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := r.Client.List(ctx, hosts, client.MatchingFields{hostConsumerIndex: string(claim.UID)}); err != nil {
		return nil, fmt.Errorf("list hosts bound to the claim: %w", err)
	}
	for i := range hosts.Items {
		if consumes(&hosts.Items[i], claim) {
			return &hosts.Items[i], nil
		}
	}
	var keys []types.NamespacedName
	if ref := claim.Status.BareMetalHost; ref != nil {
		keys = append(keys, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name})
	}
	if key, ok := r.inFlight.TakenBy(claim.UID); ok {
		keys = append(keys, key)
	}
	for _, key := range keys {
		host := &bmov1alpha1.BareMetalHost{}
		if err := r.APIReader.Get(ctx, key, host); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("get host %s: %w", key, err)
		}
		if consumes(host, claim) {
			return host, nil
		}
	}
	return nil, nil
}

// bind chooses a host for claim and takes it. With none to take, it says
// why in the claim's conditions and returns no host.
func (r *Reconciler) bind(ctx context.Context, claim *bmov1alpha1.HostClaim) (*bmov1alpha1.BareMetalHost, ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	admitted, err := r.admittedNamespaces(ctx, claim)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	if len(admitted) == 0 {
		r.wait(ctx, claim, hostclaim.NamespaceNotAdmittedReason, corev1.EventTypeWarning,
			fmt.Sprintf("no HostDeployPolicy admits claims of namespace %s", claim.Namespace))
		return nil, ctrl.Result{}, nil
	}
	// The cached hosts themselves, not copies: a pool of thousands would
	// otherwise be copied whole at every claim's attempt. Nothing below
	// writes to them; takeHost copies the host it takes, and
	// markReleasingForReuse replaces the annotations it marks.
	var hosts []bmov1alpha1.BareMetalHost
	for _, namespace := range admitted {
		list := &bmov1alpha1.BareMetalHostList{}
		if err := r.Client.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
			return nil, ctrl.Result{}, fmt.Errorf("list hosts in namespace %s: %w", namespace, err)
		}
		hosts = append(hosts, list.Items...)
	}
	if reuseID := hostclaim.ReuseID(claim); reuseID != "" {
		r.markReleasingForReuse(ctx, hosts, reuseID)
	}
	selection, err := hostclaim.Select(claim, hosts, admitted)
	if err != nil {
		// A bad selector: nothing to retry until the claim changes.
		r.wait(ctx, claim, bmov1alpha1.NoBareMetalHostReason, corev1.EventTypeWarning, err.Error())
		return nil, ctrl.Result{}, nil
	}
	selection.LogDeprecatedMarks(log)
	if len(selection.Candidates) == 0 {
		// Hosts becoming available wake the waiting claims (claimsForHost).
		r.wait(ctx, claim, bmov1alpha1.NoBareMetalHostReason, corev1.EventTypeNormal, selection.Summary())
		return nil, ctrl.Result{}, nil
	}
	attempts, contended := 0, false
	for _, candidate := range selection.Candidates {
		if attempts == maxClaimAttempts {
			break
		}
		key := client.ObjectKeyFromObject(candidate)
		if !r.inFlight.Hold(key, claim.UID, candidate.ResourceVersion) {
			contended = true // another claim of this process is taking it
			continue
		}
		attempts++
		host, err := r.takeHost(ctx, claim, candidate)
		if err == nil {
			r.inFlight.Taken(key, claim.UID, host.ResourceVersion)
			bindingsTotal.Inc()
			log.Info("bound host", "host", klog.KObj(host))
			r.Recorder.Eventf(claim, nil, corev1.EventTypeNormal, "HostBound", "Bind",
				"Bound host %s/%s", host.Namespace, host.Name)
			return host, ctrl.Result{}, nil
		}
		r.inFlight.Drop(key, claim.UID)
		if !errors.Is(err, errLostRace) {
			return nil, ctrl.Result{}, err
		}
		contended = true
		if reuseID := hostclaim.ReuseID(claim); reuseID != "" && candidate.Annotations[keptForAnnotation] == reuseID {
			// The host kept for the claim: it waits for it, as it did
			// while it was released, rather than take another.
			log.V(1).Info("lost the race for the host kept for the claim, retrying", "host", klog.KObj(candidate))
			break
		}
		log.V(1).Info("lost the race for a host, trying another", "host", klog.KObj(candidate))
	}
	message := "every available host is being taken by other claims; retrying"
	if !contended {
		message = selection.Summary()
	}
	r.wait(ctx, claim, bmov1alpha1.NoBareMetalHostReason, corev1.EventTypeNormal, message)
	if contended {
		return nil, ctrl.Result{RequeueAfter: retryAfterLostRace}, nil
	}
	return nil, ctrl.Result{}, nil
}

// markReleasingForReuse marks, in hosts, the hosts bound to a
// claim being deleted that keeps its host for reuseID as kept for it, as
// the release will. The binder marks the host itself when deprovisioning
// starts, but the host cache may not show it yet, while the claim cache,
// one ordered stream, always shows a claim's deletion before a claim
// created after it: a claim of the key created right after another was
// deleted must wait for that host, not take another one.
func (r *Reconciler) markReleasingForReuse(ctx context.Context, hosts []bmov1alpha1.BareMetalHost, reuseID string) {
	for i := range hosts {
		host := &hosts[i]
		ref := host.Spec.ConsumerRef
		if !isClaimRef(ref) || host.Annotations[keptForAnnotation] != "" {
			continue
		}
		owner := &bmov1alpha1.HostClaim{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, owner); err != nil {
			continue
		}
		if owner.UID != ref.UID || owner.DeletionTimestamp.IsZero() ||
			owner.Annotations[hostclaim.KeepOnReleaseAnnotation] != "true" || hostclaim.ReuseID(owner) != reuseID {
			continue
		}
		// A new map: the host shares the cache's.
		host.Annotations = maps.Clone(host.Annotations)
		if host.Annotations == nil {
			host.Annotations = map[string]string{}
		}
		host.Annotations[keptForAnnotation] = reuseID
	}
}

// admittedNamespaces are the host namespaces open to claim's namespace.
func (r *Reconciler) admittedNamespaces(ctx context.Context, claim *bmov1alpha1.HostClaim) ([]string, error) {
	namespace := &corev1.Namespace{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: claim.Namespace}, namespace); err != nil {
		return nil, fmt.Errorf("get namespace %s: %w", claim.Namespace, err)
	}
	policies := &bmov1alpha1.HostDeployPolicyList{}
	if err := r.Client.List(ctx, policies); err != nil {
		return nil, fmt.Errorf("list HostDeployPolicies: %w", err)
	}
	admitted, problems := hostclaim.AdmittedNamespaces(policies.Items, claim.Namespace, namespace.Labels)
	for _, problem := range problems {
		// The pool admin's mistake, not the tenant's: logged, not shown
		// on the claim.
		ctrl.LoggerFrom(ctx).Error(problem, "HostDeployPolicy ignored")
	}
	return admitted, nil
}

// takeHost binds candidate to claim in one update guarded by the
// resourceVersion the candidate was chosen at, so two claims never both
// take a host. The update sets the consumerRef (and ends a node reuse
// reservation); what to provision follows once the claim's Secrets are
// copied next to the host, or comes with it if the claim has none. A
// conflict is settled by reading the host from the API server: it is the
// claim's if its consumerRef says so, and it is
// tried again if it is still free (BMO updating the host is the usual
// conflict, not another claim).
func (r *Reconciler) takeHost(ctx context.Context, claim *bmov1alpha1.HostClaim, candidate *bmov1alpha1.BareMetalHost) (*bmov1alpha1.BareMetalHost, error) {
	const maxTries = 3
	current := candidate
	for try := 1; ; try++ {
		host := current.DeepCopy()
		host.Spec.ConsumerRef = claimRef(claim)
		delete(host.Annotations, keptForAnnotation)
		delete(host.Annotations, keptSinceAnnotation)
		// A host the claim may take carries no unhealthy mark: a marked-by
		// left when the pool admin cleared the mark counts for no one.
		delete(host.Annotations, hostclaim.UnhealthyMarkedByAnnotation)
		if !referencesSecrets(claim) {
			// No Secret to copy next to the host first: the binding
			// gives the host what to provision too. A second write
			// would conflict with the status write BMO makes on seeing
			// the binding.
			var err error
			if host, err = r.hostAsClaimed(ctx, claim, host); err != nil {
				return nil, err
			}
		}
		err := r.Client.Update(ctx, host)
		if err == nil {
			return host, nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("bind host %s/%s: %w", host.Namespace, host.Name, err)
		}
		live := &bmov1alpha1.BareMetalHost{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(host), live); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, errLostRace
			}
			return nil, fmt.Errorf("get host %s/%s: %w", host.Namespace, host.Name, err)
		}
		if consumes(live, claim) {
			return live, nil
		}
		if try == maxTries || !stillSelectable(claim, live) {
			return nil, errLostRace
		}
		current = live
	}
}

// stillSelectable reports whether host, read anew, may still be bound to
// claim by the same rules it was chosen by.
func stillSelectable(claim *bmov1alpha1.HostClaim, host *bmov1alpha1.BareMetalHost) bool {
	selection, err := hostclaim.Select(claim, []bmov1alpha1.BareMetalHost{*host}, []string{host.Namespace})
	if err != nil || len(selection.Candidates) == 0 {
		return false
	}
	// Admission of the namespace was checked before; only the host's own
	// state, labels and reservation can have changed.
	return true
}

// wait reports that claim has no host, why, in its Associated condition,
// and records an Event when the reason or message changes (not at every
// reconcile: a waiting claim is reconciled at every host change).
func (r *Reconciler) wait(ctx context.Context, claim *bmov1alpha1.HostClaim, reason, eventType, message string) {
	r.states.set(claim, stateWaiting)
	previous := meta.FindStatusCondition(claim.Status.Conditions, bmov1alpha1.AssociatedCondition)
	setCondition(claim, bmov1alpha1.AssociatedCondition, metav1.ConditionFalse, reason, message)
	setCondition(claim, hostclaim.ProvisionedCondition, metav1.ConditionFalse, hostclaim.WaitingForHostReason,
		"the claim has no host yet")
	if previous == nil || previous.Reason != reason || previous.Message != message {
		ctrl.LoggerFrom(ctx).Info("waiting for a host", "reason", reason, "why", message)
		r.Recorder.Eventf(claim, nil, eventType, reason, "Bind", "Waiting for a host: %s", message)
	}
}

// reportMissingHost says the bound host is gone.
func (r *Reconciler) reportMissingHost(ctx context.Context, claim *bmov1alpha1.HostClaim) {
	r.states.set(claim, stateMissing)
	ref := claim.Status.BareMetalHost
	message := fmt.Sprintf("host %s/%s, bound to this claim, is gone; delete the claim to get another", ref.Namespace, ref.Name)
	previous := meta.FindStatusCondition(claim.Status.Conditions, bmov1alpha1.AssociatedCondition)
	setCondition(claim, bmov1alpha1.AssociatedCondition, metav1.ConditionFalse, bmov1alpha1.MissingBareMetalHostReason, message)
	setCondition(claim, hostclaim.ProvisionedCondition, metav1.ConditionFalse, hostclaim.WaitingForHostReason, message)
	if previous == nil || previous.Reason != bmov1alpha1.MissingBareMetalHostReason {
		ctrl.LoggerFrom(ctx).Info("bound host is gone", "host", ref.Namespace+"/"+ref.Name)
		r.Recorder.Eventf(claim, nil, corev1.EventTypeWarning, bmov1alpha1.MissingBareMetalHostReason, "Bind", "%s", message)
	}
}

// referencesSecrets reports whether claim references any Secret to copy
// next to its host.
func referencesSecrets(claim *bmov1alpha1.HostClaim) bool {
	for _, s := range secretRefs(claim) {
		if s.ref != nil && s.ref.Name != "" {
			return true
		}
	}
	return false
}
