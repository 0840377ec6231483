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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// TestHostToRemediation: a host event seen through an identity wakes the
// remediation of the machine its consumerRef names, only if that machine
// records using the same identity and is being remediated.
func TestHostToRemediation(t *testing.T) {
	poolEast := identity.Key{SecretNamespace: "tenant-a", SecretName: "pool-east"}
	viaPoolEast := &infrav1.IdentityStatus{Source: infrav1.IdentitySourceSecret, SecretName: "pool-east"}
	m3m := func(namespace, name, machine string, status *infrav1.IdentityStatus) client.Object {
		return &infrav1.Metal3Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: machine, UID: "uid",
			}}},
			Status: infrav1.Metal3MachineStatus{Identity: status},
		}
	}
	remediation := func(namespace, name string) client.Object {
		return &infrav1.Metal3Remediation{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(
		m3m("tenant-a", "worker-0-infra", "worker-0", viaPoolEast), remediation("tenant-a", "worker-0"),
		m3m("tenant-b", "worker-0-infra", "worker-0", viaPoolEast), remediation("tenant-b", "worker-0"), // same names, other tenant
		m3m("tenant-a", "worker-1-infra", "worker-1", viaPoolEast), // healthy: no remediation
	).Build()
	r := &Metal3RemediationReconciler{Client: c}
	consumer := func(namespace, name string) *corev1.ObjectReference {
		return &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: namespace, Name: name}
	}

	tests := []struct {
		name     string
		key      identity.Key
		consumer *corev1.ObjectReference
		want     []types.NamespacedName
	}{
		{name: "the remediation of its machine", key: poolEast, consumer: consumer("tenant-a", "worker-0-infra"),
			want: []types.NamespacedName{{Namespace: "tenant-a", Name: "worker-0"}}},
		{name: "another tenant's, through another identity", key: poolEast, consumer: consumer("tenant-b", "worker-0-infra")},
		{name: "a machine not being remediated", key: poolEast, consumer: consumer("tenant-a", "worker-1-infra")},
		{name: "a host seen through another identity", key: identity.InCluster, consumer: consumer("tenant-a", "worker-0-infra")},
		{name: "a host nobody consumes", key: poolEast},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := &bmov1alpha1.BareMetalHost{
				ObjectMeta: metav1.ObjectMeta{Namespace: "pool-east", Name: "host-0"},
				Spec:       bmov1alpha1.BareMetalHostSpec{ConsumerRef: tt.consumer},
			}
			var got []types.NamespacedName
			for _, req := range r.hostToRemediation(tt.key)(context.Background(), host) {
				got = append(got, req.NamespacedName)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("requests %v, want %v", got, tt.want)
			}
		})
	}
}

// TestIgnoreGone: the patch helper's errors for a remediation already
// gone are dropped; any other error is kept.
func TestIgnoreGone(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "metal3remediations"}, "worker-0")
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "metal3remediations"}, "worker-0", errors.New("changed"))
	// As the patch helper does (with pkg/errors, which unwraps the same way).
	wrap := func(errs ...error) error { return fmt.Errorf("failed to patch: %w", kerrors.NewAggregate(errs)) }
	for _, tt := range []struct {
		err  error
		kept bool
	}{
		{err: nil},
		{err: notFound},
		{err: wrap(notFound, notFound)},
		{err: wrap(notFound, conflict), kept: true},
		{err: conflict, kept: true},
	} {
		if got := ignoreGone(tt.err); (got != nil) != tt.kept {
			t.Errorf("ignoreGone(%v) = %v, want kept %v", tt.err, got, tt.kept)
		}
	}
}
