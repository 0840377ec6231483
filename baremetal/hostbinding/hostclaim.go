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
	"context"
	"errors"
	"fmt"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// For is the binding of mode: BareMetalHosts claimed directly, or
// HostClaims fulfilled by the pool's binder.
func For(mode infrav1.HostMode, opts Options) Binding {
	if mode == infrav1.HostModeHostClaim {
		return ForHostClaims(opts)
	}
	return ForBareMetalHosts(opts)
}

// ForHostClaims is the binding of HostClaim mode: the machine asks for a
// host with a HostClaim in its identity's namespace, which the pool's
// binder binds to a BareMetalHost. The provider never reads or writes a
// host: what it knows of it comes from the claim's status and the copy of
// the host's HardwareData beside the claim (package hostclaim), and what it
// asks of it (image, Secrets, power, pause, reboots) it writes on the claim.
func ForHostClaims(opts Options) Binding { return &claimBinding{machineSide{opts}} }

type claimBinding struct{ machineSide }

// Intend implements Binding: a HostClaim is recorded once it exists.
func (*claimBinding) Intend(context.Context) error { return nil }

var _ Binding = &claimBinding{}

// claimName is the machine's HostClaim's name: the machine's, made unique
// across the tenants and management clusters sharing the pool namespace by
// its consumer ID, which also survives clusterctl move, so a moved machine
// finds its claim again.
func claimName(m3m *infrav1.Metal3Machine) string {
	return pool.HashedName(m3m.Name, "", string(infrav1.ConsumerID(m3m)))
}

// claimView is what the binding tells of a bound claim: the claim stands
// for the host (its name, namespace and UID are all the tenant knows of
// it), with the binder's copy of the host's labels, annotations and
// hardware, which hold nothing a tenant may not see.
func claimView(claim *bmov1alpha1.HostClaim, hardware *bmov1alpha1.HardwareData) *Host {
	state := bmov1alpha1.StateNone
	if cond := meta.FindStatusCondition(claim.Status.Conditions, hostclaim.ProvisionedCondition); cond != nil {
		if s, ok := hostclaim.StateFromReason(cond.Reason); ok {
			state = s
		}
	}
	view := &Host{
		Owner: metav1.OwnerReference{
			APIVersion: bmov1alpha1.GroupVersion.String(), Kind: "HostClaim", Name: claim.Name, UID: claim.UID,
		},
		NamespacedName:      types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name},
		UID:                 claim.UID,
		State:               state,
		ProvisioningStarted: claim.Spec.Image != nil || claim.Spec.CustomDeploy != nil,
		PoweredOn:           claim.Status.PoweredOn,
		Labels:              hardware.Labels,
		Annotations:         hardware.Annotations,
		Hardware:            hardware.Spec.HardwareDetails,
		UserData:            claim.Spec.UserData,
		MetaData:            claim.Spec.MetaData,
		NetworkData:         claim.Spec.NetworkData,
	}
	if cond := meta.FindStatusCondition(claim.Status.Conditions, hostclaim.HealthyCondition); cond != nil && cond.Status == metav1.ConditionFalse {
		view.ErrorMessage = cond.Message
		if view.ErrorMessage == "" {
			view.ErrorMessage = "the host reports " + cond.Reason
		}
	}
	// What the binder refuses to pass to the host (an image the pool's
	// deploy policy forbids, a Secret it cannot copy) is the machine's to
	// fix, and it would otherwise wait for ever: say it. A pause is not a
	// refusal, nor a Secret the provider writes after the claim
	// (provisionIfPlain).
	if cond := meta.FindStatusCondition(claim.Status.Conditions, bmov1alpha1.SynchronizedCondition); view.ErrorMessage == "" &&
		cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason != bmov1alpha1.HostPausedReason &&
		cond.Reason != hostclaim.WaitingForSecretReason {
		view.ErrorMessage = fmt.Sprintf("the pool's binder does not pass the HostClaim to its host (%s): %s", cond.Reason, cond.Message)
	}
	return view
}

func (m *claimBinding) claimEvent(ctx context.Context, claim *bmov1alpha1.HostClaim, reason, note string, args ...any) {
	ctrl.LoggerFrom(ctx).Info(fmt.Sprintf(note, args...), "metal3Machine", klog.KObj(m.M3Machine),
		"hostClaim", klog.KObj(claim), "reason", reason)
	if m.Recorder != nil {
		m.Recorder.Eventf(m.M3Machine, nil, corev1.EventTypeNormal, reason, "BindHost", note, args...)
	}
}

