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
	"errors"
	"fmt"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/datatemplate"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/internal/readiness"
)

const (
	// noHostRequeue: new hosts do not name the machine, so a machine waiting
	// for one looks again on its own.
	noHostRequeue = 15 * time.Second
	// hostProgressRequeue backs up host events while a host provisions or
	// deprovisions.
	hostProgressRequeue = 10 * time.Second
)

func (r *Metal3MachineReconciler) reconcileNormal(ctx context.Context, s *machineScope) (ctrl.Result, error) {
	m3m := s.m3m
	// The finalizer and the consumer ID are in place: Reconcile persisted
	// them before anything else. Only a tenant's Secret is protected, not
	// a Metal3ClusterIdentity's.
	if name := secretRefName(m3m.Spec.IdentityRef); name != "" {
		if err := r.identitySecrets().Protect(ctx, m3m.Namespace, name); err != nil {
			return ctrl.Result{}, err
		}
	}

	if !clusterInfrastructureProvisioned(s) {
		if !infrav1.HostRecordConfirmed(m3m) {
			// A confirmed association stays confirmed (HostAssociated
			// tells it until HostProvisioned does).
			setCondition(m3m, infrav1.HostAssociatedCondition, metav1.ConditionFalse, infrav1.WaitingForClusterInfrastructureReason,
				"Waiting for the cluster's infrastructure to be provisioned")
		}
		return ctrl.Result{}, nil
	}

	host, err := s.binding.Host(ctx)
	switch {
	case errors.Is(err, hostbinding.ErrHostNotFound):
		// Invariant: an associated machine never moves to another host.
		setCondition(m3m, infrav1.HostAssociatedCondition, metav1.ConditionFalse, infrav1.HostNotFoundReason,
			err.Error()+"; the machine will not take another host")
		return ctrl.Result{RequeueAfter: noHostRequeue}, nil
	case err != nil:
		return ctrl.Result{}, err
	case host == nil:
		if !hasBootstrapData(s) {
			setCondition(m3m, infrav1.HostAssociatedCondition, metav1.ConditionFalse, infrav1.WaitingForBootstrapDataReason,
				"Waiting for the bootstrap provider's data")
			return ctrl.Result{}, nil
		}
		host, err = s.binding.Bind(ctx)
		if errors.Is(err, hostbinding.ErrNoAvailableHost) {
			msg := fmt.Sprintf("No available host in namespace %s matches the machine's hostSelector", s.access.Namespace())
			if err.Error() != hostbinding.ErrNoAvailableHost.Error() {
				msg = err.Error() // it says why, e.g. a host kept for the owner is not ready yet
			}
			setCondition(m3m, infrav1.HostAssociatedCondition, metav1.ConditionFalse, infrav1.NoAvailableHostReason, msg)
			return ctrl.Result{RequeueAfter: noHostRequeue}, nil
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		ctrl.LoggerFrom(ctx).Info("Bound to a host", "host", klog.KRef(host.Namespace, host.Name), "identity", s.access.Key().String())
	}
	associated := "Host " + host.String()
	if recorded := m3m.Annotations[infrav1.HostAnnotation]; recorded != "" && recorded != host.String() {
		// The record is immutable (it cannot be pointed elsewhere by a
		// tenant); the host found by its consumerRef is the truth.
		associated += fmt.Sprintf(" (the machine records %s: the host moved, found by its consumerRef in namespace %s)",
			recorded, host.Namespace)
	}
	setCondition(m3m, infrav1.HostAssociatedCondition, metav1.ConditionTrue, infrav1.AssociatedReason, associated)
	if conditions.Get(m3m, infrav1.HostProvisionedCondition) == nil {
		// From the association on, the machine has this condition, which
		// confirms its host record (infrav1.HostRecordConfirmed) whatever
		// later rewrites HostAssociated; the steps below refine it.
		setCondition(m3m, infrav1.HostProvisionedCondition, metav1.ConditionFalse, infrav1.ProvisioningReason,
			fmt.Sprintf("Host %s is %s", host, provisioningProgress(host)))
	}

	if hostbinding.UsesDataTemplate(m3m) {
		if result, ready, err := r.reconcileData(ctx, s, host); !ready || err != nil {
			return result, err
		}
	}

	published := m3m.Spec.ProviderID
	provisioned, err := s.binding.Sync(ctx, host)
	if err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case host.ErrorMessage != "":
		setCondition(m3m, infrav1.HostProvisionedCondition, metav1.ConditionFalse, infrav1.HostErrorReason,
			fmt.Sprintf("Host %s reports an error: %s", host, host.ErrorMessage))
	case provisioned:
		setCondition(m3m, infrav1.HostProvisionedCondition, metav1.ConditionTrue, infrav1.ProvisionedReason, "")
		result, node, err := r.reconcileNode(ctx, s, host)
		if published == "" && !node.publishable {
			// Cluster API looks for the Node by the providerID once, when
			// the machine publishes it, and hears of Nodes only once the
			// control plane is initialized: the Node carries it first (as
			// upstream CAPM3 does), else the first control-plane Machine
			// would wait for a Node event that never comes.
			m3m.Spec.ProviderID = ""
			return result, err
		}
		m3m.Status.Initialization.Provisioned = ptr.To(true)
		if err != nil || !node.seen {
			return result, err
		}
		return awaitNodeRef(ctx, s, published, result, time.Now()), nil
	default:
		setCondition(m3m, infrav1.HostProvisionedCondition, metav1.ConditionFalse, infrav1.ProvisioningReason,
			fmt.Sprintf("Host %s is %s", host, provisioningProgress(host)))
	}
	return ctrl.Result{RequeueAfter: hostProgressRequeue}, nil
}

