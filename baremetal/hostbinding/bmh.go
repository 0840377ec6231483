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
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

const (
	// pausedByUs is the value of the host pause annotation the provider
	// sets, so it removes only its own pause, never an operator's.
	pausedByUs = "metal3.io/capm3"

	// maxClaimAttempts bounds how many candidate hosts one reconcile tries
	// when others win the race for them.
	maxClaimAttempts = 5
)

// Options say what a binding works for: one Metal3Machine, its Machine and
// Cluster, the management cluster's client and the host access of the
// machine's identity.
type Options struct {
	// Client reads the machine's own Secrets in the management cluster.
	Client    client.Client
	Access    hostaccess.HostAccess
	Cluster   *clusterv1.Cluster
	Machine   *clusterv1.Machine
	M3Machine *infrav1.Metal3Machine
	// Reuse is the machine's part in node reuse: which reserved hosts it
	// may take, and whether its host is kept for its owner on release.
	Reuse Reuse
	// FastTrack leaves a released host powered on (upstream CAPM3's
	// CAPM3_FAST_TRACK), so the next provisioning skips booting the
	// deployment agent, unless automated cleaning is disabled.
	FastTrack bool
	// Recorder records Events on the Metal3Machine: claim, lost race,
	// release. Nil records none.
	Recorder events.EventRecorder
	// InFlight is shared by every binding of the process, so that
	// concurrent machines choose different hosts; nil: no coordination
	// beyond the guarded update.
	InFlight *ClaimsInFlight
}

// machineSide is what both bindings do on the machine's side, whatever
// they bind it to: its options, image and user data, the Secrets it writes
// next to a host, its Events. Each binding holds one and neither holds the
// other, so a method added to one binding never applies to the other.
type machineSide struct{ Options }

// ForBareMetalHosts is the binding that claims BareMetalHosts directly,
// through m's identity: the machine's own consumerRef on the host is the
// claim, written in one update guarded by the host's resourceVersion.
func ForBareMetalHosts(opts Options) Binding { return &bmhBinding{machineSide: machineSide{opts}} }

type bmhBinding struct {
	machineSide
	// read is the identity's hosts as this binding read them (hostsRead).
	read hostsRead
}

var _ Binding = &bmhBinding{}

// hostView is what the binding tells of bmh.
func hostView(bmh *bmov1alpha1.BareMetalHost) *Host {
	view := &Host{
		Owner: metav1.OwnerReference{
			APIVersion: bmov1alpha1.GroupVersion.String(), Kind: "BareMetalHost", Name: bmh.Name, UID: bmh.UID,
		},
		NamespacedName:      types.NamespacedName{Namespace: bmh.Namespace, Name: bmh.Name},
		UID:                 bmh.UID,
		State:               bmh.Status.Provisioning.State,
		ProvisioningStarted: bmh.Spec.Image != nil || bmh.Spec.CustomDeploy != nil,
		PoweredOn:           bmh.Status.PoweredOn,
		Labels:              hostclaim.TenantLabels(bmh),
		Annotations:         hostclaim.TenantAnnotations(bmh),
		Hardware:            bmh.Status.HardwareDetails,
		BootMACAddress:      bmh.Spec.BootMACAddress,
		UserData:            bmh.Spec.UserData,
		MetaData:            bmh.Spec.MetaData,
		NetworkData:         bmh.Spec.NetworkData,
		bmh:                 bmh,
	}
	if bmh.Status.OperationalStatus == bmov1alpha1.OperationalStatusError {
		view.ErrorMessage = bmh.Status.ErrorMessage
		if view.ErrorMessage == "" {
			view.ErrorMessage = "the host reports an error"
		}
	}
	return view
}

// event records a binding decision where users look for it: an Event on the
// Metal3Machine and a structured log line keyed by the machine and the host.
func (m *bmhBinding) event(ctx context.Context, host *bmov1alpha1.BareMetalHost, reason, note string, args ...any) {
	ctrl.LoggerFrom(ctx).Info(fmt.Sprintf(note, args...), "metal3Machine", klog.KObj(m.M3Machine),
		"host", klog.KObj(host), "reason", reason)
	if m.Recorder != nil {
		m.Recorder.Eventf(m.M3Machine, nil, corev1.EventTypeNormal, reason, "BindHost", note, args...)
	}
}

