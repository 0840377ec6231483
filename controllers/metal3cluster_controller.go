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

// Package controllers has one reconciler per kind. Each fetches its object,
// handles pause and finalizers, calls into baremetal/ and patches status once.
package controllers

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/metal3cluster"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/workload"
)

// machinesGoneRequeue is how often a deleting Metal3Cluster checks whether
// its machines are gone (their deletion also triggers a reconcile).
const machinesGoneRequeue = 10 * time.Second

// Metal3ClusterReconciler reconciles Metal3Clusters.
type Metal3ClusterReconciler struct {
	Client     client.Client
	Identities hostaccess.Cache
	// WorkloadClusters, when set, tells what its machines found of the
	// workload cluster's kubeconfig (WorkloadClusterReachable).
	WorkloadClusters *workload.Clusters
	// Recorder emits Events on transitions of the cluster's identity and
	// of its workload cluster's access (as its machines found it), and
	// when conditions another provider left are dropped; nil emits none.
	Recorder         events.EventRecorder
	WatchFilterValue string
}

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3clusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3clusters/status;metal3clusters/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller.
func (r *Metal3ClusterReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	log := ctrl.LoggerFrom(ctx)
	b := controllerFor(mgr, &infrav1.Metal3Cluster{}, options, log, r.WatchFilterValue).
		Watches(&clusterv1.Cluster{},
			handler.EnqueueRequestsFromMapFunc(util.ClusterToInfrastructureMapFunc(ctx,
				infrav1.GroupVersion.WithKind("Metal3Cluster"), mgr.GetClient(), &infrav1.Metal3Cluster{})),
			// Pause and unpause are what this controller must see of its Cluster.
			builder.WithPredicates(predicates.ClusterPausedTransitions(mgr.GetScheme(), log)),
		).
		// A deleting cluster waits for its machines to be gone.
		Watches(&infrav1.Metal3Machine{}, handler.EnqueueRequestsFromMapFunc(r.metal3MachineToCluster),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				UpdateFunc:  func(event.UpdateEvent) bool { return false },
				DeleteFunc:  func(event.DeleteEvent) bool { return true },
				GenericFunc: func(event.GenericEvent) bool { return false },
			})).
		// Its identity's Secret changing, connecting or disconnecting.
		WatchesRawSource(r.Identities.Source("metal3cluster", r.secretToClusters))
	if r.WorkloadClusters != nil {
		// Its workload cluster reached, or refused, by its machines.
		b = b.WatchesRawSource(r.WorkloadClusters.Source(r.workloadClusterToCluster))
	}
	// Its Metal3ClusterIdentity, or its namespace's labels, changing
	// whether it may use that identity.
	for _, src := range clusterIdentitySources(mgr, r.clusterIdentityToClusters) {
		b = b.WatchesRawSource(src)
	}
	return b.Complete(r)
}

// metal3ClusterConditions are the conditions of a Metal3Cluster, all the
// provider's.
var metal3ClusterConditions = []string{
	clusterv1.PausedCondition, infrav1.ReadyCondition, infrav1.IdentityReadyCondition, infrav1.WorkloadClusterReachableCondition,
}

// Reconcile brings one Metal3Cluster to its desired state.
func (r *Metal3ClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	m3c := &infrav1.Metal3Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, m3c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// CAPI contract: externally managed infrastructure is not ours to touch.
	if annotations.IsExternallyManaged(m3c) {
		return ctrl.Result{}, nil
	}
	if err := dropForeignConditions(ctx, r.Client, r.Recorder, m3c, metal3ClusterConditions); err != nil {
		return ctrl.Result{}, err
	}
	cluster, err := util.GetOwnerCluster(ctx, r.Client, m3c.ObjectMeta)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("get owner Cluster of Metal3Cluster %s: %w", req.NamespacedName, err)
	}
	if cluster == nil {
		ctrl.LoggerFrom(ctx).Info("Waiting for the Cluster controller to set the owner reference")
		return ctrl.Result{}, nil
	}
	if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, m3c); err != nil || isPaused || requeue {
		return ctrl.Result{}, err
	}
	// Persist the finalizer before protecting anything, so a deletion
	// always runs reconcileDelete.
	if added, err := persistFinalizer(ctx, r.Client, m3c, infrav1.Metal3ClusterFinalizer, false); err != nil || added {
		return ctrl.Result{}, err
	}

	patchHelper, err := patch.NewHelper(m3c, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	statusBefore := m3c.Status.DeepCopy()
	defer func() {
		// The reconcile's own context may be out of time: the status
		// is written all the same.
		ctx, cancel := patchContext(ctx)
		defer cancel()
		stampLastUpdated(statusBefore, &m3c.Status, &m3c.Status.LastUpdated)
		if err := patchUnlessGone(ctx, patchHelper, m3c, patch.WithOwnedConditions{Conditions: metal3ClusterConditions},
			patch.WithStatusObservedGeneration{}); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	if !m3c.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, cluster, m3c)
	}
	r.reportWorkload(ctx, cluster, m3c)
	return r.reconcileNormal(ctx, m3c)
}

