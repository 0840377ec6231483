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
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// TestHostToMetal3Machine: a host event seen through an identity wakes the
// machine its consumerRef names only if that machine records using the
// same identity: never another tenant's machine of the same name.
func TestHostToMetal3Machine(t *testing.T) {
	poolEast := identity.Key{SecretNamespace: "tenant-a", SecretName: "pool-east"}
	machine := func(namespace, name string, status *infrav1.IdentityStatus) client.Object {
		return &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Status: infrav1.Metal3MachineStatus{Identity: status}}
	}
	viaSecret := func(name string) *infrav1.IdentityStatus {
		return &infrav1.IdentityStatus{Source: infrav1.IdentitySourceSecret, SecretName: name}
	}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(
		machine("tenant-a", "worker-0", viaSecret("pool-east")),
		machine("tenant-b", "worker-0", viaSecret("pool-east")), // same names, other tenant
		machine("tenant-a", "worker-1", nil),                    // not reconciled yet
		machine("tenant-a", "local-0", &infrav1.IdentityStatus{Source: infrav1.IdentitySourceInCluster}),
	).Build()
	r := &Metal3MachineReconciler{Client: c}

	tests := []struct {
		name     string
		key      identity.Key
		consumer *corev1.ObjectReference
		want     []types.NamespacedName
	}{
		{name: "its own machine", key: poolEast, consumer: &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: "tenant-a", Name: "worker-0"},
			want: []types.NamespacedName{{Namespace: "tenant-a", Name: "worker-0"}}},
		{name: "a same-named machine of another tenant", key: poolEast, consumer: &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: "tenant-b", Name: "worker-0"}},
		{name: "a machine that recorded no identity yet", key: poolEast, consumer: &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: "tenant-a", Name: "worker-1"}},
		{name: "an in-cluster machine seen through a remote identity", key: poolEast, consumer: &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: "tenant-a", Name: "local-0"}},
		{name: "an in-cluster machine, in-cluster", key: identity.InCluster, consumer: &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: "tenant-a", Name: "local-0"},
			want: []types.NamespacedName{{Namespace: "tenant-a", Name: "local-0"}}},
		{name: "a host nobody consumes", key: poolEast},
		{name: "another kind of consumer", key: poolEast, consumer: &corev1.ObjectReference{Kind: "Machine", Namespace: "tenant-a", Name: "worker-0"}},
		{name: "a machine that does not exist", key: poolEast, consumer: &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: "tenant-a", Name: "gone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := &bmov1alpha1.BareMetalHost{
				ObjectMeta: metav1.ObjectMeta{Namespace: "pool-east", Name: "host-0"},
				Spec:       bmov1alpha1.BareMetalHostSpec{ConsumerRef: tt.consumer},
			}
			var got []types.NamespacedName
			for _, req := range r.hostToMetal3Machine(tt.key)(context.Background(), host) {
				got = append(got, req.NamespacedName)
			}
			if len(got) != len(tt.want) || (len(got) == 1 && got[0] != tt.want[0]) {
				t.Fatalf("requests %v, want %v", got, tt.want)
			}
		})
	}
}