// recordedClaim is the machine's claim, found through the cache: nil if
// it records none and none names it, ErrHostNotFound if it records one
// that is gone.
func (m *claimBinding) recordedClaim(ctx context.Context) (*bmov1alpha1.HostClaim, error) {
	return m.findClaim(ctx, m.Access.Client())
}

// findClaim finds the machine's claim (see ConsumedClaim).
func (m *claimBinding) findClaim(ctx context.Context, reader client.Reader) (*bmov1alpha1.HostClaim, error) {
	return ConsumedClaim(ctx, m.Access, m.M3Machine, reader)
}

// ConsumedClaim finds the HostClaim made for m3m through access, by the
// pool's record of it, the claim's consumerRef (the machine with its
// consumer ID): where the machine's annotation points, then under the name
// the machine's claim always has, then among every claim of the namespace,
// through reader. The annotation is a hint, never the truth: it is on the
// tenant's own object. nil when the machine records no claim and none
// names it; ErrHostNotFound when it records one and none names it. It only
// reads.
func ConsumedClaim(ctx context.Context, access hostaccess.HostAccess, m3m *infrav1.Metal3Machine, reader client.Reader) (*bmov1alpha1.HostClaim, error) {
	recorded := m3m.Annotations[infrav1.HostClaimAnnotation]
	keys := []types.NamespacedName{{Namespace: access.Namespace(), Name: claimName(m3m)}}
	if key, ok := recordedKey(recorded); ok && key != keys[0] && key.Namespace == access.Namespace() {
		keys = append([]types.NamespacedName{key}, keys...)
	}
	for _, key := range keys {
		claim := &bmov1alpha1.HostClaim{}
		err := reader.Get(ctx, key, claim)
		switch {
		case err == nil && ClaimedFor(claim, m3m):
			return claim, nil
		case err != nil && !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("get HostClaim %s: %w", key, err)
		}
	}
	// Read without copies, as consumedAmong reads hosts: every claim of
	// the namespace at each look; the one returned is copied.
	claims := &bmov1alpha1.HostClaimList{}
	if err := reader.List(ctx, claims, client.InNamespace(access.Namespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list HostClaims in namespace %s: %w", access.Namespace(), err)
	}
	for i := range claims.Items {
		if ClaimedFor(&claims.Items[i], m3m) {
			return claims.Items[i].DeepCopy(), nil
		}
	}
	if recorded == "" {
		return nil, nil
	}
	return nil, fmt.Errorf("%w: no HostClaim in namespace %s of %s names the machine as its consumer (the machine records claim %s)",
		ErrHostNotFound, access.Namespace(), access.Key(), recorded)
}

// ClaimedFor reports whether claim was made for m3m: its consumerRef is
// the machine, with its consumer ID (claims are only ever made by this
// provider, so the ID is always there).
func ClaimedFor(claim *bmov1alpha1.HostClaim, m3m *infrav1.Metal3Machine) bool {
	ref := claim.Spec.ConsumerRef
	return ref != nil && ref.Kind == "Metal3Machine" && ref.Name == m3m.Name &&
		ref.Namespace == m3m.Namespace && ref.UID == infrav1.ConsumerID(m3m)
}

func claimConsumer(claim *bmov1alpha1.HostClaim) string {
	if ref := claim.Spec.ConsumerRef; ref != nil {
		return fmt.Sprintf("%s %s/%s", ref.Kind, ref.Namespace, ref.Name)
	}
	return "nobody"
}

// boundView is the view of claim once the binder has bound it and written
// the host's HardwareData beside it; nil before, and ErrHostNotFound once
// the binder reports the host gone.
func (m *claimBinding) boundView(ctx context.Context, claim *bmov1alpha1.HostClaim) (*Host, string, error) {
	associated := meta.FindStatusCondition(claim.Status.Conditions, bmov1alpha1.AssociatedCondition)
	switch {
	case associated == nil:
		return nil, "the pool's binder has not seen it yet", nil
	case associated.Status != metav1.ConditionTrue && associated.Reason == bmov1alpha1.MissingBareMetalHostReason:
		return nil, "", fmt.Errorf("%w: HostClaim %s/%s: %s", ErrHostNotFound, claim.Namespace, claim.Name, associated.Message)
	case associated.Status != metav1.ConditionTrue:
		return nil, associated.Reason + ": " + associated.Message, nil
	case claim.Status.HardwareData == nil:
		return nil, "bound, waiting for the host's HardwareData", nil
	}
	ref := claim.Status.HardwareData
	if ref.Namespace != claim.Namespace {
		return nil, "", fmt.Errorf("HostClaim %s/%s points at HardwareData in another namespace (%s)", claim.Namespace, claim.Name, ref.Namespace)
	}
	hardware := &bmov1alpha1.HardwareData{}
	if err := m.Access.Client().Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, hardware); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "bound, waiting for the host's HardwareData", nil
		}
		return nil, "", fmt.Errorf("get HardwareData %s/%s of HostClaim %s: %w", ref.Namespace, ref.Name, claim.Name, err)
	}
	return claimView(claim, hardware), "", nil
}