// reportWorkload shows on the Metal3Cluster what its machines last found of
// the workload cluster's kubeconfig (they connect when they need Nodes; the
// cluster never does), with an Event when it changes.
func (r *Metal3ClusterReconciler) reportWorkload(ctx context.Context, cluster *clusterv1.Cluster, m3c *infrav1.Metal3Cluster) {
	if r.WorkloadClusters == nil {
		return
	}
	we, known := r.WorkloadClusters.State(client.ObjectKeyFromObject(cluster))
	if !known {
		return
	}
	cond := workloadCondition(we)
	cond.ObservedGeneration = m3c.Generation
	recordWorkloadTransition(ctx, r.Recorder, m3c, conditions.Get(m3c, infrav1.WorkloadClusterReachableCondition), cond)
	conditions.Set(m3c, cond)
}

func (r *Metal3ClusterReconciler) reconcileNormal(ctx context.Context, m3c *infrav1.Metal3Cluster) (ctrl.Result, error) {
	if err := r.protectIdentitySecret(ctx, m3c); err != nil {
		return ctrl.Result{}, err
	}

	id, access, identityErr := hostaccess.Open(ctx, r.Identities, identity.OfCluster(m3c))
	// Unless a cluster identity could not even be read, the cluster records
	// the identity it uses now, and lets go of the one it used before.
	if _, verdict := identity.AsError(identityErr); identityErr == nil || verdict || id.Key.Resolved() {
		if err := r.releasePreviousIdentity(ctx, m3c, id); err != nil {
			return ctrl.Result{}, err
		}
		m3c.Status.Identity = identity.Status(id, hostaccess.NamespaceOf(access))
	}
	identityCondition := identity.Condition(id, hostaccess.NamespaceOf(access), identityErr)
	identityCondition.ObservedGeneration = m3c.Generation
	recordIdentityTransition(ctx, r.Recorder, m3c, conditions.Get(m3c, infrav1.IdentityReadyCondition), identityCondition)
	conditions.Set(m3c, identityCondition)
	m3c.Status.FailureDomains = metal3cluster.ClusterFailureDomains(m3c)

	endpointErr := metal3cluster.ValidateControlPlaneEndpoint(m3c)
	ready := metav1.Condition{Type: infrav1.ReadyCondition, ObservedGeneration: m3c.Generation}
	switch {
	case endpointErr != nil:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, infrav1.NotReadyReason, endpointErr.Error()
	case identityErr != nil:
		ready.Status, ready.Reason = metav1.ConditionFalse, infrav1.IdentityNotReadyReason
		ready.Message = "Identity is not usable: " + identityCondition.Message
	default:
		ready.Status, ready.Reason = metav1.ConditionTrue, infrav1.ReadyReason
		// Provisioned is a one-way flag of the CAPI contract: once the
		// cluster's infrastructure was ready, a later identity outage
		// shows on Ready, not by un-provisioning.
		m3c.Status.Initialization.Provisioned = ptr.To(true)
	}
	conditions.Set(m3c, ready)

	if identityErr != nil {
		if ie, ok := identity.AsError(identityErr); ok && ie.Terminal {
			// Fixed by changing the Secret or identityRef, which triggers a reconcile.
			return ctrl.Result{}, nil
		}
		return ctrl.Result{RequeueAfter: r.Identities.RetryAfter(id.Key)}, nil
	}
	return ctrl.Result{}, nil
}

func (r *Metal3ClusterReconciler) reconcileDelete(ctx context.Context, cluster *clusterv1.Cluster, m3c *infrav1.Metal3Cluster) (ctrl.Result, error) {
	machines := &infrav1.Metal3MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(m3c.Namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list Metal3Machines of cluster %s: %w", cluster.Name, err)
	}
	if len(machines.Items) > 0 {
		conditions.Set(m3c, metav1.Condition{
			Type: infrav1.ReadyCondition, Status: metav1.ConditionFalse, Reason: infrav1.DeletingReason,
			Message: fmt.Sprintf("Waiting for %d Metal3Machines to be deleted", len(machines.Items)),
		})
		return ctrl.Result{RequeueAfter: machinesGoneRequeue}, nil
	}
	if name := secretRefName(m3c.Spec.IdentityRef); name != "" {
		if err := r.identitySecrets().Release(ctx, m3c.Namespace, name, m3c); err != nil {
			return ctrl.Result{}, err
		}
	}
	// The identity the cluster names and the one it last used (an
	// identityRef of kind Metal3ClusterIdentity says nothing of its Secret
	// by itself; the status does): either may have no user left.
	keys := []identity.Key{identity.OfCluster(m3c).Key}
	if recorded, ok := identity.KeyFromStatus(m3c.Status.Identity, m3c.Namespace); ok && recorded != keys[0] {
		keys = append(keys, recorded)
	}
	for _, key := range keys {
		if err := r.Identities.Release(ctx, key, m3c); err != nil {
			return ctrl.Result{}, err
		}
	}
	if r.WorkloadClusters != nil {
		r.WorkloadClusters.Forget(client.ObjectKeyFromObject(cluster))
	}
	controllerutil.RemoveFinalizer(m3c, infrav1.Metal3ClusterFinalizer)
	return ctrl.Result{}, nil
}

