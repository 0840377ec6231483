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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// claimsForHost maps a host to the claims its change concerns: the claim
// it is bound to; and, when it is free and available (just registered,
// released, its reservation ended), every unbound claim, since any of them
// may be waiting for it.
func (r *Reconciler) claimsForHost(ctx context.Context, o client.Object) []reconcile.Request {
	host, ok := o.(*bmov1alpha1.BareMetalHost)
	if !ok {
		return nil
	}
	if ref := host.Spec.ConsumerRef; isClaimRef(ref) {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}}}
	}
	if host.Spec.ConsumerRef != nil || pool.Unavailability(host) != "" {
		return nil
	}
	return r.unboundClaims(ctx, o)
}

// unboundClaims are every claim without a host: a change of policy or a
// free host may give them one.
func (r *Reconciler) unboundClaims(ctx context.Context, _ client.Object) []reconcile.Request {
	claims := &bmov1alpha1.HostClaimList{}
	if err := r.Client.List(ctx, claims); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list HostClaims")
		return nil
	}
	var requests []reconcile.Request
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.Status.BareMetalHost == nil && c.DeletionTimestamp.IsZero() {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return requests
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
