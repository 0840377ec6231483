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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/workload"
)

// Metal3MachineReconciler reconciles Metal3Machines.
type Metal3MachineReconciler struct {
	Client     client.Client
	Identities hostaccess.Cache
	// WorkloadClusters gives clients of workload clusters, to set Nodes'
	// providerID when no cloud provider does and sync their labels. Nil
	// disables that.
	WorkloadClusters *workload.Clusters
	// Recorder emits Events on binding decisions and on transitions of
	// the machine's own identity and of its workload cluster's access;
	// nil emits none.
	Recorder         events.EventRecorder
	WatchFilterValue string
	// FastTrack leaves released hosts powered on (CAPM3_FAST_TRACK).
	FastTrack bool

	// claimsInFlight keeps the controller's concurrent reconciles from
	// choosing the same host (see hostbinding.ClaimsInFlight).
	claimsInFlight hostbinding.ClaimsInFlight

	// controller is the built controller, which the host watches of each
	// identity are added to (see hostWatcher).
	controller controller.Controller
}

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3machines,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3machines/status;metal3machines/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=metal3.io,resources=baremetalhosts,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=metal3.io,resources=hostclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=metal3.io,resources=hardwaredata,verbs=get;list;watch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3machinetemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines;machines/status,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machinedeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3dataclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3datas;metal3datatemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=selfsubjectaccessreviews,verbs=create

// SetupWithManager registers the controller. Host events arrive through
// the watch each machine's identity gets on its hosts (hostWatcher), which
// the identity cache runs on the hosts' cluster.
func (r *Metal3MachineReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	log := ctrl.LoggerFrom(ctx)
	clusterToMachines, err := util.ClusterToTypedObjectsMapper(mgr.GetClient(), &infrav1.Metal3MachineList{}, mgr.GetScheme())
	if err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&infrav1.Metal3Machine{}).
		WithOptions(options).
		WithEventFilter(predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, r.WatchFilterValue)).
		// Pause and unpause, and the cluster's infrastructure becoming
		// provisioned, which machines wait for.
		Watches(&clusterv1.Cluster{},
			handler.EnqueueRequestsFromMapFunc(clusterToMachines),
			builder.WithPredicates(predicates.ClusterPausedTransitionsOrInfrastructureProvisioned(mgr.GetScheme(), log))).
		// The Metal3Cluster's cloud provider setting and label-sync
		// prefixes, which decide what the machines do to their Nodes.
		Watches(&infrav1.Metal3Cluster{}, handler.EnqueueRequestsFromMapFunc(r.metal3ClusterToMachines),
			builder.WithPredicates(predicate.Or[client.Object](predicate.AnnotationChangedPredicate{}, predicate.GenerationChangedPredicate{}))).
		Watches(&clusterv1.Machine{},
			handler.EnqueueRequestsFromMapFunc(util.MachineToInfrastructureMapFunc(infrav1.GroupVersion.WithKind("Metal3Machine")))).
		// Bootstrap data appearing: metadata only, Secrets' data is never cached.
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.bootstrapSecretToMetal3Machines)).
		// A machine with a dataTemplate waits for its claim and Metal3Data.
		Watches(&infrav1.Metal3DataClaim{},
			handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &infrav1.Metal3Machine{}, handler.OnlyControllerOwner())).
		Watches(&infrav1.Metal3Data{}, handler.EnqueueRequestsFromMapFunc(r.dataToMetal3Machine)).
		// Its identity's Secret changing, connecting or disconnecting.
		WatchesRawSource(r.Identities.Source("metal3machine", r.secretToMachines))
	// Its Metal3ClusterIdentity, or its namespace's labels, changing
	// whether it may use that identity.
	for _, src := range clusterIdentitySources(mgr, r.clusterIdentityToMachines) {
		b = b.WatchesRawSource(src)
	}
	c, err := b.Build(r)
	if err != nil {
		return err
	}
	r.controller = c
	return nil
}

// metal3MachineConditions are the conditions of a Metal3Machine, all the
// provider's.
var metal3MachineConditions = []string{
	clusterv1.PausedCondition, infrav1.ReadyCondition, infrav1.IdentityReadyCondition, infrav1.HostAssociatedCondition,
	infrav1.DataReadyCondition, infrav1.HostProvisionedCondition, infrav1.WorkloadClusterReachableCondition,
}

