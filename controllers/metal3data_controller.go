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
	"unicode/utf8"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
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
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/datatemplate"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/internal/readiness"
)

// dataWaitRequeue: a Metal3Data waiting for its host or its addresses looks
// again on its own (host events are routed to Metal3Machines, not to data).
const dataWaitRequeue = 10 * time.Second

// Metal3DataReconciler renders Metal3Data into Secrets next to the host of
// their machine, through the machine's identity.
type Metal3DataReconciler struct {
	Client           client.Client
	Identities       hostaccess.Cache
	WatchFilterValue string
	// HostNameIPClaims names Metal3 IPAM claims after the host
	// ("<host>-<pool>"), so pools can preallocate addresses per host.
	HostNameIPClaims bool
}

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3datas,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3datas/status;metal3datas/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3dataclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3datatemplates,verbs=get;list;watch
// Claims upstream CAPM3 created carry its finalizer, patched off on release.
// +kubebuilder:rbac:groups=ipam.metal3.io,resources=ipclaims,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups=ipam.metal3.io,resources=ipaddresses,verbs=get;list;watch
// +kubebuilder:rbac:groups=ipam.cluster.x-k8s.io,resources=ipaddressclaims,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups=ipam.cluster.x-k8s.io,resources=ipaddresses,verbs=get;list;watch

// SetupWithManager registers the controller. IP claims are watched only for
// the IPAM APIs the management cluster serves.
func (r *Metal3DataReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	log := ctrl.LoggerFrom(ctx)
	clusterToData, err := util.ClusterToTypedObjectsMapper(mgr.GetClient(), &infrav1.Metal3DataList{}, mgr.GetScheme())
	if err != nil {
		return err
	}
	b := controllerFor(mgr, &infrav1.Metal3Data{}, options, log, r.WatchFilterValue).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(clusterToData),
			builder.WithPredicates(predicates.ClusterPausedTransitions(mgr.GetScheme(), log))).
		// A machine's association (its host annotation) and the labels and
		// annotations templates read come with Metal3Machine changes.
		Watches(&infrav1.Metal3Machine{}, handler.EnqueueRequestsFromMapFunc(r.metal3MachineToData),
			builder.WithPredicates(predicate.Or(predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{})))
	for _, claim := range []struct {
		obj client.Object
		gvk schema.GroupVersionKind
	}{
		{&ipamv1.IPClaim{}, ipamv1.GroupVersion.WithKind("IPClaim")},
		{&capipamv1.IPAddressClaim{}, capipamv1.GroupVersion.WithKind("IPAddressClaim")},
	} {
		served, err := servesKind(mgr, claim.gvk)
		if err != nil {
			return err
		}
		if served {
			b = b.Watches(claim.obj, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &infrav1.Metal3Data{}))
		}
	}
	return b.Complete(r)
}

// metal3MachineToData maps a Metal3Machine to the Metal3Data of its claim,
// which is named after the machine.
func (r *Metal3DataReconciler) metal3MachineToData(ctx context.Context, obj client.Object) []ctrl.Request {
	if !hasHost(obj) {
		return nil
	}
	datas := &infrav1.Metal3DataList{}
	if err := r.Client.List(ctx, datas, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{dataClaimIndex: obj.GetName()}); err != nil {
		return nil
	}
	requests := make([]ctrl.Request, 0, len(datas.Items))
	for _, data := range datas.Items {
		requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&data)})
	}
	return requests
}

func servesKind(mgr ctrl.Manager, gvk schema.GroupVersionKind) (bool, error) {
	_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	default:
		return false, fmt.Errorf("look up the %s API: %w", gvk.GroupKind(), err)
	}
}

// dataMachine is what a Metal3Data renders for: its claim and that claim's
// machine, cluster and identity.
type dataMachine struct {
	claim   *infrav1.Metal3DataClaim
	m3m     *infrav1.Metal3Machine
	machine *clusterv1.Machine
	id      identity.Identity
}

