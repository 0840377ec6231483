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
	"time"

	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/tools/events"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/remediation"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/workload"
)

// hostMissingRequeue looks again for a host that could not be found: the
// machine's host annotation changing does not wake a remediation.
const hostMissingRequeue = 30 * time.Second

// Metal3RemediationReconciler reconciles the Metal3Remediations a
// MachineHealthCheck creates for unhealthy machines: it power-cycles their
// hosts through the machines' identities (baremetal/remediation).
type Metal3RemediationReconciler struct {
	Client client.Client
	// APIReader reads the remediation itself, uncached: its status is the
	// state of its steps, and a step must not be taken again on a stale
	// read. Remediations are few; nil reads through Client.
	APIReader  client.Reader
	Identities hostaccess.Cache
	// WorkloadClusters gives clients of workload clusters, whose Nodes the
	// remediation taints out-of-service (or deletes and restores), and
	// whose pods and volume attachments it waits for. Their kubeconfigs
	// carry the credentials: nothing there needs RBAC of the provider's
	// ServiceAccount, which is why upstream's pods and volumeattachments
	// rules have no counterpart below.
	WorkloadClusters *workload.Clusters
	// Recorder records an Event at every decision; nil records none.
	Recorder         events.EventRecorder
	WatchFilterValue string

	// controller is the built controller, which the host watches of each
	// identity are added to.
	controller controller.Controller
}

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3remediations,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3remediations/status;metal3remediations/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3machines,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=metal3.io,resources=baremetalhosts,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller. Host events arrive through
// the watch each machine's identity gets on its hosts (hostWatcher).
func (r *Metal3RemediationReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	log := ctrl.LoggerFrom(ctx)
	clusterToRemediations, err := util.ClusterToTypedObjectsMapper(mgr.GetClient(), &infrav1.Metal3RemediationList{}, mgr.GetScheme())
	if err != nil {
		return err
	}
	c, err := controllerFor(mgr, &infrav1.Metal3Remediation{}, options, log, r.WatchFilterValue).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(clusterToRemediations),
			builder.WithPredicates(predicates.ClusterPausedTransitions(mgr.GetScheme(), log))).
		// The Machine's health (when to retry or give up) and its deletion.
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(r.machineToRemediation)).
		WatchesRawSource(r.Identities.Source("metal3remediation", r.secretToRemediations)).
		Build(r)
	if err != nil {
		return err
	}
	r.controller = c
	return nil
}

