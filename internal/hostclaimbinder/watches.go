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

package hostclaimbinder

import (
	"context"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// hostEvents maps host events to the claims they concern (claimsForHost),
// judging an update by the host it left, not the one it found: a host that
// was free and is now taken (the binder's own binding, thousands of times
// in a large pool) concerns only the claim that took it, not every claim
// still waiting. A deleted host concerns only the claim it was bound to.
func (r *Reconciler) hostEvents() handler.EventHandler {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], requests []reconcile.Request) {
		for _, req := range requests {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, r.claimsForHost(ctx, e.Object))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, claimOf(e.ObjectOld))
			enqueue(q, r.claimsForHost(ctx, e.ObjectNew))
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, claimOf(e.Object))
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, r.claimsForHost(ctx, e.Object))
		},
	}
}

// claimOf is the claim a host is bound to, if any.
func claimOf(o client.Object) []reconcile.Request {
	host, ok := o.(*bmov1alpha1.BareMetalHost)
	if !ok || !isClaimRef(host.Spec.ConsumerRef) {
		return nil
	}
	ref := host.Spec.ConsumerRef
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}}}
}

// claimsForHost maps a host to the claims it concerns: the claim it is
// bound to; and, when it is free and available (just registered, released,
// its reservation ended), every unbound claim, since any of them may be
// waiting for it.
func (r *Reconciler) claimsForHost(ctx context.Context, o client.Object) []reconcile.Request {
	host, ok := o.(*bmov1alpha1.BareMetalHost)
	if !ok {
		return nil
	}
	if bound := claimOf(host); bound != nil {
		return bound
	}
	if host.Spec.ConsumerRef != nil || pool.Unavailability(host) != "" {
		return nil
	}
	return r.unboundClaims(ctx, o)
}

// unboundClaims are every claim without a host: a change of policy or a
// free host may give them one. They are found through an index, and read
// from the cache without copies, since only their names are needed.
func (r *Reconciler) unboundClaims(ctx context.Context, _ client.Object) []reconcile.Request {
	claims := &bmov1alpha1.HostClaimList{}
	if err := r.Client.List(ctx, claims, client.MatchingFields{claimUnboundIndex: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list HostClaims")
		return nil
	}
	requests := make([]reconcile.Request, 0, len(claims.Items))
	for i := range claims.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&claims.Items[i])})
	}
	return requests
}

// unbound is claimUnboundIndex's value for a claim: "true" for one that
// has no host and is not being deleted.
func unbound(o client.Object) []string {
	claim, ok := o.(*bmov1alpha1.HostClaim)
	if !ok || claim.Status.BareMetalHost != nil || !claim.DeletionTimestamp.IsZero() {
		return nil
	}
	return []string{"true"}
}

// claimsOfNamespace are the claims of a namespace whose labels changed:
// policies admitting by label may now admit it, or not.
func (r *Reconciler) claimsOfNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	claims := &bmov1alpha1.HostClaimList{}
	if err := r.Client.List(ctx, claims, client.InNamespace(o.GetName())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list HostClaims", "namespace", o.GetName())
		return nil
	}
	requests := make([]reconcile.Request, 0, len(claims.Items))
	for i := range claims.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&claims.Items[i])})
	}
	return requests
}

// claimsForSecret maps a Secret to the claims that reference it (the
// tenant changed its data), or to the claim a copy was written for (someone
// changed or deleted the copy).
func (r *Reconciler) claimsForSecret(ctx context.Context, o client.Object) []reconcile.Request {
	if _, isCopy := o.GetLabels()[hostclaim.ClaimUIDLabel]; isCopy {
		if namespace, name, ok := strings.Cut(o.GetAnnotations()[hostclaim.ClaimAnnotation], "/"); ok {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}}
		}
		return nil
	}
	claims := &bmov1alpha1.HostClaimList{}
	if err := r.Client.List(ctx, claims, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{claimSecretIndex: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list HostClaims by Secret", "secret", o.GetNamespace()+"/"+o.GetName())
		return nil
	}
	requests := make([]reconcile.Request, 0, len(claims.Items))
	for i := range claims.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&claims.Items[i])})
	}
	return requests
}

// hostChanged lets through the host changes a claim reports or acts on,
// and not BMO's frequent status refreshes that change none of it.
func hostChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, okOld := e.ObjectOld.(*bmov1alpha1.BareMetalHost)
			cur, okNew := e.ObjectNew.(*bmov1alpha1.BareMetalHost)
			if !okOld || !okNew {
				return true
			}
			return !equality.Semantic.DeepEqual(old.Spec, cur.Spec) ||
				!equality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
				!equality.Semantic.DeepEqual(old.Annotations, cur.Annotations) ||
				!equality.Semantic.DeepEqual(old.DeletionTimestamp, cur.DeletionTimestamp) ||
				old.Status.Provisioning.State != cur.Status.Provisioning.State ||
				old.Status.OperationalStatus != cur.Status.OperationalStatus ||
				old.Status.ErrorMessage != cur.Status.ErrorMessage ||
				old.Status.PoweredOn != cur.Status.PoweredOn ||
				!equality.Semantic.DeepEqual(old.Status.HardwareDetails, cur.Status.HardwareDetails)
		},
	}
}