// Reconcile renders one Metal3Data, or releases what it holds.
func (r *Metal3DataReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	data := &infrav1.Metal3Data{}
	if err := r.Client.Get(ctx, req.NamespacedName, data); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The data carries its cluster's name label from its claim.
	cluster, err := clusterNamed(ctx, r.Client, data.Namespace, data.Labels[clusterv1.ClusterNameLabel])
	if err != nil {
		return ctrl.Result{}, err
	}
	isPaused, requeue, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, data)
	if err != nil || requeue {
		return ctrl.Result{}, err
	}
	if isPaused {
		// Nothing is claimed or written while paused: clusterctl move may go on.
		return ctrl.Result{}, releaseMoveBlock(ctx, r.Client, data)
	}
	// What the data renders for, found once: a deleting data looks for it
	// only if it wrote Secrets (deletionIdentity).
	var dm *dataMachine
	waiting := ""
	if data.DeletionTimestamp.IsZero() {
		if dm, waiting, err = r.findMachine(ctx, data, cluster); err != nil {
			return ctrl.Result{}, err
		}
	}
	// Nothing is claimed or written before the finalizer and the consumer
	// ID (which names the Secrets next to the host) are persisted; a data
	// still waiting for its machine has neither yet.
	if dm != nil {
		if added, err := persistFinalizer(ctx, r.Client, data, infrav1.DataFinalizer, true); err != nil || added {
			return ctrl.Result{}, err
		}
	}
	patchHelper, err := patch.NewHelper(data, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		// The reconcile's own context may be out of time: the status
		// is written all the same.
		ctx, cancel := patchContext(ctx)
		defer cancel()
		setBlockMove(data, dataInFlight(data))
		if err := readiness.Set(data, readiness.Summary{
			Conditions: []string{infrav1.Metal3DataSecretsRenderedCondition},
			Deleting:   !data.DeletionTimestamp.IsZero(),
		}); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
		if err := patchUnlessGone(ctx, patchHelper, data, patch.WithOwnedConditions{Conditions: []string{
			infrav1.ReadyCondition, infrav1.Metal3DataSecretsRenderedCondition,
		}}, patch.WithStatusObservedGeneration{}); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	if !data.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, data, cluster)
	}
	return r.reconcileNormal(ctx, data, dm, waiting)
}

// reconcileNormal renders the data for dm, or says what it waits for.
func (r *Metal3DataReconciler) reconcileNormal(ctx context.Context, data *infrav1.Metal3Data, dm *dataMachine, waiting string) (ctrl.Result, error) {
	if waiting != "" {
		setCondition(data, infrav1.Metal3DataSecretsRenderedCondition, metav1.ConditionFalse, infrav1.Metal3DataWaitingForHostReason, waiting)
		return ctrl.Result{}, nil
	}
	// The data's progress reaches its claim through the Metal3DataTemplate
	// controller, the one writer of claims' status, which watches it.
	return r.render(ctx, data, dm)
}

