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
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/datatemplate"
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
	// Recorder emits the machine's Events: its binding's decisions (host
	// claimed, claim lost, host released or lost), a deleting machine's
	// host not found, transitions of its identity (its own identityRef's,
	// or one that cannot even be resolved) and of its workload cluster's
	// access, invalid label-sync prefixes of its Metal3Cluster, and
	// conditions another provider left being dropped; nil emits none.
	Recorder         events.EventRecorder
	WatchFilterValue string
	// FastTrack leaves released hosts powered on (CAPM3_FAST_TRACK).
	FastTrack bool

	// claimsInFlight keeps the controller's concurrent reconciles from
	// choosing the same host (see hostbinding.ClaimsInFlight).
	claimsInFlight hostbinding.ClaimsInFlight
	// ownWrites keeps a machine's reconcile from starting on a cached copy
	// older than the last one wrote.
	ownWrites ownWrites

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
	b := controllerFor(mgr, &infrav1.Metal3Machine{}, options, log, r.WatchFilterValue).
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
	// Every association reads its cluster's MachineDeployments (node
	// reuse), a kind nothing here watches. Asked for now, their informer
	// starts and lists with the manager's cache; asked for at the first
	// association after a start, it would hold that reconcile until
	// listed: a second and more on a busy API server, which answers a new
	// watch with 429 and client-go retries it a second later.
	if _, err := mgr.GetCache().GetInformer(ctx, &clusterv1.MachineDeployment{}, cache.BlockUntilSynced(false)); err != nil {
		return fmt.Errorf("start the MachineDeployment informer: %w", err)
	}
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
		if apierrors.IsNotFound(err) {
			r.ownWrites.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.ownWrites.stale(req.NamespacedName, m3m.ResourceVersion) {
		// The cache lags this process's last write of the machine, whose
		// own event brings the next reconcile.
		ctrl.LoggerFrom(ctx).V(4).Info("The cache does not show the machine's last write yet", "resourceVersion", m3m.ResourceVersion)
		return ctrl.Result{}, nil
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
	scope, err := r.newMachineScope(ctx, cluster, machine, m3m)
	if err != nil {
		return ctrl.Result{}, err
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
	// Whatever this reconcile writes, the next starts from a cache that
	// shows it (ownWrites.stale).
	defer r.ownWrites.record(req.NamespacedName, writes)
	// The finalizer and the consumer ID are persisted before any host is
	// touched: a machine deleted between a claim and the finalizer would
	// leave its host claimed forever, and one moved by clusterctl between
	// a claim and its consumer ID could not find its host again. A machine
	// whose identity cannot be used gets neither: it touches no host, and
	// a finalizer would keep it from being deleted until the identity
	// works. The same write records the host the machine is about to take
	// (an intent until the claim's status confirms it), and the reconcile
	// goes on to claim it: one write of the machine per association fewer.
	if scope.identityErr == nil {
		if _, err := persistFinalizer(ctx, writes, m3m, infrav1.Metal3MachineFinalizer, true, r.intendHost(ctx, scope)); err != nil {
			return ctrl.Result{}, err
		}
	}

	before := m3m.DeepCopy()
	// Not paused: the condition rides in this reconcile's patch rather than
	// costing a write (and a reconcile) of its own, as
	// paused.EnsurePausedCondition would.
	setCondition(m3m, clusterv1.PausedCondition, metav1.ConditionFalse, clusterv1.NotPausedReason, "")
	defer func() {
		// The reconcile's own context may be out of time: the status
		// is written all the same.
		ctx, cancel := patchContext(ctx)
		defer cancel()
		if err := setMachineReady(m3m); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
		stampLastUpdated(&before.Status, &m3m.Status, &m3m.Status.LastUpdated)
		setBlockMove(m3m, machineInFlight(m3m))
		if err := ignoreGone(patchMetal3Machine(ctx, writes, before, m3m)); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
			return
		}
	}()

	if err := r.reportIdentity(ctx, m3m, scope.id, scope.access, scope.identityErr); err != nil {
		return ctrl.Result{}, err
	}
	if scope.identityErr != nil {
		// Without its identity the machine can neither provision nor release
		// its host: it keeps its finalizer and retries with backoff.
		return r.identityRetry(scope.id, scope.identityErr), nil
	}
	if !m3m.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, scope)
	}
	return r.reconcileNormal(ctx, scope)
}

// newMachineScope builds the reconcile's scope, once: the machine's
// identity resolved and opened (its host events watched from then on), and
// its binding, which pausing uses as much as provisioning. An identity that
// cannot be used is no error here: the scope records it (identityErr) and
// has no access nor binding.
func (r *Metal3MachineReconciler) newMachineScope(ctx context.Context, cluster *clusterv1.Cluster, machine *clusterv1.Machine,
	m3m *infrav1.Metal3Machine,
) (*machineScope, error) {
	s := &machineScope{
		cluster: cluster, machine: machine, m3m: m3m,
		data: &datatemplate.MachineManager{Client: r.Client, Cluster: cluster, M3Machine: m3m},
		// Read on first need (the identity, or the Node's settings), once.
		metal3Cluster: sync.OnceValues(func() (*infrav1.Metal3Cluster, error) {
			return identity.Metal3ClusterOf(ctx, r.Client, cluster)
		}),
	}
	s.id, s.identityErr = machineIdentity(ctx, r.Client, m3m, cluster, s.metal3Cluster)
	if s.identityErr == nil {
		// A Metal3ClusterIdentity that does not admit the machine's
		// namespace gives no access: the machine, and its host, are left
		// as they are until it does.
		s.id, s.access, s.identityErr = hostaccess.Open(ctx, r.Identities, s.id)
	}
	if s.identityErr == nil {
		if err := r.bind(ctx, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// bind gives a scope whose identity is usable its binding, and has the
// identity's host events reach their machines from now on.
func (r *Metal3MachineReconciler) bind(ctx context.Context, s *machineScope) error {
	if err := r.Identities.Watch(ctx, s.id.Key, r.hostWatcher(s.id)); err != nil {
		return err
	}
	reuse, err := r.nodeReuse(ctx, s.cluster, s.machine, s.m3m)
	if err != nil {
		return err
	}
	s.binding = hostbinding.For(s.id.Mode, hostbinding.Options{
		Client: r.Client, Access: s.access, Cluster: s.cluster, Machine: s.machine, M3Machine: s.m3m, Recorder: r.Recorder,
		InFlight: &r.claimsInFlight, Reuse: reuse, FastTrack: r.FastTrack,
	})
	return nil
}

// machineScope is one reconcile of a Metal3Machine: the machine, its
// cluster and Metal3Cluster, its identity, the host access of that
// identity and the binding to its host (both nil while the identity cannot
// be used), and its data.
type machineScope struct {
	cluster *clusterv1.Cluster
	// metal3Cluster returns the Cluster's Metal3Cluster (nil when its
	// infrastructure is another kind), read once per reconcile.
	metal3Cluster func() (*infrav1.Metal3Cluster, error)
	machine       *clusterv1.Machine
	m3m           *infrav1.Metal3Machine
	id            identity.Identity
	// identityErr says why the identity cannot be used; access and
	// binding are nil then.
	identityErr error
	access      hostaccess.HostAccess
	binding     hostbinding.Binding
	data        *datatemplate.MachineManager
}