// lostEvent tells that the machine goes without its host recorded, on an
// operator's word (HostLost).
func (m *machineSide) lostEvent(ctx context.Context, recorded string) {
	note := fmt.Sprintf("Released the machine without its host %s, which cannot be found through %s: annotation %s says it is lost",
		recorded, m.Access.Key(), infrav1.HostLostAnnotation)
	ctrl.LoggerFrom(ctx).Info(note, "metal3Machine", klog.KObj(m.M3Machine), "reason", "HostLost")
	if m.Recorder != nil {
		m.Recorder.Eventf(m.M3Machine, nil, corev1.EventTypeWarning, "HostLost", "ReleaseHost", "%s", note)
	}
}

// Host implements Binding: the host whose consumerRef is the machine. A
// machine whose record is an intent is pointed at it (a claim that landed
// before a crash, on another host than the one intended).
func (m *bmhBinding) Host(ctx context.Context) (*Host, error) {
	bmh, err := consumedHost(ctx, m.Access, m.M3Machine, m.cachedHosts)
	if err != nil || bmh == nil {
		return nil, err
	}
	m.recordHost(bmh)
	return hostView(bmh), nil
}

// host finds the machine's host (see ConsumedHost).
func (m *bmhBinding) host(ctx context.Context, reader client.Reader) (*bmov1alpha1.BareMetalHost, error) {
	return ConsumedHost(ctx, m.Access, m.M3Machine, reader)
}

// ConsumedHost finds the BareMetalHost m3m consumes through access, by the
// pool's record of it, the host's consumerRef (the machine's namespace,
// name and consumer ID), which a tenant cannot edit without write access
// to the pool: first where the machine's host annotation points, then
// among every host of the identity's namespace, through reader. The
// annotation is a hint, never the truth: it is on the tenant's own object.
// nil when none names the machine and it records no host, or only intends
// one; ErrHostNotFound when none names it and its record is confirmed
// (infrav1.HostRecordConfirmed). It only reads.
func ConsumedHost(ctx context.Context, access hostaccess.HostAccess, m3m *infrav1.Metal3Machine, reader client.Reader) (*bmov1alpha1.BareMetalHost, error) {
	return consumedHost(ctx, access, m3m, func(ctx context.Context) ([]bmov1alpha1.BareMetalHost, error) {
		return listHosts(ctx, access, reader)
	})
}

// consumedHost is ConsumedHost, with every host of the identity's
// namespace read by hosts.
func consumedHost(ctx context.Context, access hostaccess.HostAccess, m3m *infrav1.Metal3Machine,
	hosts func(context.Context) ([]bmov1alpha1.BareMetalHost, error)) (*bmov1alpha1.BareMetalHost, error) {
	recorded := m3m.Annotations[infrav1.HostAnnotation]
	if key, ok := recordedKey(recorded); ok {
		host := &bmov1alpha1.BareMetalHost{}
		err := access.Client().Get(ctx, key, host)
		switch {
		case err == nil && Consumes(host, m3m):
			return host, nil
		case err != nil && !apierrors.IsNotFound(err) && key.Namespace == access.Namespace():
			return nil, fmt.Errorf("get host %s: %w", recorded, err)
		}
	}
	all, err := hosts(ctx)
	if err != nil {
		return nil, err
	}
	if host := consumedAmong(all, m3m); host != nil {
		if recorded != "" {
			// Said in the HostAssociated condition; every reconcile of a
			// machine whose hosts moved comes here.
			ctrl.LoggerFrom(ctx).V(1).Info("The machine's host annotation names another host than the one the pool says it consumes",
				"metal3Machine", klog.KObj(m3m), "annotation", recorded, "host", klog.KObj(host))
		}
		return host, nil
	}
	if recorded == "" || !infrav1.HostRecordConfirmed(m3m) {
		return nil, nil
	}
	return nil, fmt.Errorf("%w: no host in namespace %s of %s names the machine as its consumer (the machine records host %s)",
		ErrHostNotFound, access.Namespace(), access.Key(), recorded)
}