// Host implements Binding: the machine's claim, once bound. A machine
// without a dataTemplate whose claim was recorded but not given what to
// provision (the write failed) gives it now.
func (m *claimBinding) Host(ctx context.Context) (*Host, error) {
	claim, err := m.recordedClaim(ctx)
	if err != nil || claim == nil {
		return nil, err
	}
	if err := m.provisionIfPlain(ctx, claim); err != nil {
		return nil, err
	}
	view, _, err := m.boundView(ctx, claim)
	return view, err
}

// lookup is the machine's claim once bound, read only.
func (m *claimBinding) lookup(ctx context.Context) (*Host, error) {
	claim, err := m.recordedClaim(ctx)
	if err != nil || claim == nil {
		return nil, err
	}
	view, _, err := m.boundView(ctx, claim)
	return view, err
}

// Bind implements Binding: it creates the machine's claim (or finds the one
// a crash left unrecorded), with what to provision when the machine has no
// dataTemplate, and reports the host once the binder has bound it; until
// then ErrNoAvailableHost, with the binder's reason.
func (m *claimBinding) Bind(ctx context.Context) (*Host, error) {
	claim, err := m.ensureClaim(ctx)
	if err != nil {
		return nil, err
	}
	m.recordClaim(claim)
	if err := m.provisionIfPlain(ctx, claim); err != nil {
		return nil, err
	}
	view, waiting, err := m.boundView(ctx, claim)
	if err != nil || view != nil {
		return view, err
	}
	return nil, fmt.Errorf("%w: HostClaim %s/%s waits: %s", ErrNoAvailableHost, claim.Namespace, claim.Name, waiting)
}

// provisionIfPlain makes sure the claim of a machine without a dataTemplate
// has what to provision: such a machine has everything it needs from the
// start, as in the other mode. Its claim is created with it (ensureClaim),
// and its Secrets are written right after; when that did not happen (a
// crash between the two, or a claim made before claims were created
// whole), it happens now.
func (m *claimBinding) provisionIfPlain(ctx context.Context, claim *bmov1alpha1.HostClaim) error {
	switch {
	case UsesDataTemplate(m.M3Machine) || !claim.DeletionTimestamp.IsZero():
		return nil
	case claim.Spec.Image == nil && claim.Spec.CustomDeploy == nil:
		return m.provisionClaim(ctx, claim, RenderedSecrets{})
	case secretsWritten(m.M3Machine, claim) && !waitsForSecret(claim):
		return nil
	}
	if _, err := m.writeHostSecrets(ctx, claimView(claim, &bmov1alpha1.HardwareData{})); err != nil {
		return err
	}
	m.recordClaimData(claim)
	return nil
}

// secretsWritten reports whether the machine's status says the claim's
// Secrets were written: the status records the claim's Secrets only once
// they are. A status lost (clusterctl move keeps none) only costs writing
// them again, which changes nothing.
func secretsWritten(m3m *infrav1.Metal3Machine, claim *bmov1alpha1.HostClaim) bool {
	return sameSecretRef(m3m.Status.UserData, claim.Spec.UserData) &&
		sameSecretRef(m3m.Status.MetaData, claim.Spec.MetaData) &&
		sameSecretRef(m3m.Status.NetworkData, claim.Spec.NetworkData)
}

