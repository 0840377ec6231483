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
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// TestPatchUnlessGone runs the deferred patch every controller makes, with
// Cluster API's patch helper against an API server: an object deleted
// since it was read makes the helper fail with an aggregate of NotFound
// errors (one per request: conditions, metadata, status), which
// apierrors.IsNotFound does not recognise and patchUnlessGone drops; the
// API server refusing the patch is still an error.
func TestPatchUnlessGone(t *testing.T) {
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	ns := testNamespace(t, "patch")
	mgmt.GrantInNamespace(t, ns, "nobody") // creates the namespace

	tests := []struct {
		name string
		// deleted: the object is deleted between read and patch.
		deleted bool
		// change is what the reconcile did to the object.
		change  func(*infrav1.Metal3Cluster)
		wantErr bool
	}{
		{name: "deleted: conditions, metadata and status", deleted: true, change: func(m3c *infrav1.Metal3Cluster) {
			setCondition(m3c, infrav1.ReadyCondition, metav1.ConditionTrue, infrav1.ReadyReason, "")
			m3c.Annotations = map[string]string{"example.com/seen": "true"}
			m3c.Status.FailureDomains = []clusterv1.FailureDomain{{Name: "rack-1"}}
		}},
		{name: "deleted: status only", deleted: true, change: func(m3c *infrav1.Metal3Cluster) {
			m3c.Status.FailureDomains = []clusterv1.FailureDomain{{Name: "rack-1"}}
		}},
		{name: "deleted: metadata only", deleted: true, change: func(m3c *infrav1.Metal3Cluster) {
			m3c.Annotations = map[string]string{"example.com/seen": "true"}
		}},
		{name: "there: a valid change", change: func(m3c *infrav1.Metal3Cluster) {
			setCondition(m3c, infrav1.ReadyCondition, metav1.ConditionTrue, infrav1.ReadyReason, "")
		}},
		// A condition without a reason is refused by the CRD's schema.
		{name: "there: the API server refuses the patch", wantErr: true, change: func(m3c *infrav1.Metal3Cluster) {
			setCondition(m3c, infrav1.ReadyCondition, metav1.ConditionTrue, "", "")
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m3c := &infrav1.Metal3Cluster{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cluster-%d", i)},
				Spec:       infrav1.Metal3ClusterSpec{ControlPlaneEndpoint: infrav1.APIEndpoint{Host: "192.168.111.249", Port: 6443}},
			}
			if err := mgmt.Client.Create(ctx, m3c); err != nil {
				t.Fatal(err)
			}
			// Two helpers of the object as read: one shows the patch
			// helper's own error, the other goes through patchUnlessGone.
			helpers := make([]*patch.Helper, 2)
			for i := range helpers {
				helper, err := patch.NewHelper(m3c, mgmt.Client)
				if err != nil {
					t.Fatal(err)
				}
				helpers[i] = helper
			}
			if tt.deleted {
				if err := mgmt.Client.Delete(ctx, m3c.DeepCopy()); err != nil {
					t.Fatal(err)
				}
			}
			tt.change(m3c)
			opts := []patch.Option{patch.WithOwnedConditions{Conditions: metal3ClusterConditions}, patch.WithStatusObservedGeneration{}}

			raw := helpers[0].Patch(ctx, m3c.DeepCopy(), opts...)
			var agg kerrors.Aggregate
			switch {
			case tt.deleted && (raw == nil || !errors.As(raw, &agg)):
				t.Fatalf("the patch helper's error for a deleted object = %v, want an aggregate", raw)
			case tt.deleted && apierrors.IsNotFound(raw):
				t.Errorf("apierrors.IsNotFound sees through the patch helper's aggregate now (%v): patchUnlessGone could be simpler", raw)
			case !tt.deleted && (raw != nil) != tt.wantErr:
				t.Fatalf("the patch helper's error = %v, want error %t", raw, tt.wantErr)
			}
			if err := patchUnlessGone(ctx, helpers[1], m3c, opts...); (err != nil) != tt.wantErr {
				t.Fatalf("patchUnlessGone = %v, want error %t", err, tt.wantErr)
			}
		})
	}
}

// TestPatchMetal3MachineObservesItsOwnSpecWrite: a reconcile that writes the
// machine's spec (the providerID, once its host is provisioned) stamps the
// status it writes next with the generation that spec write made, so the
// next reconcile, which finds nothing new, writes nothing; a spec change
// someone else made meanwhile leaves the status at the generation read,
// which has not seen it.
func TestPatchMetal3MachineObservesItsOwnSpecWrite(t *testing.T) {
	ctx := context.Background()
	mgmt := managementCluster(t, testScheme(t), withHosts)
	ns := testNamespace(t, "machine-patch")
	mgmt.GrantInNamespace(t, ns, "nobody") // creates the namespace

	tests := []struct {
		name string
		// meanwhile is someone else's spec change between read and patch.
		meanwhile      func(*infrav1.Metal3Machine)
		wantObserved   int64
		wantQuietAfter bool
	}{
		{name: "its own spec write only", wantObserved: 2, wantQuietAfter: true},
		{name: "someone else's spec change meanwhile", wantObserved: 1, meanwhile: func(m3m *infrav1.Metal3Machine) {
			m3m.Spec.Image.URL = "http://172.22.0.1/images/other.qcow2"
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m3m := &infrav1.Metal3Machine{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("machine-%d", i)},
				Spec:       infrav1.Metal3MachineSpec{Image: infrav1.Image{URL: "http://172.22.0.1/images/node.qcow2", Checksum: ptr.To("abc")}},
			}
			if err := mgmt.Client.Create(ctx, m3m); err != nil {
				t.Fatal(err)
			}
			if tt.meanwhile != nil {
				other := m3m.DeepCopy()
				tt.meanwhile(other)
				if err := mgmt.Client.Update(ctx, other); err != nil {
					t.Fatal(err)
				}
			}
			// The reconcile: the host is provisioned.
			before := m3m.DeepCopy()
			m3m.Spec.ProviderID = "metal3://pool/host-0/" + m3m.Name
			setCondition(m3m, infrav1.HostProvisionedCondition, metav1.ConditionTrue, infrav1.ProvisionedReason, "")
			if err := patchMetal3Machine(ctx, mgmt.Client, before, m3m); err != nil {
				t.Fatal(err)
			}
			stored := &infrav1.Metal3Machine{}
			if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3m), stored); err != nil {
				t.Fatal(err)
			}
			cond := conditions.Get(stored, infrav1.HostProvisionedCondition)
			if stored.Status.ObservedGeneration != tt.wantObserved || cond == nil || cond.ObservedGeneration != tt.wantObserved {
				t.Fatalf("generation %d: status observed %d, its condition %v; want %d",
					stored.Generation, stored.Status.ObservedGeneration, cond, tt.wantObserved)
			}
			if !tt.wantQuietAfter {
				return
			}
			// The next reconcile finds the same: nothing to write.
			next := stored.DeepCopy()
			setCondition(next, infrav1.HostProvisionedCondition, metav1.ConditionTrue, infrav1.ProvisionedReason, "")
			if err := patchMetal3Machine(ctx, mgmt.Client, stored.DeepCopy(), next); err != nil {
				t.Fatal(err)
			}
			if next.ResourceVersion != stored.ResourceVersion {
				t.Errorf("the next reconcile wrote the machine again (resourceVersion %s, was %s)", next.ResourceVersion, stored.ResourceVersion)
			}
		})
	}
}