// intendHost records, with the finalizer the machine's first write adds,
// the host its binding would take now (Binding.Intend), when it would take
// one in this reconcile: not deleting, its cluster's infrastructure
// provisioned, its bootstrap data there. A host it is about to claim keeps
// clusterctl move waiting from that write on.
func (r *Metal3MachineReconciler) intendHost(ctx context.Context, s *machineScope) func() {
	return func() {
		if !s.m3m.DeletionTimestamp.IsZero() || !clusterInfrastructureProvisioned(s) || !hasBootstrapData(s) {
			return
		}
		if err := s.binding.Intend(ctx); err != nil {
			ctrl.LoggerFrom(ctx).V(1).Info("No host intended", "reason", err.Error())
			return
		}
		setBlockMove(s.m3m, machineInFlight(s.m3m))
	}
}

// clusterInfrastructureProvisioned: the machine's cluster's
// infrastructure is provisioned, which binding a host waits for.
func clusterInfrastructureProvisioned(s *machineScope) bool {
	return ptr.Deref(s.cluster.Status.Initialization.InfrastructureProvisioned, false)
}

// hasBootstrapData: the bootstrap provider's data (or the machine's own
// user data) is there, which binding a host waits for.
func hasBootstrapData(s *machineScope) bool {
	return s.m3m.Spec.UserData != nil || s.machine.Spec.Bootstrap.DataSecretName != nil
}

// reconcileData claims the machine's data and, once it is rendered next to
// host, gives the host what to provision. ready is false while the host
// cannot be provisioned yet; the conditions say why. A host that is already
// provisioning carries on whatever happens to its data later.
func (r *Metal3MachineReconciler) reconcileData(ctx context.Context, s *machineScope, host *hostbinding.Host) (ctrl.Result, bool, error) {
	m3m := s.m3m
	started := host.ProvisioningStarted
	notReady := func(reason string, err error, result ctrl.Result) (ctrl.Result, bool, error) {
		setCondition(m3m, infrav1.DataReadyCondition, metav1.ConditionFalse, reason, err.Error())
		if !started {
			setCondition(m3m, infrav1.HostProvisionedCondition, metav1.ConditionFalse, infrav1.WaitingForDataReason,
				fmt.Sprintf("Host %s waits for the machine's metadata and network data", host))
		}
		return result, started, nil
	}
	claim, err := s.data.EnsureDataClaim(ctx)
	switch {
	case errors.Is(err, datatemplate.ErrDataTemplateNotFound):
		return notReady(infrav1.Metal3DataClaimTemplateNotFoundReason, err, ctrl.Result{RequeueAfter: noHostRequeue})
	case err != nil:
		return ctrl.Result{}, false, err
	}
	data, err := s.data.RenderedData(ctx, claim, host)
	switch {
	case errors.Is(err, datatemplate.ErrDataFailed):
		return notReady(infrav1.Metal3DataClaimDataFailedReason, err, ctrl.Result{})
	case errors.Is(err, datatemplate.ErrDataNotReady):
		// The claim and its Metal3Data are watched: their progress wakes us.
		return notReady(infrav1.Metal3DataClaimWaitingForDataReason, err, ctrl.Result{})
	case err != nil:
		return ctrl.Result{}, false, err
	}
	setCondition(m3m, infrav1.DataReadyCondition, metav1.ConditionTrue, infrav1.Metal3DataClaimDataReadyReason,
		fmt.Sprintf("Metal3Data %s rendered next to host %s", data.Name, host))
	if !started {
		if err := s.binding.Provision(ctx, host, datatemplate.RenderedSecrets(data)); err != nil {
			return ctrl.Result{}, false, err
		}
	}
	return ctrl.Result{}, true, nil
}