func sameSecretRef(a, b *corev1.SecretReference) bool {
	return ptr.Deref(a, corev1.SecretReference{}) == ptr.Deref(b, corev1.SecretReference{})
}

// waitsForSecret reports whether the binder says one of the claim's
// Secrets does not exist: someone deleted it, the provider writes it again.
func waitsForSecret(claim *bmov1alpha1.HostClaim) bool {
	cond := meta.FindStatusCondition(claim.Status.Conditions, bmov1alpha1.SynchronizedCondition)
	return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == hostclaim.WaitingForSecretReason
}

// ensureClaim returns the machine's claim, creating it if it does not exist.
// The claim of a machine without a dataTemplate is created whole: with its
// image and the names of its Secrets, which are written right after it,
// owned by it (their owner's UID is only known then). The binder waits for
// a Secret that does not exist yet; one request for the claim instead of
// a create and a patch.
func (m *claimBinding) ensureClaim(ctx context.Context) (*bmov1alpha1.HostClaim, error) {
	key := types.NamespacedName{Namespace: m.Access.Namespace(), Name: claimName(m.M3Machine)}
	claim := &bmov1alpha1.HostClaim{}
	err := m.Access.Client().Get(ctx, key, claim)
	switch {
	case err == nil:
		if !ClaimedFor(claim, m.M3Machine) {
			return nil, fmt.Errorf("HostClaim %s exists and belongs to %s", key, claimConsumer(claim))
		}
		return claim, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get HostClaim %s: %w", key, err)
	}
	claim = m.newClaim(key)
	var secrets []secretData
	if !UsesDataTemplate(m.M3Machine) {
		// Read before the claim is created: a machine whose data cannot
		// be read makes no claim that would wait for it.
		if secrets, err = m.hostSecretData(ctx); err != nil {
			return nil, err
		}
		m.setProvisioning(&claim.Spec, m.secretRefsIn(key.Namespace, secrets))
	}
	if err := m.Access.Client().Create(ctx, claim); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create HostClaim %s: %w", key, err)
		}
		// Created meanwhile (the cache had not seen it yet): read it live.
		if err := m.Access.Reader().Get(ctx, key, claim); err != nil {
			return nil, fmt.Errorf("get HostClaim %s: %w", key, err)
		}
		if !ClaimedFor(claim, m.M3Machine) {
			return nil, fmt.Errorf("HostClaim %s exists and belongs to %s", key, claimConsumer(claim))
		}
		return claim, nil
	}
	m.claimEvent(ctx, claim, "HostClaimCreated", "Created HostClaim %s/%s; the pool's binder chooses its host", claim.Namespace, claim.Name)
	if secrets != nil {
		// A failure here leaves the status without the Secrets:
		// provisionIfPlain writes them at the next reconcile.
		if _, err := m.writeSecrets(ctx, claimView(claim, &bmov1alpha1.HardwareData{}), secrets); err != nil {
			return nil, err
		}
		m.recordClaimData(claim)
	}
	return claim, nil
}

// newClaim is the claim for the machine: who it is for, and what host it
// may be (the machine's hostSelector and failure domain).
func (m *claimBinding) newClaim(key types.NamespacedName) *bmov1alpha1.HostClaim {
	selector := ptr.Deref(m.M3Machine.Spec.HostSelector, infrav1.HostSelector{})
	claim := &bmov1alpha1.HostClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{clusterv1.ClusterNameLabel: m.Cluster.Name},
		},
		Spec: bmov1alpha1.HostClaimSpec{
			ConsumerRef: &corev1.ObjectReference{
				APIVersion: infrav1.GroupVersion.String(), Kind: "Metal3Machine",
				Namespace: m.M3Machine.Namespace, Name: m.M3Machine.Name, UID: infrav1.ConsumerID(m.M3Machine),
			},
			FailureDomain: m.failureDomain(),
			HostSelector:  bmov1alpha1.HostSelector{MatchLabels: selector.MatchLabels},
		},
	}
	for _, req := range selector.MatchExpressions {
		// Normalised: the claim is read by binders other than ours too
		// (BMO's), which need not read a stored machine's "In" as "in".
		claim.Spec.HostSelector.MatchExpressions = append(claim.Spec.HostSelector.MatchExpressions,
			bmov1alpha1.HostSelectorRequirement{Key: req.Key, Operator: pool.NormalizeOperator(string(req.Operator)), Values: req.Values})
	}
	if m.Reuse.Owner != "" {
		// Node reuse: the claim prefers (and waits for) a host kept for
		// the machine's owner in this cluster.
		claim.Annotations = map[string]string{hostclaim.NodeReuseKeyAnnotation: m.reuseKey()}
	}
	return claim
}