// Reconcile takes one Metal3Remediation a step further.
func (r *Metal3RemediationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	m3r := &infrav1.Metal3Remediation{}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	if err := reader.Get(ctx, req.NamespacedName, m3r); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cluster, err := clusterNamed(ctx, r.Client, m3r.Namespace, m3r.Labels[clusterv1.ClusterNameLabel])
	if err != nil {
		return ctrl.Result{}, err
	}
	// Invariant: a paused cluster's hosts are not touched.
	if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, m3r); err != nil || isPaused || requeue {
		return ctrl.Result{}, err
	}
	deleting := !m3r.DeletionTimestamp.IsZero()
	if deleting && !controllerutil.ContainsFinalizer(m3r, infrav1.Metal3RemediationFinalizer) {
		return ctrl.Result{}, nil
	}
	// The finalizer is saved before the host is touched: a remediation
	// deleted while its host is held off must power it on again.
	if added, err := persistFinalizer(ctx, r.Client, m3r, infrav1.Metal3RemediationFinalizer, false); err != nil || added {
		return ctrl.Result{}, err
	}
	patchHelper, err := patch.NewHelper(m3r, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		// The reconcile's own context may be out of time: the status
		// is written all the same.
		ctx, cancel := patchContext(ctx)
		defer cancel()
		// A remediation whose finalizer went is gone by the time its
		// status is written.
		if err := patchUnlessGone(ctx, patchHelper, m3r, patch.WithOwnedConditions{Conditions: []string{
			infrav1.RemediationHostFoundCondition, infrav1.RemediationPowerCycledCondition, infrav1.RemediationNodeRestoredCondition,
		}}); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	s, result, err := r.findHost(ctx, m3r, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if deleting {
		return r.reconcileDelete(ctx, s, result)
	}
	if s.host == nil {
		return result, nil
	}
	return s.manager(r, m3r).Reconcile(ctx)
}

func (r *Metal3RemediationReconciler) reconcileDelete(ctx context.Context, s *remediationScope, hostResult ctrl.Result) (ctrl.Result, error) {
	m3r := s.remediation
	machineGoes := s.target == nil || !s.target.Machine.DeletionTimestamp.IsZero()
	if s.target != nil && s.host == nil && !s.hostGone && !machineGoes {
		// The host may be held powered off and cannot be reached now (its
		// identity fails): the remediation waits to power it on.
		return hostResult, nil
	}
	done, result, err := s.manager(r, m3r).ReconcileDelete(ctx)
	if err != nil || !done {
		return result, err
	}
	controllerutil.RemoveFinalizer(m3r, infrav1.Metal3RemediationFinalizer)
	return ctrl.Result{}, nil
}

// remediationScope is one reconcile of a remediation: what it found of its
// machine and host.
type remediationScope struct {
	remediation *infrav1.Metal3Remediation
	// target is nil when the Machine or Metal3Machine is gone.
	target *remediation.Target
	// host is nil when it cannot be reached; hostGone says whether that is
	// for good (no host, or another consumer's) rather than for now.
	host     remediation.Host
	hostGone bool
}

// findHost resolves the remediation's Machine, Metal3Machine, identity and
// host, and reports the outcome in the HostFound condition. Only the
// Metal3Machine's identity reaches the host. cluster is the Cluster the
// reconcile read for its pause (nil: none).
func (r *Metal3RemediationReconciler) findHost(ctx context.Context, m3r *infrav1.Metal3Remediation, cluster *clusterv1.Cluster) (*remediationScope, ctrl.Result, error) {
	s := &remediationScope{remediation: m3r}
	target, err := remediation.FindTarget(ctx, r.Client, m3r)
	if _, missing := remediation.AsTargetError(err); missing {
		remediation.ReportTarget(m3r, nil, err)
		return s, ctrl.Result{RequeueAfter: hostMissingRequeue}, nil
	}
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	s.target = target
	m3m := target.M3Machine
	id, err := machineIdentity(ctx, r.Client, m3m, cluster, nil)
	var access hostaccess.HostAccess
	if err == nil {
		id, access, err = hostaccess.Open(ctx, r.Identities, id)
	}
	if err != nil {
		remediation.ReportTarget(m3r, nil, &remediation.TargetError{Reason: infrav1.IdentityNotReadyReason,
			Message: fmt.Sprintf("The identity of Metal3Machine %s/%s cannot be used: %s", m3m.Namespace, m3m.Name, err)})
		retry := ctrl.Result{RequeueAfter: hostMissingRequeue}
		if ie, ok := identity.AsError(err); ok {
			retry = ctrl.Result{RequeueAfter: r.Identities.RetryAfter(id.Key)}
			switch {
			case !id.Key.Resolved():
				// A Metal3ClusterIdentity missing or not admitting the
				// namespace: nothing wakes remediations when that
				// changes, so they look again now and then.
				retry = ctrl.Result{RequeueAfter: hostMissingRequeue}
			case ie.Terminal:
				// A change of the Secret wakes the remediation (Source).
				retry = ctrl.Result{}
			}
		}
		return s, retry, nil
	}
	// Host events of this identity reach their remediations from now on.
	if err := r.Identities.Watch(ctx, id.Key, r.hostWatcher(id)); err != nil {
		return nil, ctrl.Result{}, err
	}
	host, err := remediation.FindHost(ctx, access, m3m)
	if _, missing := remediation.AsTargetError(err); missing {
		remediation.ReportTarget(m3r, nil, err)
		s.hostGone = true
		return s, ctrl.Result{RequeueAfter: hostMissingRequeue}, nil
	}
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	remediation.ReportTarget(m3r, host, nil)
	s.host = host
	return s, ctrl.Result{}, nil
}

// manager is the remediation manager of the scope: what was not found is nil.
func (s *remediationScope) manager(r *Metal3RemediationReconciler, m3r *infrav1.Metal3Remediation) *remediation.Manager {
	m := &remediation.Manager{Remediation: m3r, Host: s.host, Recorder: r.Recorder}
	if s.target == nil {
		return m
	}
	m.Machine = remediation.CAPIMachine(r.Client, s.target)
	if s.host != nil {
		clusterKey := client.ObjectKey{Namespace: s.target.Machine.Namespace, Name: s.target.Machine.Spec.ClusterName}
		m.Nodes = remediation.WorkloadNodes(r.workloadClient(clusterKey), r.workloadVersion(clusterKey), remediationNodeQuery(s.target, s.host))
	}
	return m
}

// remediationNodeQuery is how a remediation recognises its machine's Node,
// through workload.FindNode as the Metal3Machine controller does: by what
// the machine put on it (Cluster API's nodeRef, the providerID) and the
// host's UID label, which a Node registering again after the reboot
// carries before its providerID. Never by hostname alone, unlike the
// Metal3Machine controller linking a Node the first time: the remediation
// deletes the Node it finds, and a remediated machine's Node was linked
// already. More than one match is an error naming them, never a guess
// (TestNodeLookupOfMachineAndRemediation).
func remediationNodeQuery(target *remediation.Target, host remediation.Host) workload.NodeQuery {
	return workload.NodeQuery{
		NodeName:   target.Machine.Status.NodeRef.Name,
		ProviderID: target.M3Machine.Spec.ProviderID,
		HostUID:    string(host.UID()),
	}
}

// workloadClient returns the client of the cluster, lazily: only steps
// that touch Nodes need it.
func (r *Metal3RemediationReconciler) workloadClient(cluster client.ObjectKey) remediation.WorkloadClient {
	return func(ctx context.Context) (client.Client, error) {
		if r.WorkloadClusters == nil {
			return nil, fmt.Errorf("%w: no workload cluster access", remediation.ErrWorkloadUnreachable)
		}
		c, err := r.WorkloadClusters.Client(ctx, cluster)
		if err != nil {
			return nil, fmt.Errorf("%w: cluster %s: %w", remediation.ErrWorkloadUnreachable, cluster, err)
		}
		return c, nil
	}
}

// workloadVersion reads the cluster's Kubernetes version, which decides
// whether its Node is tainted out-of-service or deleted; only asked once
// per remediation, when its host is off.
func (r *Metal3RemediationReconciler) workloadVersion(cluster client.ObjectKey) remediation.WorkloadVersion {
	return func(ctx context.Context) (*version.Info, error) {
		if r.WorkloadClusters == nil {
			return nil, fmt.Errorf("%w: no workload cluster access", remediation.ErrWorkloadUnreachable)
		}
		info, err := r.WorkloadClusters.ServerVersion(ctx, cluster)
		if err != nil {
			return nil, fmt.Errorf("%w: cluster %s: %w", remediation.ErrWorkloadUnreachable, cluster, err)
		}
		return info, nil
	}
}

// hostWatcher is the controller's watch on the hosts of id (its
// BareMetalHosts, or in HostClaim mode its HostClaims), which the identity
// cache runs on the cluster where they are.
func (r *Metal3RemediationReconciler) hostWatcher(id identity.Identity) hostaccess.Watcher {
	return modeHostWatcher("metal3remediation", r.controller, id, r.hostToRemediation(id.Key))
}

// hostToRemediation maps a host seen through key to the remediation of the
// Machine of the Metal3Machine its consumerRef names, if that machine
// records using key: a host never wakes another tenant's remediation.
func (r *Metal3RemediationReconciler) hostToRemediation(key identity.Key) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []ctrl.Request {
		m3m := hostConsumer(ctx, r.Client, key, obj)
		if m3m == nil {
			return nil
		}
		return r.remediationOf(ctx, m3m)
	}
}