// Reconcile brings one Metal3Machine to its desired state.
func (r *Metal3MachineReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	m3m := &infrav1.Metal3Machine{}
	if err := r.Client.Get(ctx, req.NamespacedName, m3m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := dropForeignConditions(ctx, r.Client, r.Recorder, m3m, metal3MachineConditions); err != nil {
		return ctrl.Result{}, err
	}
	machine, err := util.GetOwnerMachine(ctx, r.Client, m3m.ObjectMeta)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("get owner Machine of Metal3Machine %s: %w", req.NamespacedName, err)
	}
	if machine == nil {
		ctrl.LoggerFrom(ctx).Info("Waiting for the Machine controller to set the owner reference")
		return ctrl.Result{}, nil
	}
	cluster, err := util.GetClusterFromMetadata(ctx, r.Client, machine.ObjectMeta)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("Waiting for the Machine's Cluster", "reason", err.Error())
		return ctrl.Result{}, nil
	}

	id, identityErr := identity.ResolveMachine(ctx, r.Client, m3m)
	var access hostaccess.HostAccess
	if identityErr == nil {
		// A Metal3ClusterIdentity that does not admit the machine's
		// namespace gives no access: the machine, and its host, are left
		// as they are until it does.
		id, access, identityErr = hostaccess.Open(ctx, r.Identities, id)
	}
	if identityErr == nil {
		// Host events of this identity reach their machines from now on.
		if err := r.Identities.Watch(ctx, id.Key, r.hostWatcher(id)); err != nil {
			return ctrl.Result{}, err
		}
	}
	scope := &machineScope{
		cluster: cluster, machine: machine, m3m: m3m, access: access,
		data: &baremetal.MachineManager{Client: r.Client, Cluster: cluster, M3Machine: m3m},
	}
	bindingOptions := hostbinding.Options{
		Client: r.Client, Access: access, Cluster: cluster, Machine: machine, M3Machine: m3m, Recorder: r.Recorder,
		InFlight: &r.claimsInFlight,
	}
	if access != nil {
		scope.binding = hostbinding.For(id.Mode, bindingOptions)
	}

	if annotations.IsPaused(cluster, m3m) {
		_, requeue, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, m3m)
		if err != nil || requeue {
			return ctrl.Result{}, err
		}
		// Invariant: a paused cluster's hosts are not touched by BMO either.
		// Once the host is paused, what the machine drives is frozen and
		// clusterctl move may go on.
		if err := r.pauseHost(ctx, scope, true); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, releaseMoveBlock(ctx, r.Client, m3m)
	}

	writes := &writeRecorder{Client: r.Client}
	patchHelper, err := patch.NewHelper(m3m, writes)
	if err != nil {
		return ctrl.Result{}, err
	}
	statusBefore := m3m.Status.DeepCopy()
	// Not paused: the condition rides in this reconcile's patch rather than
	// costing a write (and a reconcile) of its own, as
	// paused.EnsurePausedCondition would.
	setCondition(m3m, clusterv1.PausedCondition, metav1.ConditionFalse, clusterv1.NotPausedReason, "")
	defer func() {
		// The reconcile's own context may be out of time: the status
		// is written all the same.
		ctx, cancel := patchContext(ctx)
		defer cancel()
		if scope.metadataOnly {
			// Only what was persisted ahead of everything else is patched;
			// the status follows in the next reconcile, which this write
			// triggers.
			m3m.Status = *statusBefore
		} else {
			if err := setMachineReady(m3m); err != nil {
				reterr = kerrors.NewAggregate([]error{reterr, err})
			}
			stampLastUpdated(statusBefore, &m3m.Status, &m3m.Status.LastUpdated)
			setBlockMove(m3m, machineInFlight(m3m))
		}
		if err := patchHelper.Patch(ctx, m3m, patch.WithOwnedConditions{Conditions: metal3MachineConditions},
			patch.WithStatusObservedGeneration{}); err != nil && !apierrors.IsNotFound(err) {
			reterr = kerrors.NewAggregate([]error{reterr, err})
			return
		}
		writes.waitForWrites(ctx, r.Client, m3m)
	}()

	if err := r.reportIdentity(ctx, m3m, id, access, identityErr); err != nil {
		return ctrl.Result{}, err
	}
	if identityErr != nil {
		// Without its identity the machine can neither provision nor release
		// its host: it keeps its finalizer and retries with backoff.
		return r.identityRetry(id, identityErr), nil
	}
	// The binding is rebuilt with the machine's part in node reuse, which
	// only a machine with a usable identity needs.
	if bindingOptions.Reuse, err = r.nodeReuse(ctx, cluster, machine, m3m); err != nil {
		return ctrl.Result{}, err
	}
	bindingOptions.FastTrack = r.FastTrack
	scope.binding = hostbinding.For(id.Mode, bindingOptions)
	if !m3m.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, scope)
	}
	return r.reconcileNormal(ctx, scope)
}

// machineScope is one reconcile of a Metal3Machine: the machine, its
// cluster, the host access of its identity and the binding to its host
// (both nil while the identity cannot be used), and its data.
type machineScope struct {
	cluster *clusterv1.Cluster
	machine *clusterv1.Machine
	m3m     *infrav1.Metal3Machine
	access  hostaccess.HostAccess
	binding hostbinding.Binding
	data    *baremetal.MachineManager
	// metadataOnly: the reconcile persists the machine's metadata alone
	// (its finalizer and consumer ID, first of all).
	metadataOnly bool
}