// render claims the data's addresses, renders it and writes its Secrets
// next to the machine's host; the SecretsRendered condition says how far
// it got.
func (r *Metal3DataReconciler) render(ctx context.Context, data *infrav1.Metal3Data, dm *dataMachine) (ctrl.Result, error) {
	template := &infrav1.Metal3DataTemplate{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: data.Namespace, Name: data.Spec.Template.Name}, template); err != nil {
		return ctrl.Result{}, fmt.Errorf("get Metal3DataTemplate %s/%s: %w", data.Namespace, data.Spec.Template.Name, err)
	}
	id, access, err := hostaccess.Open(ctx, r.Identities, dm.id)
	if err != nil {
		return r.identityFailure(data, id, err), nil
	}
	// Recorded before any Secret is written: the only way to delete them
	// once the machine is gone.
	if err := identity.RecordOn(data, id, dm.m3m.Name); err != nil {
		return ctrl.Result{}, err
	}
	host, err := hostbinding.Lookup(ctx, dm.id.Mode, access, dm.m3m)
	switch {
	case err != nil && !errors.Is(err, hostbinding.ErrHostNotFound):
		return ctrl.Result{}, err
	case err != nil || host == nil:
		msg := "Waiting for the Metal3Machine to be associated with a host"
		if err != nil {
			msg = err.Error()
		}
		setCondition(data, infrav1.Metal3DataSecretsRenderedCondition, metav1.ConditionFalse, infrav1.Metal3DataWaitingForHostReason, msg)
		return ctrl.Result{RequeueAfter: dataWaitRequeue}, nil
	}

	dataManager := &datatemplate.DataManager{
		Client: r.Client, Access: access, Data: data, Template: template, Claim: dm.claim,
		Metal3Machine: dm.m3m, Machine: dm.machine, Host: host, HostNameIPClaims: r.HostNameIPClaims,
	}
	err = dataManager.Reconcile(ctx)
	if renderErr, ok := datatemplate.AsRenderError(err); ok {
		msg := renderErr.Error()
		data.Status.Ready = ptr.To(false)
		data.Status.ErrorMessage = truncateErrorMessage(msg)
		setCondition(data, infrav1.Metal3DataSecretsRenderedCondition, metav1.ConditionFalse, infrav1.Metal3DataRenderingFailedReason, msg)
		// Retrying does not help until the template or an object it reads
		// changes; a slow requeue catches changes to objects not watched.
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	}
	if errors.Is(err, datatemplate.ErrWaitingForAddress) {
		setCondition(data, infrav1.Metal3DataSecretsRenderedCondition, metav1.ConditionFalse, infrav1.Metal3DataWaitingForIPAddressReason, err.Error())
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	setCondition(data, infrav1.Metal3DataSecretsRenderedCondition, metav1.ConditionTrue, infrav1.Metal3DataSecretsRenderedReason,
		fmt.Sprintf("Secrets written next to host %s/%s", host.Namespace, host.Name))
	return ctrl.Result{}, nil
}