// recordedKey reads a "<namespace>/<name>" association annotation.
func recordedKey(ref string) (types.NamespacedName, bool) {
	namespace, name, ok := strings.Cut(ref, "/")
	if !ok || namespace == "" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: namespace, Name: name}, true
}

// Bind implements Binding: a host the machine already consumes (a claim
// whose annotation was not recorded, e.g. after a crash), else the best
// available one, claimed with a single update guarded by resourceVersion:
// the host the machine intends to take first (see Intend), and when it
// went to someone else, the next. A machine left without any drops its
// intent.
func (m *bmhBinding) Bind(ctx context.Context) (*Host, error) {
	consumed, candidates, err := m.choose(ctx, true)
	switch {
	case errors.Is(err, ErrNoAvailableHost):
		m.dropIntent()
		return nil, err
	case err != nil:
		return nil, err
	case consumed != nil:
		m.recordAssociation(consumed)
		return hostView(consumed), nil
	}
	attempts := 0
	for _, candidate := range m.intendedFirst(candidates) {
		if attempts == maxClaimAttempts {
			break
		}
		holdKey := m.holdKey(candidate)
		if !m.InFlight.Hold(holdKey, infrav1.ConsumerID(m.M3Machine), candidate.ResourceVersion) {
			continue // another machine of this process is claiming it
		}
		attempts++
		host, err := m.claim(ctx, candidate)
		if err != nil {
			m.InFlight.Drop(holdKey, infrav1.ConsumerID(m.M3Machine))
		}
		if err == nil {
			m.InFlight.Taken(holdKey, infrav1.ConsumerID(m.M3Machine), host.ResourceVersion)
			// What the binding read does not show the claim: a later
			// question reads the hosts again.
			m.read = hostsRead{}
			m.recordAssociation(host)
			m.event(ctx, host, "HostClaimed", "Claimed host %s/%s", host.Namespace, host.Name)
			return hostView(host), nil
		}
		if !errors.Is(err, errLostRace) {
			return nil, err
		}
		m.event(ctx, candidate, "HostClaimLost", "Host %s/%s was claimed by someone else first; trying another", candidate.Namespace, candidate.Name)
	}
	m.dropIntent()
	return nil, ErrNoAvailableHost
}

var errLostRace = errors.New("host was claimed by someone else")

// consumedAmong returns a copy of the host of hosts whose consumerRef is
// m3m. hosts share their maps with the cache (UnsafeDisableDeepCopy: N
// machines each read the pool's N hosts), so they are only read; the one
// returned, which its caller may change, is copied.
func consumedAmong(hosts []bmov1alpha1.BareMetalHost, m3m *infrav1.Metal3Machine) *bmov1alpha1.BareMetalHost {
	for i := range hosts {
		if Consumes(&hosts[i], m3m) {
			return hosts[i].DeepCopy()
		}
	}
	return nil
}

// claim writes the machine's Secrets next to host, then takes the host in
// one update (for a machine with a dataTemplate: only takes it). A conflict is settled by reading the host from its API
// server: it is ours only if its consumerRef says so.
func (m *bmhBinding) claim(ctx context.Context, candidate *bmov1alpha1.BareMetalHost) (*bmov1alpha1.BareMetalHost, error) {
	host := candidate.DeepCopy()
	// A host kept for node reuse may come back with its last consumer's
	// cleaning mode: the pool's goes first, the machine's on top of it.
	restorePoolCleaningMode(host)
	delete(host.Annotations, pool.UncleanedAnnotation)
	// A machine with a dataTemplate only takes the host here; it is given
	// what to provision once its data is rendered (see Provision).
	if !UsesDataTemplate(m.M3Machine) {
		refs, err := m.writeHostSecrets(ctx, hostView(host))
		if err != nil {
			return nil, err
		}
		m.setProvisioningSpec(host, refs)
	}
	host.Spec.ConsumerRef = &corev1.ObjectReference{
		APIVersion: infrav1.GroupVersion.String(), Kind: "Metal3Machine",
		Namespace: m.M3Machine.Namespace, Name: m.M3Machine.Name, UID: infrav1.ConsumerID(m.M3Machine),
	}
	if host.Labels == nil {
		host.Labels = map[string]string{}
	}
	host.Labels[clusterv1.ClusterNameLabel] = m.Cluster.Name
	delete(host.Labels, NodeReuseLabel)
	delete(host.Annotations, NodeReuseClusterAnnotation)

	updateErr := m.Access.Client().Update(ctx, host)
	if updateErr == nil {
		return host, nil
	}
	if !apierrors.IsConflict(updateErr) && !apierrors.IsNotFound(updateErr) {
		m.deleteHostSecrets(ctx, host.Namespace)
		return nil, fmt.Errorf("claim host %s/%s: %w", host.Namespace, host.Name, updateErr)
	}
	live := &bmov1alpha1.BareMetalHost{}
	if err := m.Access.Reader().Get(ctx, client.ObjectKeyFromObject(host), live); err == nil && Consumes(live, m.M3Machine) {
		return live, nil
	}
	m.deleteHostSecrets(ctx, host.Namespace)
	return nil, errLostRace
}

