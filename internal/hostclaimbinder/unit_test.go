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
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
)

func TestIsClaimRef(t *testing.T) {
	for _, tt := range []struct {
		ref  *corev1.ObjectReference
		want bool
	}{
		{nil, false},
		{&corev1.ObjectReference{APIVersion: "metal3.io/v1alpha1", Kind: "HostClaim"}, true},
		{&corev1.ObjectReference{APIVersion: "infrastructure.cluster.x-k8s.io/v1beta1", Kind: "Metal3Machine"}, false},
		{&corev1.ObjectReference{APIVersion: "example.com/v1", Kind: "HostClaim"}, false},
	} {
		if got := isClaimRef(tt.ref); got != tt.want {
			t.Errorf("isClaimRef(%+v) = %v, want %v", tt.ref, got, tt.want)
		}
	}
}

// TestKeptHostGrace: a reservation ends once no claim of its namespace
// carries its key and the grace has passed; not before, and not while a
// claim carries it.
func TestKeptHostGrace(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	grace := 10 * time.Minute
	kept := func(since time.Time) *bmov1alpha1.BareMetalHost {
		return &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{
			Namespace: "pool", Name: "h",
			Annotations: map[string]string{
				hostclaim.KeptForAnnotation:   "team/cluster/md",
				hostclaim.KeptSinceAnnotation: since.Format(time.RFC3339),
			},
		}}
	}
	claimWithKey := &bmov1alpha1.HostClaim{ObjectMeta: metav1.ObjectMeta{
		Namespace: "team", Name: "c", Annotations: map[string]string{hostclaim.NodeReuseKeyAnnotation: "cluster/md"},
	}}
	otherNamespace := claimWithKey.DeepCopy()
	otherNamespace.Namespace = "other"
	tests := []struct {
		name        string
		host        *bmov1alpha1.BareMetalHost
		claims      []client.Object
		wantFreed   bool
		wantRequeue time.Duration
	}{
		{name: "within the grace", host: kept(now.Add(-4 * time.Minute)), wantRequeue: 6 * time.Minute},
		{name: "after the grace", host: kept(now.Add(-11 * time.Minute)), wantFreed: true},
		{name: "a claim carries the key", host: kept(now.Add(-time.Hour)), claims: []client.Object{claimWithKey}, wantRequeue: grace},
		{name: "a claim of another namespace does not count", host: kept(now.Add(-time.Hour)), claims: []client.Object{otherNamespace}, wantFreed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := newScheme()
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(tt.claims, tt.host)...).Build()
			k := &keptHostReconciler{Client: c, Recorder: events.NewFakeRecorder(10), Grace: grace, now: func() time.Time { return now }}
			result, err := k.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tt.host)})
			if err != nil {
				t.Fatal(err)
			}
			if result.RequeueAfter != tt.wantRequeue {
				t.Errorf("requeue after %s, want %s", result.RequeueAfter, tt.wantRequeue)
			}
			got := &bmov1alpha1.BareMetalHost{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(tt.host), got); err != nil {
				t.Fatal(err)
			}
			_, stillKept := got.Annotations[hostclaim.KeptForAnnotation]
			_, since := got.Annotations[hostclaim.KeptSinceAnnotation]
			if stillKept == tt.wantFreed || since == tt.wantFreed {
				t.Errorf("kept-for present %v, kept-since present %v; want freed %v", stillKept, since, tt.wantFreed)
			}
		})
	}
}