func (r *Metal3DataReconciler) reconcileDelete(ctx context.Context, data *infrav1.Metal3Data, cluster *clusterv1.Cluster) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(data, infrav1.DataFinalizer) {
		return ctrl.Result{}, nil
	}
	manager := &datatemplate.DataManager{Client: r.Client, Data: data}
	if manager.WroteHostSecrets() {
		id, gone, err := r.deletionIdentity(ctx, data, cluster)
		if err != nil {
			return ctrl.Result{}, err
		}
		// A Metal3ClusterIdentity, recorded or the machine's, is resolved
		// again, and its admission of the data's namespace checked, like
		// for any other use: a namespace it no longer admits keeps its
		// data, and their Secrets next to the hosts, until it is admitted
		// again (or the pool's admin removes them). Deleting them anyway
		// would need a use of the identity that skips admission, and the
		// record it would rest on is an annotation the tenant can edit: it
		// could name any identity, and so reach any pool. It also keeps the
		// promise of revocation that nothing next to the namespace's hosts
		// changes, the Secrets of a machine still running on one included.
		id, access, err := hostaccess.Open(ctx, r.Identities, id)
		if err != nil {
			// The Secrets next to the host can only be deleted through the
			// identity: the finalizer stays until it is reachable.
			return r.identityFailure(data, id, err), nil
		}
		manager.Access = access
		if err := manager.DeleteHostSecrets(ctx); err != nil {
			return ctrl.Result{}, err
		}
		if gone {
			if err := r.Identities.Release(ctx, id.Key, data); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	released, err := manager.ReleaseAddresses(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !released {
		setCondition(data, infrav1.Metal3DataSecretsRenderedCondition, metav1.ConditionFalse, infrav1.DeletingReason,
			"Waiting for the IP address claims to be deleted")
		return ctrl.Result{RequeueAfter: dataGoneRequeue}, nil
	}
	controllerutil.RemoveFinalizer(data, infrav1.DataFinalizer)
	return ctrl.Result{}, nil
}

// deletionIdentity is the identity the Secrets were written through: the
// machine's when it still exists, else the one recorded on the data. gone
// says the machine is gone, so its use of the identity ends here.
func (r *Metal3DataReconciler) deletionIdentity(ctx context.Context, data *infrav1.Metal3Data, cluster *clusterv1.Cluster) (identity.Identity, bool, error) {
	dm, waiting, err := r.findMachine(ctx, data, cluster)
	if err == nil && waiting == "" {
		return dm.id, false, nil
	}
	rec, ok := identity.RecordedOn(data)
	if !ok {
		return identity.Identity{}, false, fmt.Errorf("the Metal3Machine of Metal3Data %s/%s is gone and the identity its Secrets were written through is not recorded (%s annotation)",
			data.Namespace, data.Name, infrav1.DataIdentityAnnotation)
	}
	return rec.Identity(), true, nil
}

// findMachine follows the data's claim to its Metal3Machine, Machine and
// Cluster and resolves the machine's identity. waiting, when not empty,
// says which link is missing yet. cluster is the Cluster the reconcile
// read for the data's pause (nil: none), not read again if it is the
// machine's.
func (r *Metal3DataReconciler) findMachine(ctx context.Context, data *infrav1.Metal3Data, cluster *clusterv1.Cluster) (*dataMachine, string, error) {
	claim := &infrav1.Metal3DataClaim{}
	key := types.NamespacedName{Namespace: data.Namespace, Name: data.Spec.Claim.Name}
	if err := r.Client.Get(ctx, key, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("Metal3DataClaim %s not found", key), nil
		}
		return nil, "", fmt.Errorf("get Metal3DataClaim %s: %w", key, err)
	}
	m3mName := ""
	for _, ref := range claim.OwnerReferences {
		if ref.Kind == "Metal3Machine" {
			m3mName = ref.Name
		}
	}
	if m3mName == "" {
		return nil, fmt.Sprintf("Metal3DataClaim %s has no owner Metal3Machine", key), nil
	}
	m3m := &infrav1.Metal3Machine{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: data.Namespace, Name: m3mName}, m3m); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("Metal3Machine %s/%s not found", data.Namespace, m3mName), nil
		}
		return nil, "", fmt.Errorf("get Metal3Machine %s/%s: %w", data.Namespace, m3mName, err)
	}
	machine, err := util.GetOwnerMachine(ctx, r.Client, m3m.ObjectMeta)
	if err != nil {
		return nil, "", fmt.Errorf("get owner Machine of Metal3Machine %s/%s: %w", m3m.Namespace, m3m.Name, err)
	}
	if machine == nil {
		return nil, fmt.Sprintf("Metal3Machine %s/%s has no owner Machine yet", m3m.Namespace, m3m.Name), nil
	}
	if cluster == nil || cluster.Name != machine.Labels[clusterv1.ClusterNameLabel] {
		if cluster, err = util.GetClusterFromMetadata(ctx, r.Client, machine.ObjectMeta); err != nil {
			return nil, fmt.Sprintf("Waiting for the Cluster of Machine %s/%s: %v", machine.Namespace, machine.Name, err), nil
		}
	}
	id, err := machineIdentity(ctx, r.Client, m3m, cluster, nil)
	if err != nil {
		return nil, fmt.Sprintf("Resolving the identity of Metal3Machine %s/%s: %v", m3m.Namespace, m3m.Name, err), nil
	}
	return &dataMachine{claim: claim, m3m: m3m, machine: machine, id: id}, "", nil
}

// identityFailure reports an unusable identity and when to try again.
func (r *Metal3DataReconciler) identityFailure(data *infrav1.Metal3Data, id identity.Identity, err error) ctrl.Result {
	reason := infrav1.IdentityUnreachableReason
	if ie, ok := identity.AsError(err); ok {
		reason = ie.Reason
	}
	setCondition(data, infrav1.Metal3DataSecretsRenderedCondition, metav1.ConditionFalse, reason, err.Error())
	return ctrl.Result{RequeueAfter: r.Identities.RetryAfter(id.Key)}
}

// maxErrorMessageLength is the longest status.errorMessage the CRD accepts.
const maxErrorMessageLength = 512

// truncateErrorMessage fits msg into status.errorMessage, marking a cut.
func truncateErrorMessage(msg string) string {
	if len(msg) <= maxErrorMessageLength {
		return msg
	}
	const ellipsis = "…"
	cut := maxErrorMessageLength - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + ellipsis
}