// Consumes reports whether host's consumerRef is m3m. Its UID is the
// machine's consumer ID, which tells a machine from an earlier one of the
// same name, or from a same-named machine of another management cluster,
// and stays the same when clusterctl move gives the machine a new UID. A
// consumerRef without a UID (upstream CAPM3 wrote it) matches by name.
func Consumes(host *bmov1alpha1.BareMetalHost, m3m *infrav1.Metal3Machine) bool {
	ref := host.Spec.ConsumerRef
	return ref != nil && ref.Kind == "Metal3Machine" && ref.Name == m3m.Name &&
		ref.Namespace == m3m.Namespace &&
		(ref.UID == "" || ref.UID == infrav1.ConsumerID(m3m))
}

func (m *machineSide) failureDomain() string {
	if m.Machine.Spec.FailureDomain != "" {
		return m.Machine.Spec.FailureDomain
	}
	return m.M3Machine.Spec.FailureDomain
}

// Sync implements Binding.
func (m *bmhBinding) Sync(ctx context.Context, view *Host) (bool, error) {
	host := view.bmh
	updated := host.DeepCopy()
	setCleaningMode(updated, m.M3Machine.Spec.AutomatedCleaningMode)
	if updated.Annotations[bmov1alpha1.PausedAnnotation] == pausedByUs {
		delete(updated.Annotations, bmov1alpha1.PausedAnnotation)
	}
	dropUpstreamOwnerReference(updated, m.M3Machine)
	if err := m.patchHost(ctx, host, updated); err != nil {
		return false, err
	}
	m.recordAssociation(host)
	if host.Status.Provisioning.State != bmov1alpha1.StateProvisioned {
		return false, nil
	}
	m.publish(view)
	return true, nil
}

// publish gives the machine what its provisioned host tells: its provider
// ID, addresses and failure domain. Once set, the provider ID stays: Cluster
// API copied it onto the Machine and the Node carries it. One upstream
// CAPM3 recorded (its legacy metal3://<host UID>, or a cloud provider's) is
// kept.
func (m *machineSide) publish(view *Host) {
	if m.M3Machine.Spec.ProviderID == "" {
		m.M3Machine.Spec.ProviderID = view.ProviderID(m.M3Machine)
	}
	m.M3Machine.Status.Addresses = view.Addresses()
	m.M3Machine.Status.FailureDomain = view.FailureDomain()
}

// Pause implements Binding with the Bare Metal Operator's pause annotation,
// so BMO leaves a paused cluster's hosts alone.
func (m *bmhBinding) Pause(ctx context.Context, view *Host, paused bool) error {
	host := view.bmh
	updated := host.DeepCopy()
	if !setOwnPause(updated, bmov1alpha1.PausedAnnotation, paused) {
		return nil
	}
	return m.patchHost(ctx, host, updated)
}