// remediationOf is the request of the remediation of m3m's Machine, if any.
func (r *Metal3RemediationReconciler) remediationOf(ctx context.Context, m3m *infrav1.Metal3Machine) []ctrl.Request {
	for _, owner := range m3m.OwnerReferences {
		if owner.Kind == "Machine" && owner.APIVersion == clusterv1.GroupVersion.String() {
			return r.existingRemediation(ctx, types.NamespacedName{Namespace: m3m.Namespace, Name: owner.Name})
		}
	}
	return nil
}

// machineToRemediation maps a Machine to its remediation, named after it.
func (r *Metal3RemediationReconciler) machineToRemediation(ctx context.Context, obj client.Object) []ctrl.Request {
	return r.existingRemediation(ctx, client.ObjectKeyFromObject(obj))
}

// existingRemediation is the request for name if such a remediation exists
// (read from the cache): most Machines and hosts have none.
func (r *Metal3RemediationReconciler) existingRemediation(ctx context.Context, name types.NamespacedName) []ctrl.Request {
	if err := r.Client.Get(ctx, name, &infrav1.Metal3Remediation{}); err != nil {
		return nil
	}
	return []ctrl.Request{{NamespacedName: name}}
}

// secretToRemediations maps an identity Secret to the remediations of the
// Metal3Machines using it.
func (r *Metal3RemediationReconciler) secretToRemediations(ctx context.Context, secret types.NamespacedName) []ctrl.Request {
	machines := &infrav1.Metal3MachineList{}
	// In every namespace: a Metal3ClusterIdentity's Secret is used from
	// other namespaces than its own.
	if err := r.Client.List(ctx, machines,
		client.MatchingFields{identity.UsedIndex: identity.UsedSecret(secret)}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List the Metal3Machines using an identity Secret", "secret", secret)
		return nil
	}
	var requests []ctrl.Request
	for i := range machines.Items {
		requests = append(requests, r.remediationOf(ctx, &machines.Items[i])...)
	}
	return requests
}
