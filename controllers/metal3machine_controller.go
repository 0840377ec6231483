package controllers

import (
	"context"
	"fmt"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/remote"
)

// Metal3MachineReconciler reconciles Metal3Machines.
type Metal3MachineReconciler struct {
	Client           client.Client
	Identities       *remote.Cache
	WatchFilterValue string
}

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3machines,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3machines/status;metal3machines/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=metal3.io,resources=baremetalhosts,verbs=get;list;watch;update;patch

// SetupWithManager registers the controller. Host events arrive from the
// remote accessors through the identity cache's source and, when the
// management cluster serves BareMetalHosts itself, from the manager's cache.
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
		Watches(&clusterv1.Cluster{},
			handler.EnqueueRequestsFromMapFunc(clusterToMachines),
			builder.WithPredicates(predicates.ClusterPausedTransitions(mgr.GetScheme(), log))).
		WatchesRawSource(r.Identities.Source("Metal3Machine"))
	served, err := servesBareMetalHosts(mgr)
	if err != nil {
		return err
	}
	if served {
		b = b.Watches(&bmov1alpha1.BareMetalHost{}, r.Identities.InClusterHostHandler())
	} else {
		log.Info("The management cluster has no BareMetalHost CRD: only identities with a kubeconfig can reach hosts")
	}
	return b.Complete(r)
}

// servesBareMetalHosts reports whether the management cluster has the
// BareMetalHost CRD, which a purely multi-tenant management cluster need not.
func servesBareMetalHosts(mgr ctrl.Manager) (bool, error) {
	_, err := mgr.GetRESTMapper().RESTMapping(bmov1alpha1.GroupVersion.WithKind("BareMetalHost").GroupKind(), bmov1alpha1.GroupVersion.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	default:
		return false, fmt.Errorf("look up the BareMetalHost API: %w", err)
	}
}

// Reconcile brings one Metal3Machine to its desired state.
func (r *Metal3MachineReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	m3m := &infrav1.Metal3Machine{}
	if err := r.Client.Get(ctx, req.NamespacedName, m3m); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone: its identity may now be unused.
			m3m.Name, m3m.Namespace = req.Name, req.Namespace
			r.Identities.Release(m3m)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cluster, err := util.GetClusterFromMetadata(ctx, r.Client, m3m.ObjectMeta)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("Waiting for the Metal3Machine's Cluster", "reason", err.Error())
		return ctrl.Result{}, nil
	}
	if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, m3m); err != nil || isPaused || requeue {
		return ctrl.Result{}, err
	}

	patchHelper, err := patch.NewHelper(m3m, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		if err := patchHelper.Patch(ctx, m3m, patch.WithOwnedConditions{Conditions: []string{
			infrav1.IdentityReadyCondition,
		}}); err != nil && !apierrors.IsNotFound(err) {
			reterr = err
		}
	}()

	if !m3m.DeletionTimestamp.IsZero() {
		r.Identities.Release(m3m)
		return ctrl.Result{}, nil
	}
	return r.reconcileIdentity(ctx, m3m)
}

// reconcileIdentity resolves the machine's identity and reports it; the
// IdentityReady condition is the machine's own only when it overrides the
// cluster's identity (otherwise the Metal3Cluster reports it).
func (r *Metal3MachineReconciler) reconcileIdentity(ctx context.Context, m3m *infrav1.Metal3Machine) (ctrl.Result, error) {
	identity, err := remote.ResolveMachineIdentity(ctx, r.Client, m3m)
	if err != nil {
		return ctrl.Result{}, err
	}
	access, identityErr := r.Identities.HostAccess(ctx, m3m, identity)
	m3m.Status.Identity = remote.IdentityStatus(identity, access)
	if m3m.Spec.IdentityRef != nil {
		cond := remote.IdentityCondition(identity, access, identityErr)
		cond.ObservedGeneration = m3m.Generation
		conditions.Set(m3m, cond)
	} else {
		conditions.Delete(m3m, infrav1.IdentityReadyCondition)
	}
	if identityErr != nil {
		if ie, ok := remote.AsIdentityError(identityErr); ok && ie.Terminal {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{RequeueAfter: r.Identities.RetryAfter(identity.Key)}, nil
	}
	return ctrl.Result{}, nil
}
