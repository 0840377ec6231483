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

// Package hostclaimbinder is the pool side of HostClaim mode: a controller,
// run by the pool admin with the Bare Metal Operator's rights, that binds
// each HostClaim to a BareMetalHost of a namespace a HostDeployPolicy opens
// to the claim's namespace, provisions the host as the claim says, and
// reports back what the tenant may know (baremetal/hostclaim is the
// contract). Tenants never see hosts, nor BMC credentials.
package hostclaimbinder

import (
	"context"
	"errors"
	"fmt"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// DefaultNodeReuseGrace is how long a host stays kept for a node reuse key
// no claim carries any more.
const DefaultNodeReuseGrace = 10 * time.Minute

// Options configure the binder.
type Options struct {
	// NodeReuseGrace: see DefaultNodeReuseGrace.
	NodeReuseGrace time.Duration
	// Concurrency is how many claims are reconciled at once.
	Concurrency int
	// Deploy is what claims may ask their hosts to deploy.
	Deploy DeployPolicy
	// MaxUnhealthyHostsPerNamespace bounds the hosts one namespace's
	// claims may have marked unhealthy at a time (unhealthy.go); nil:
	// DefaultMaxUnhealthyHostsPerNamespace, 0: their marks are never
	// carried to hosts.
	MaxUnhealthyHostsPerNamespace *int
}

func (o Options) maxUnhealthy() int {
	if o.MaxUnhealthyHostsPerNamespace == nil {
		return DefaultMaxUnhealthyHostsPerNamespace
	}
	return *o.MaxUnhealthyHostsPerNamespace
}

// Reconciler binds HostClaims to BareMetalHosts.
type Reconciler struct {
	// Client reads from the manager's cache and writes.
	Client client.Client
	// APIReader reads from the API server: Secrets (never cached, they
	// are many and the binder needs few) and hosts whose cached copy may
	// not show a write of this process yet.
	APIReader client.Reader
	// SecretMetadata reads the metadata of Secrets from the manager's
	// cache, which the Secret watch fills (copies.go).
	SecretMetadata client.Reader
	Recorder       events.EventRecorder
	Options        Options

	inFlight pool.Holds[types.NamespacedName]
	states   claimStates
	marks    unhealthyMarks
	copies   copiedVersions
	now      func() time.Time
}

// NewReconciler returns a binder reading and writing through mgr.
func NewReconciler(mgr ctrl.Manager, opts Options) *Reconciler {
	if opts.NodeReuseGrace <= 0 {
		opts.NodeReuseGrace = DefaultNodeReuseGrace
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	return &Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), SecretMetadata: mgr.GetCache(),
		Recorder: mgr.GetEventRecorder("hostclaim-binder"), Options: opts,
		now: time.Now,
	}
}

// Field indexes the watches map through.
const (
	// hostConsumerIndex indexes hosts by the UID of the HostClaim that
	// consumes them, so a claim finds its host without a status.
	hostConsumerIndex = "hostclaimbinder.consumerUID"
	// claimSecretIndex indexes claims by the names of the Secrets of their
	// namespace they reference.
	claimSecretIndex = "hostclaimbinder.secretNames"
	// claimUnboundIndex indexes the claims waiting for a host ("true").
	claimUnboundIndex = "hostclaimbinder.unbound"
)