// cachedThenLive finds what a releasing machine is bound to with find,
// through access's cache first; when the cache shows nothing (or not the
// record's object), live: the cache may lag behind a claim or a release,
// and only a live read may let the machine go.
func cachedThenLive[T any](access hostaccess.HostAccess, find func(client.Reader) (*T, error)) (*T, error) {
	found, err := find(access.Client())
	if errors.Is(err, ErrHostNotFound) || (err == nil && found == nil) {
		return find(access.Reader())
	}
	return found, err
}

// setOwnPause sets or clears the provider's pause (annotation key, value
// pausedByUs) on obj; a pause someone else set is never cleared. It
// reports whether obj changed.
func setOwnPause(obj metav1.Object, key string, paused bool) bool {
	annotations := obj.GetAnnotations()
	current, has := annotations[key]
	switch {
	case paused && !has:
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[key] = pausedByUs
		obj.SetAnnotations(annotations)
	case !paused && has && current == pausedByUs:
		delete(annotations, key)
	default:
		return false
	}
	return true
}

// patchHost sends the difference between host and updated, guarded by the
// resourceVersion so a concurrent change is never overwritten.
func (m *bmhBinding) patchHost(ctx context.Context, host, updated *bmov1alpha1.BareMetalHost) error {
	if diff, err := client.MergeFrom(host).Data(updated); err != nil {
		return err
	} else if string(diff) == "{}" {
		return nil
	}
	patch := client.MergeFromWithOptions(host, client.MergeFromWithOptimisticLock{})
	if err := m.Access.Client().Patch(ctx, updated, patch); err != nil {
		return fmt.Errorf("update host %s/%s: %w", host.Namespace, host.Name, err)
	}
	return nil
}

// Release implements Binding. The host is found by the pool's record of
// it (host): a tenant that rewrites the machine's annotation cannot make its
// machine go while its host stays provisioned with its data. A machine
// that records a host no host of the namespace names as consumer (checked
// live) is done only if the recorded host is there and someone else's, or
// free: it was released (a crash between releasing it and removing the
// machine's finalizer leaves exactly that). Otherwise the host cannot be
// found, perhaps because the identity now points elsewhere, and the
// machine waits (ErrHostNotFound) until it is found, or until an operator
// says it is lost (HostLostAnnotation).
func (m *bmhBinding) Release(ctx context.Context) (bool, error) {
	host, err := cachedThenLive(m.Access, func(reader client.Reader) (*bmov1alpha1.BareMetalHost, error) {
		return m.host(ctx, reader)
	})
	switch {
	case errors.Is(err, ErrHostNotFound):
		return m.releaseNotFound(ctx, err)
	case err != nil:
		return false, err
	case host == nil:
		return true, nil
	}
	if host.Spec.Image != nil || host.Spec.CustomDeploy != nil || host.Spec.UserData != nil {
		// Deprovision: the Bare Metal Operator cleans the host once it has
		// nothing to provision, as the pool's cleaning mode says.
		// consumerRef stays until it is done.
		updated := host.DeepCopy()
		updated.Spec.Image, updated.Spec.CustomDeploy = nil, nil
		updated.Spec.UserData, updated.Spec.MetaData, updated.Spec.NetworkData = nil, nil, nil
		releaseCleaning(updated, m.keptFor())
		updated.Spec.Online = m.onlineWhenReleased(updated)
		// A paused host is not deprovisioned: the provider's own pause
		// (a machine deleted while its cluster was paused, by this
		// provider or by upstream CAPM3, which sets the same value) goes
		// with the deprovisioning, as does upstream's owner reference.
		if updated.Annotations[bmov1alpha1.PausedAnnotation] == pausedByUs {
			delete(updated.Annotations, bmov1alpha1.PausedAnnotation)
		}
		dropUpstreamOwnerReference(updated, m.M3Machine)
		return false, m.patchHost(ctx, host, updated)
	}
	switch host.Status.Provisioning.State {
	case bmov1alpha1.StateProvisioning, bmov1alpha1.StateProvisioned, bmov1alpha1.StateDeprovisioning:
		return false, nil
	}
	updated := host.DeepCopy()
	updated.Spec.ConsumerRef = nil
	releaseCleaning(updated, m.keptFor())
	updated.Spec.Online = m.onlineWhenReleased(updated)
	dropRebootRequests(updated, m.M3Machine)
	dropUpstreamOwnerReference(updated, m.M3Machine)
	delete(updated.Labels, clusterv1.ClusterNameLabel)
	if m.keptFor() != "" {
		// Kept for the owner's next machine, as upstream CAPM3 does,
		// scoped to this cluster so no other tenant or cluster takes it.
		if updated.Labels == nil {
			updated.Labels = map[string]string{}
		}
		if updated.Annotations == nil {
			updated.Annotations = map[string]string{}
		}
		updated.Labels[NodeReuseLabel] = m.Reuse.Owner
		updated.Annotations[NodeReuseClusterAnnotation] = m.Reuse.Cluster
	}
	if updated.Annotations[bmov1alpha1.PausedAnnotation] == pausedByUs {
		delete(updated.Annotations, bmov1alpha1.PausedAnnotation)
	}
	if err := m.patchHost(ctx, host, updated); err != nil {
		return false, err
	}
	m.deleteHostSecrets(ctx, host.Namespace)
	if owner := updated.Labels[NodeReuseLabel]; owner != "" {
		m.event(ctx, host, "HostReleased", "Released host %s/%s, kept for %s (node reuse)", host.Namespace, host.Name, owner)
	} else {
		m.event(ctx, host, "HostReleased", "Released host %s/%s", host.Namespace, host.Name)
	}
	return true, nil
}

