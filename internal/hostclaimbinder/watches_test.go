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
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestHostEvents pins which claims a host event wakes. The case it stands
// for: in a pool of thousands, every binding (a free host taken) used to
// wake every waiting claim, each waking listing every claim, so that
// binding 5,000 claims took minutes of the binder's CPU for nothing.
func TestHostEvents(t *testing.T) {
	claim := func(name string, host bool, deleting bool) *bmov1alpha1.HostClaim {
		c := &bmov1alpha1.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name}}
		if host {
			c.Status.BareMetalHost = &bmov1alpha1.ObjectReference{Namespace: "pool", Name: "h-" + name}
		}
		if deleting {
			c.Finalizers = []string{bmov1alpha1.HostClaimFinalizer}
			c.DeletionTimestamp = &metav1.Time{Time: metav1.Now().Time}
		}
		return c
	}
	host := func(state bmov1alpha1.ProvisioningState, boundTo string) *bmov1alpha1.BareMetalHost {
		h := &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "pool", Name: "h"}}
		h.Status.Provisioning.State = state
		h.Status.OperationalStatus = bmov1alpha1.OperationalStatusOK
		if boundTo != "" {
			h.Spec.ConsumerRef = &corev1.ObjectReference{
				APIVersion: bmov1alpha1.GroupVersion.String(), Kind: "HostClaim", Namespace: "tenant", Name: boundTo,
			}
		}
		return h
	}
	free := host(bmov1alpha1.StateAvailable, "")
	key := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "tenant", Name: name}}
	}

	// waiting is unbound; bound has a host; leaving is unbound and deleted.
	c := fake.NewClientBuilder().WithScheme(newScheme()).
		WithObjects(claim("waiting", false, false), claim("bound", true, false), claim("leaving", false, true)).
		WithIndex(&bmov1alpha1.HostClaim{}, claimUnboundIndex, unbound).
		Build()
	r := &Reconciler{Client: c}

	for _, tc := range []struct {
		name  string
		event func(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request])
		want  []reconcile.Request
	}{
		{"a free host taken wakes only its claim", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.hostEvents().Update(ctx, event.UpdateEvent{ObjectOld: free, ObjectNew: host(bmov1alpha1.StateAvailable, "taker")}, q)
		}, []reconcile.Request{key("taker")}},
		{"a host released wakes its claim and the waiting ones", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.hostEvents().Update(ctx, event.UpdateEvent{ObjectOld: host(bmov1alpha1.StateDeprovisioning, "gone"), ObjectNew: free}, q)
		}, []reconcile.Request{key("gone"), key("waiting")}},
		{"a host moved between claims wakes both", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.hostEvents().Update(ctx, event.UpdateEvent{ObjectOld: host(bmov1alpha1.StateAvailable, "before"), ObjectNew: host(bmov1alpha1.StateAvailable, "after")}, q)
		}, []reconcile.Request{key("before"), key("after")}},
		{"a free host still registering wakes none", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.hostEvents().Update(ctx, event.UpdateEvent{ObjectOld: host(bmov1alpha1.StateNone, ""), ObjectNew: host(bmov1alpha1.StateRegistering, "")}, q)
		}, nil},
		{"a free host created wakes the waiting claims", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.hostEvents().Create(ctx, event.CreateEvent{Object: free}, q)
		}, []reconcile.Request{key("waiting")}},
		{"a bound host deleted wakes its claim", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.hostEvents().Delete(ctx, event.DeleteEvent{Object: host(bmov1alpha1.StateProvisioned, "owner")}, q)
		}, []reconcile.Request{key("owner")}},
		{"a free host deleted wakes none", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.hostEvents().Delete(ctx, event.DeleteEvent{Object: free}, q)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			tc.event(context.Background(), q)
			var got []reconcile.Request
			for q.Len() > 0 {
				req, _ := q.Get()
				got = append(got, req)
				q.Done(req)
			}
			g.Expect(got).To(ConsistOf(tc.want))
		})
	}
}
