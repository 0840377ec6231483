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

package datatemplate

import (
	"context"
	"testing"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Upstream CAPM3 put finalizers of its own on the Metal3DataClaims its
// Metal3Machine controller made and on the IP claims its Metal3Data
// controller made, and removed them itself. Once this provider replaced it,
// nothing else would: scaling down or deleting a machine upstream
// provisioned would hang on its claim for good.
func TestUpstreamFinalizersOnClaimsAreLifted(t *testing.T) {
	ctx := context.Background()
	scheme := dataScheme(t)
	for _, add := range []func(*runtime.Scheme) error{ipamv1.AddToScheme, capipamv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	m3m := &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "worker-0", UID: "m3m-uid"}}
	dataClaim := &infrav1.Metal3DataClaim{ObjectMeta: metav1.ObjectMeta{
		Namespace: "tenant-a", Name: "worker-0",
		Finalizers: []string{infrav1.Metal3MachineFinalizer},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: infrav1.GroupVersion.String(), Kind: "Metal3Machine", Name: "worker-0", UID: "m3m-uid", Controller: ptr.To(true),
		}},
	}}
	data := &infrav1.Metal3Data{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "nodes-0", UID: "data-uid"}}
	ipClaim := &ipamv1.IPClaim{ObjectMeta: metav1.ObjectMeta{
		Namespace: "tenant-a", Name: "nodes-0-pool",
		Finalizers:      []string{infrav1.DataFinalizer},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: infrav1.GroupVersion.String(), Kind: "Metal3Data", Name: "nodes-0", UID: "data-uid"}},
	}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(dataClaim, ipClaim).Build()

	machines := &MachineManager{Client: c, M3Machine: m3m}
	for range 2 {
		if _, err := machines.ReleaseDataClaim(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(dataClaim), &infrav1.Metal3DataClaim{}); err == nil {
		t.Fatal("the Metal3DataClaim with upstream's finalizer is still there")
	}
	if done, err := machines.ReleaseDataClaim(ctx); err != nil || !done {
		t.Fatalf("ReleaseDataClaim = %v, %v; want done", done, err)
	}

	addresses := &DataManager{Client: c, Data: data}
	for range 2 {
		if _, err := addresses.ReleaseAddresses(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if done, err := addresses.ReleaseAddresses(ctx); err != nil || !done {
		t.Fatalf("ReleaseAddresses = %v, %v; want done: the IP claim with upstream's finalizer is still there", done, err)
	}
}