func (m *claimBinding) reuseKey() string { return m.Reuse.Cluster + "/" + m.Reuse.Owner }

// recordClaim notes the claim on the machine, as the host annotation does
// in the other mode.
func (m *claimBinding) recordClaim(claim *bmov1alpha1.HostClaim) {
	recordOnce(m.M3Machine, infrav1.HostClaimAnnotation, claim.Namespace+"/"+claim.Name)
}

// recordClaimData notes the claim's Secrets in the machine's status, once
// they are written (secretsWritten).
func (m *claimBinding) recordClaimData(claim *bmov1alpha1.HostClaim) {
	m.M3Machine.Status.UserData = claim.Spec.UserData
	m.M3Machine.Status.MetaData = claim.Spec.MetaData
	m.M3Machine.Status.NetworkData = claim.Spec.NetworkData
}

// Provision implements Binding: the user data next to the claim, and the
// image and Secrets on the claim, which the binder passes to the host.
func (m *claimBinding) Provision(ctx context.Context, view *Host, rendered RenderedSecrets) error {
	claim, err := m.recordedClaim(ctx)
	if err != nil {
		return err
	}
	if claim == nil {
		return fmt.Errorf("%w: the machine records no HostClaim", ErrHostNotFound)
	}
	if err := m.provisionClaim(ctx, claim, rendered); err != nil {
		return err
	}
	view.ProvisioningStarted = true
	return nil
}

func (m *claimBinding) provisionClaim(ctx context.Context, claim *bmov1alpha1.HostClaim, rendered RenderedSecrets) error {
	refs, err := m.writeHostSecrets(ctx, claimView(claim, &bmov1alpha1.HardwareData{}))
	if err != nil {
		return err
	}
	if rendered.MetaData != nil {
		refs.metaData = rendered.MetaData
	}
	if rendered.NetworkData != nil {
		refs.networkData = rendered.NetworkData
	}
	updated := claim.DeepCopy()
	m.setProvisioning(&updated.Spec, refs)
	if err := m.patchClaim(ctx, claim, updated); err != nil {
		return err
	}
	*claim = *updated
	m.recordClaim(claim)
	m.recordClaimData(claim)
	return nil
}

// setProvisioning asks the claim for the machine's image or custom deploy,
// powered on, with the Secrets refs.
func (m *claimBinding) setProvisioning(spec *bmov1alpha1.HostClaimSpec, refs hostSecrets) {
	spec.PoweredOn = true
	spec.Image = m.image()
	if method := m.M3Machine.Spec.CustomDeploy.Method; method != "" {
		spec.CustomDeploy = &bmov1alpha1.CustomDeploy{Method: method}
	}
	spec.UserData, spec.MetaData, spec.NetworkData = refs.userData, refs.metaData, refs.networkData
}