// protectIdentitySecret keeps the tenant's identity Secret in use from
// deletion and makes clusterctl move carry it. Only a Secret identityRef's:
// a Metal3ClusterIdentity's Secret is its admin's, in the provider's
// namespace, and neither moves with a cluster nor waits for one.
func (r *Metal3ClusterReconciler) protectIdentitySecret(ctx context.Context, m3c *infrav1.Metal3Cluster) error {
	if name := secretRefName(m3c.Spec.IdentityRef); name != "" {
		return r.identitySecrets().Protect(ctx, m3c.Namespace, name)
	}
	return nil
}

// releasePreviousIdentity lets go of the identity the cluster recorded
// using, if it uses another one now (its identityRef changed, e.g. after a
// pivot, or its Metal3ClusterIdentity no longer admits its namespace or
// names another Secret): the previous one may have no user left. id is
// the identity as resolved now.
func (r *Metal3ClusterReconciler) releasePreviousIdentity(ctx context.Context, m3c *infrav1.Metal3Cluster, id identity.Identity) error {
	previous, recorded := identity.KeyFromStatus(m3c.Status.Identity, m3c.Namespace)
	if !recorded || previous == id.Key {
		return nil
	}
	if err := r.Identities.Release(ctx, previous, m3c); err != nil {
		return err
	}
	if previous.ClusterIdentity == "" && previous.SecretName != "" && previous.SecretName != secretRefName(m3c.Spec.IdentityRef) {
		return r.identitySecrets().Release(ctx, m3c.Namespace, previous.SecretName, m3c)
	}
	return nil
}

// secretRefName is the tenant Secret ref names, "" unless it is of kind
// Secret.
func secretRefName(ref *infrav1.IdentityRef) string {
	if ref == nil || ref.KindOrDefault() != infrav1.IdentityKindSecret {
		return ""
	}
	return ref.Name
}

func (r *Metal3ClusterReconciler) identitySecrets() *identity.Secrets {
	return &identity.Secrets{Client: r.Client, Metadata: r.Identities.SecretMetadata()}
}

// metal3MachineToCluster wakes a deleting Metal3Cluster when one of its machines goes.
func (r *Metal3ClusterReconciler) metal3MachineToCluster(ctx context.Context, obj client.Object) []ctrl.Request {
	clusterName := obj.GetLabels()[clusterv1.ClusterNameLabel]
	if clusterName == "" {
		return nil
	}
	return r.clusterToMetal3Cluster(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: clusterName})
}

// workloadClusterToCluster maps a Cluster whose workload access changed to
// its Metal3Cluster.
func (r *Metal3ClusterReconciler) workloadClusterToCluster(ctx context.Context, obj client.Object) []ctrl.Request {
	return r.clusterToMetal3Cluster(ctx, client.ObjectKeyFromObject(obj))
}

// clusterToMetal3Cluster is the request of the Cluster's Metal3Cluster, if
// its infrastructure is one.
func (r *Metal3ClusterReconciler) clusterToMetal3Cluster(ctx context.Context, key client.ObjectKey) []ctrl.Request {
	cluster := &clusterv1.Cluster{}
	if err := r.Client.Get(ctx, key, cluster); err != nil {
		return nil
	}
	ref := cluster.Spec.InfrastructureRef
	if ref.Kind != "Metal3Cluster" || ref.Name == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: key.Namespace, Name: ref.Name}}}
}

// secretToClusters maps an identity Secret to the Metal3Clusters that use
// it, in every namespace: a Metal3ClusterIdentity's Secret is used from
// other namespaces than its own.
func (r *Metal3ClusterReconciler) secretToClusters(ctx context.Context, secret types.NamespacedName) []ctrl.Request {
	clusters := &infrav1.Metal3ClusterList{}
	if err := r.Client.List(ctx, clusters,
		client.MatchingFields{identity.UsedIndex: identity.UsedSecret(secret)}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List the Metal3Clusters using an identity Secret", "secret", secret)
		return nil
	}
	requests := make([]ctrl.Request, 0, len(clusters.Items))
	for _, c := range clusters.Items {
		requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
	}
	return requests
}

// clusterIdentityToClusters maps a Metal3ClusterIdentity or a namespace to
// the Metal3Clusters using cluster identities that may change their mind.
func (r *Metal3ClusterReconciler) clusterIdentityToClusters(ctx context.Context, value, namespace string) []ctrl.Request {
	return listIdentityUsers(ctx, r.Client, func() client.ObjectList { return &infrav1.Metal3ClusterList{} },
		value, namespace, r.WatchFilterValue)
}