func (r *Metal3MachineReconciler) reconcileDelete(ctx context.Context, s *machineScope) (ctrl.Result, error) {
	done, err := s.binding.Release(ctx)
	if errors.Is(err, hostbinding.ErrHostNotFound) {
		// Invariant: a machine is never let go while its host may still be
		// provisioned with its data; an operator decides it is lost.
		msg := fmt.Sprintf("%s; the machine keeps its finalizer until its host is found, or an operator sets the %s annotation",
			err.Error(), infrav1.HostLostAnnotation)
		if previous := conditions.Get(s.m3m, infrav1.HostAssociatedCondition); previous == nil || previous.Message != msg {
			ctrl.LoggerFrom(ctx).Info("The deleting machine's host cannot be found", "reason", infrav1.HostNotFoundReason, "message", msg)
			if r.Recorder != nil {
				r.Recorder.Eventf(s.m3m, nil, corev1.EventTypeWarning, infrav1.HostNotFoundReason, "ReleaseHost", "%s", msg)
			}
		}
		setCondition(s.m3m, infrav1.HostAssociatedCondition, metav1.ConditionFalse, infrav1.HostNotFoundReason, msg)
		return ctrl.Result{RequeueAfter: noHostRequeue}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if !done {
		setCondition(s.m3m, infrav1.HostProvisionedCondition, metav1.ConditionFalse, infrav1.DeprovisioningReason,
			"Deprovisioning the host before releasing it")
		return ctrl.Result{RequeueAfter: hostProgressRequeue}, nil
	}
	if recorded := s.m3m.Annotations[infrav1.HostAnnotation]; recorded != "" && s.m3m.Annotations[infrav1.HostReleasedAnnotation] == "" {
		if s.m3m.Annotations == nil {
			s.m3m.Annotations = map[string]string{}
		}
		s.m3m.Annotations[infrav1.HostReleasedAnnotation] = recorded
	}
	// The data's Secrets next to the host go through this machine's
	// identity, which stays protected until they are gone.
	released, err := s.data.ReleaseDataClaim(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !released {
		setCondition(s.m3m, infrav1.DataReadyCondition, metav1.ConditionFalse, infrav1.DeletingReason,
			"Waiting for the Metal3DataClaim, its Metal3Data and the Secrets next to the host to be deleted")
		return ctrl.Result{RequeueAfter: dataGoneRequeue}, nil
	}
	if name := secretRefName(s.m3m.Spec.IdentityRef); name != "" {
		if err := r.identitySecrets().Release(ctx, s.m3m.Namespace, name, s.m3m); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.Identities.Release(ctx, s.access.Key(), s.m3m); err != nil {
		return ctrl.Result{}, err
	}
	controllerutil.RemoveFinalizer(s.m3m, infrav1.Metal3MachineFinalizer)
	return ctrl.Result{}, nil
}

func (r *Metal3MachineReconciler) identitySecrets() *identity.Secrets {
	return &identity.Secrets{Client: r.Client, Metadata: r.Identities.SecretMetadata()}
}

// pauseHost sets or clears the provider's pause on the machine's host.
// Without a usable identity (no binding) there is nothing it can do.
func (r *Metal3MachineReconciler) pauseHost(ctx context.Context, s *machineScope, paused bool) error {
	if s.binding == nil {
		return nil
	}
	host, err := s.binding.Host(ctx)
	switch {
	case errors.Is(err, hostbinding.ErrHostNotFound):
		return nil
	case err != nil:
		return err
	case host == nil:
		return nil
	}
	return s.binding.Pause(ctx, host, paused)
}

// reportIdentity records the identity in use; the IdentityReady condition is
// the machine's own only when it overrides the cluster's identity.
func (r *Metal3MachineReconciler) reportIdentity(ctx context.Context, m3m *infrav1.Metal3Machine, id identity.Identity, access hostaccess.HostAccess, err error) error {
	// Unless the identity could not even be resolved (e.g. the Cluster is
	// not there yet), the machine records the identity it uses.
	_, isIdentityErr := identity.AsError(err)
	resolved := err == nil || isIdentityErr
	if resolved {
		if previous, recorded := identity.KeyFromStatus(m3m.Status.Identity, m3m.Namespace); recorded && previous != id.Key {
			// The machine uses another identity now: the previous one may
			// have no user left.
			if err := r.Identities.Release(ctx, previous, m3m); err != nil {
				return err
			}
		}
		m3m.Status.Identity = identity.Status(id, hostaccess.NamespaceOf(access))
	}
	if m3m.Spec.IdentityRef == nil && resolved {
		conditions.Delete(m3m, infrav1.IdentityReadyCondition)
		if err != nil {
			// The cluster's identity is reported on the Metal3Cluster;
			// the machine says it is not ready, unless the management
			// cluster serves no host API at all (the in-cluster
			// identity's one failure), which it names.
			reason := infrav1.IdentityNotReadyReason
			if ie, ok := identity.AsError(err); ok && ie.Reason == infrav1.IdentityHostAPINotServedReason {
				reason = ie.Reason
			}
			setCondition(m3m, infrav1.HostAssociatedCondition, metav1.ConditionFalse, reason, err.Error())
		}
		return nil
	}
	cond := identity.Condition(id, hostaccess.NamespaceOf(access), err)
	cond.ObservedGeneration = m3m.Generation
	recordIdentityTransition(ctx, r.Recorder, m3m, conditions.Get(m3m, infrav1.IdentityReadyCondition), cond)
	conditions.Set(m3m, cond)
	return nil
}

func (r *Metal3MachineReconciler) identityRetry(id identity.Identity, err error) ctrl.Result {
	if ie, ok := identity.AsError(err); ok && ie.Terminal {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: r.Identities.RetryAfter(id.Key)}
}

// setMachineReady summarises the machine: Ready once its host is provisioned
// and its identity usable; otherwise the first unmet condition says why.
func setMachineReady(m3m *infrav1.Metal3Machine) error {
	summary := readiness.Summary{
		Conditions: []string{infrav1.IdentityReadyCondition, infrav1.HostAssociatedCondition, infrav1.DataReadyCondition, infrav1.HostProvisionedCondition},
		Optional:   []string{infrav1.IdentityReadyCondition, infrav1.DataReadyCondition},
		Deleting:   !m3m.DeletionTimestamp.IsZero(),
	}
	// The data matters until the host is provisioned with it; a later
	// rendering failure is reported but does not unready a running node.
	if conditions.IsTrue(m3m, infrav1.HostProvisionedCondition) {
		summary.Conditions = []string{infrav1.IdentityReadyCondition, infrav1.HostAssociatedCondition, infrav1.HostProvisionedCondition}
	}
	return readiness.Set(m3m, summary)
}

func setCondition(obj conditions.Setter, condType string, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(obj, metav1.Condition{Type: condType, Status: status, Reason: reason, Message: message})
}

// provisioningProgress is the host's state as its machine reports it while
// it waits for the host to be provisioned. The steps of one provisioning
// (the host still available with the machine's image just given to it,
// preparing, provisioning) are one state to the machine: the condition, and
// so the machine's status, changes once per provisioning rather than at
// each step the Bare Metal Operator takes, and each change is a write.
// Anything else (registering, inspecting, deprovisioning a reused host) is
// said as it is.
func provisioningProgress(host *hostbinding.Host) string {
	switch host.State {
	case "":
		return "registering"
	case bmov1alpha1.StateAvailable, bmov1alpha1.StateReady, bmov1alpha1.StatePreparing, bmov1alpha1.StateProvisioning:
		return string(bmov1alpha1.StateProvisioning)
	}
	return string(host.State)
}