// SetupWithManager registers the binder's controllers and indexes.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &bmov1alpha1.BareMetalHost{}, hostConsumerIndex, func(o client.Object) []string {
		host, ok := o.(*bmov1alpha1.BareMetalHost)
		if !ok || !isClaimRef(host.Spec.ConsumerRef) {
			return nil
		}
		return []string{string(host.Spec.ConsumerRef.UID)}
	}); err != nil {
		return fmt.Errorf("index hosts by consumer: %w", err)
	}
	if err := indexer.IndexField(ctx, &bmov1alpha1.BareMetalHost{}, hostClaimNameIndex, boundWithoutUID); err != nil {
		return fmt.Errorf("index hosts by the claim they name without its UID: %w", err)
	}
	if err := indexer.IndexField(ctx, &bmov1alpha1.BareMetalHost{}, hostMarkedByIndex, markedBy); err != nil {
		return fmt.Errorf("index hosts by who marked them unhealthy: %w", err)
	}
	if err := indexer.IndexField(ctx, &bmov1alpha1.HostClaim{}, claimSecretIndex, func(o client.Object) []string {
		claim, ok := o.(*bmov1alpha1.HostClaim)
		if !ok {
			return nil
		}
		var names []string
		for _, ref := range secretRefs(claim) {
			if ref.ref != nil && ref.ref.Name != "" {
				names = append(names, ref.ref.Name)
			}
		}
		return names
	}); err != nil {
		return fmt.Errorf("index claims by Secret: %w", err)
	}

	if err := indexer.IndexField(ctx, &bmov1alpha1.HostClaim{}, claimUnboundIndex, unbound); err != nil {
		return fmt.Errorf("index claims waiting for a host: %w", err)
	}

	options := controller.Options{
		MaxConcurrentReconciles: r.Options.Concurrency,
		// controller-runtime v0.24.1's priority queue can deadlock at
		// shutdown.
		UsePriorityQueue: ptr.To(false),
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("hostclaim-binder").
		For(&bmov1alpha1.HostClaim{}).
		Owns(&bmov1alpha1.HardwareData{}).
		Watches(&bmov1alpha1.BareMetalHost{}, r.hostEvents(), builder.WithPredicates(hostChanged())).
		Watches(&bmov1alpha1.HostDeployPolicy{}, handler.EnqueueRequestsFromMapFunc(r.unboundClaims)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.claimsOfNamespace),
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.claimsForSecret)).
		WithOptions(options).
		Complete(r)
	if err != nil {
		return fmt.Errorf("set up the HostClaim controller: %w", err)
	}
	kept := &keptHostReconciler{Client: r.Client, Recorder: r.Recorder, Grace: r.Options.NodeReuseGrace, now: r.now}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("hostclaim-binder-kept-hosts").
		For(&bmov1alpha1.BareMetalHost{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetAnnotations()[keptForAnnotation] != ""
		}))).
		WithOptions(controller.Options{UsePriorityQueue: ptr.To(false)}).
		Complete(kept)
	if err != nil {
		return fmt.Errorf("set up the kept host controller: %w", err)
	}
	return nil
}

// Reconcile binds, syncs or releases one claim.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	claim := &bmov1alpha1.HostClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, claim); err != nil {
		if apierrors.IsNotFound(err) {
			r.states.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get HostClaim %s: %w", req.NamespacedName, err)
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("hostClaim", klog.KObj(claim)))
	other, err := r.boundElsewhere(ctx, claim)
	if err != nil {
		return ctrl.Result{}, err
	}
	if other != nil {
		return ctrl.Result{}, r.leaveToOtherController(ctx, claim, other)
	}
	var result ctrl.Result
	if !claim.DeletionTimestamp.IsZero() {
		err = r.reconcileDelete(ctx, claim)
	} else {
		result, err = r.reconcileNormal(ctx, claim)
	}
	if apierrors.IsConflict(err) {
		// Someone wrote the object first; the next round reads it anew.
		ctrl.LoggerFrom(ctx).V(1).Info("conflict, retrying", "error", err.Error())
		return ctrl.Result{Requeue: true}, nil //nolint:staticcheck // Requeue is what is meant: rate-limited, no fixed delay.
	}
	return result, err
}

// reconcileNormal binds the claim if it is not yet, then brings its host in
// line with it and reports back.
func (r *Reconciler) reconcileNormal(ctx context.Context, claim *bmov1alpha1.HostClaim) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(claim, bmov1alpha1.HostClaimFinalizer) {
		old := claim.DeepCopy()
		controllerutil.AddFinalizer(claim, bmov1alpha1.HostClaimFinalizer)
		if err := r.Client.Patch(ctx, claim, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
	}
	original := claim.DeepCopy()
	// No other controller's binding (any more): the claim is the binder's.
	meta.RemoveStatusCondition(&claim.Status.Conditions, hostclaim.HandledByBinderCondition)
	host, err := r.boundHost(ctx, claim)
	if err != nil {
		return ctrl.Result{}, err
	}
	var result ctrl.Result
	if host == nil {
		if claim.Status.BareMetalHost != nil {
			// The host was deleted (or taken away by hand). The claim
			// is not given another: its tenant built on that host, and
			// deleting the claim is how it asks for a new one.
			r.reportMissingHost(ctx, claim)
		} else if host, result, err = r.bind(ctx, claim); err != nil {
			return ctrl.Result{}, err
		}
	}
	if host != nil {
		r.states.set(claim, stateBound)
		synced, err := r.syncHost(ctx, claim, host)
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := r.syncHardwareData(ctx, claim, synced); err != nil {
			return ctrl.Result{}, err
		}
		r.reportHost(claim, synced)
	}
	if err := r.writeStatus(ctx, original, claim); err != nil {
		return ctrl.Result{}, err
	}
	return result, nil
}

// errLostRace: another claim took the host first.
var errLostRace = errors.New("the host was taken by another claim first")