// releaseNotFound decides about a machine that records a host none of
// the identity's namespace names as consumer: released if the recorded
// host is there and not the machine's (it was released), or if an operator
// said the host is lost; else it waits with notFound.
func (m *bmhBinding) releaseNotFound(ctx context.Context, notFound error) (bool, error) {
	recorded := m.M3Machine.Annotations[infrav1.HostAnnotation]
	if key, ok := recordedKey(recorded); ok && key.Namespace == m.Access.Namespace() {
		host := &bmov1alpha1.BareMetalHost{}
		err := m.Access.Reader().Get(ctx, key, host)
		switch {
		case err == nil:
			// Released already; its Secrets for this machine go too.
			m.deleteHostSecrets(ctx, key.Namespace)
			return true, nil
		case !apierrors.IsNotFound(err):
			return false, fmt.Errorf("get host %s: %w", recorded, err)
		}
	}
	if released := m.M3Machine.Annotations[infrav1.HostReleasedAnnotation]; released != "" {
		// This provider released it before (a host that moved since it
		// was recorded cannot be checked by its recorded name).
		return true, nil
	}
	if HostLost(m.M3Machine) {
		m.deleteHostSecrets(ctx, m.Access.Namespace())
		m.lostEvent(ctx, recorded)
		return true, nil
	}
	return false, notFound
}

// keptFor is the cluster the machine's host is kept for on release (node
// reuse), "" if it goes back to the pool.
func (m *bmhBinding) keptFor() string {
	if m.Reuse.Reserve && m.Reuse.Owner != "" {
		return m.Reuse.Cluster
	}
	return ""
}

// onlineWhenReleased is the power a released host is left in, as upstream
// CAPM3 decides it: off, unless fast track keeps it on for the next
// provisioning, which only works if automated cleaning boots the agent
// (with cleaning disabled, nothing would); and on whatever the settings
// for a host whose power off is disabled, which the Bare Metal Operator
// would refuse to switch off.
func (m *bmhBinding) onlineWhenReleased(host *bmov1alpha1.BareMetalHost) bool {
	switch {
	case host.Spec.DisablePowerOff:
		return true
	case host.Spec.AutomatedCleaningMode == bmov1alpha1.CleaningModeDisabled:
		return false
	}
	return m.FastTrack
}

func stateName(state bmov1alpha1.ProvisioningState) string {
	if state == "" {
		return "registering"
	}
	return string(state)
}

// UsesDataTemplate reports whether m3m's metadata and network data are
// rendered from a Metal3DataTemplate, which makes binding a two-step affair.
func UsesDataTemplate(m3m *infrav1.Metal3Machine) bool {
	return m3m.Spec.DataTemplate != nil && m3m.Spec.DataTemplate.Name != ""
}