// patchClaim sends the difference between claim and updated. No
// resourceVersion guard: only the provider writes a claim's spec and
// annotations (the binder adds its finalizer and writes the status), so a
// merge patch of those fields cannot undo anyone's change, and the binder's
// frequent writes would only make a guarded one fail.
func (m *claimBinding) patchClaim(ctx context.Context, claim, updated *bmov1alpha1.HostClaim) error {
	patch := client.MergeFrom(claim)
	if diff, err := patch.Data(updated); err != nil {
		return err
	} else if string(diff) == "{}" {
		return nil
	}
	if err := m.Access.Client().Patch(ctx, updated, patch); err != nil {
		return fmt.Errorf("update HostClaim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	return nil
}

// Sync implements Binding: the provider's pause comes off the claim, and a
// provisioned host gives the machine its provider ID, addresses and
// failure domain.
func (m *claimBinding) Sync(ctx context.Context, view *Host) (bool, error) {
	if err := m.Pause(ctx, view, false); err != nil {
		return false, err
	}
	recordOnce(m.M3Machine, infrav1.HostClaimAnnotation, view.String())
	m.M3Machine.Status.UserData = view.UserData
	m.M3Machine.Status.MetaData = view.MetaData
	m.M3Machine.Status.NetworkData = view.NetworkData
	if !view.Provisioned() {
		return false, nil
	}
	m.publish(view)
	return true, nil
}

// Pause implements Binding on the claim, which the binder passes to the
// host; a pause someone else set on the claim is never cleared.
func (m *claimBinding) Pause(ctx context.Context, view *Host, paused bool) error {
	claim := &bmov1alpha1.HostClaim{}
	if err := m.Access.Client().Get(ctx, view.NamespacedName, claim); err != nil {
		return fmt.Errorf("get HostClaim %s: %w", view, err)
	}
	updated := claim.DeepCopy()
	if !setOwnPause(updated, hostclaim.PausedAnnotation, paused) {
		return nil
	}
	return m.patchClaim(ctx, claim, updated)
}

// Release implements Binding: the claim is deleted (kept for node reuse
// if the machine's owner wants its host back), and the binder deprovisions
// and frees the host before it lets the claim go; true once it is gone.
// The claim is found by its consumerRef (findClaim), whatever the
// machine's annotation says.
func (m *claimBinding) Release(ctx context.Context) (bool, error) {
	claim, err := cachedThenLive(m.Access, func(reader client.Reader) (*bmov1alpha1.HostClaim, error) {
		return m.findClaim(ctx, reader)
	})
	switch {
	case errors.Is(err, ErrHostNotFound):
		return m.releaseGoneClaim(ctx, err)
	case err != nil:
		return false, err
	case claim == nil:
		return true, nil
	}
	if claim.DeletionTimestamp.IsZero() {
		updated := claim.DeepCopy()
		if m.Reuse.Reserve && m.Reuse.Owner != "" {
			if updated.Annotations == nil {
				updated.Annotations = map[string]string{}
			}
			updated.Annotations[hostclaim.NodeReuseKeyAnnotation] = m.reuseKey()
			updated.Annotations[hostclaim.KeepOnReleaseAnnotation] = "true"
		}
		if updated.Annotations[hostclaim.PausedAnnotation] == pausedByUs {
			delete(updated.Annotations, hostclaim.PausedAnnotation)
		}
		if err := m.patchClaim(ctx, claim, updated); err != nil {
			return false, err
		}
		uid := claim.UID
		if err := m.Access.Client().Delete(ctx, updated, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("delete HostClaim %s/%s: %w", claim.Namespace, claim.Name, err)
		}
		m.claimEvent(ctx, claim, "HostClaimDeleted", "Deleted HostClaim %s/%s; the pool's binder releases its host", claim.Namespace, claim.Name)
	}
	// The binder removes its finalizer once the host is deprovisioned and
	// free; the claim's Secrets go after it, as they would by garbage
	// collection. The cache is enough: a stale one only says the claim is
	// still there, and the claim's deletion wakes the machine.
	live := &bmov1alpha1.HostClaim{}
	if err := m.Access.Client().Get(ctx, client.ObjectKeyFromObject(claim), live); err == nil && live.UID == claim.UID {
		return false, nil
	} else if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("get HostClaim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	m.deleteHostSecrets(ctx, claim.Namespace)
	m.claimEvent(ctx, claim, "HostReleased", "HostClaim %s/%s is gone: its host is back in the pool", claim.Namespace, claim.Name)
	return true, nil
}

// releaseGoneClaim decides about a machine that records a claim none of
// the identity's namespace belongs to: a claim of the identity's
// namespace that is gone was released by the binder, whose finalizer
// keeps a claim until its host is free; one recorded in another namespace
// cannot be seen (the identity points elsewhere now), and the machine
// waits with notFound, unless an operator said the host is lost.
func (m *claimBinding) releaseGoneClaim(ctx context.Context, notFound error) (bool, error) {
	recorded := m.M3Machine.Annotations[infrav1.HostClaimAnnotation]
	if key, ok := recordedKey(recorded); ok && key.Namespace == m.Access.Namespace() {
		m.deleteHostSecrets(ctx, key.Namespace)
		return true, nil
	}
	if HostLost(m.M3Machine) {
		m.deleteHostSecrets(ctx, m.Access.Namespace())
		m.lostEvent(ctx, recorded)
		return true, nil
	}
	return false, notFound
}
