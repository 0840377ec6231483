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

package identity

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

func TestResolveMachineIdentity(t *testing.T) {
	scheme := k8sruntime.NewScheme()
	_ = clusterv1.AddToScheme(scheme)
	_ = infrav1.AddToScheme(scheme)

	clusterWithInfra := func(name, apiGroup, kind string) *clusterv1.Cluster {
		return &clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name},
			Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: apiGroup, Kind: kind, Name: name,
			}},
		}
	}
	m3cWithIdentity := &infrav1.Metal3Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "metal3"},
		Spec:       infrav1.Metal3ClusterSpec{IdentityRef: &infrav1.IdentityRef{Name: "pool-east", Context: "east"}},
	}
	m3cInCluster := &infrav1.Metal3Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "incluster"}}
	objects := []client.Object{
		clusterWithInfra("metal3", infrav1.GroupVersion.Group, "Metal3Cluster"), m3cWithIdentity,
		clusterWithInfra("incluster", infrav1.GroupVersion.Group, "Metal3Cluster"), m3cInCluster,
		clusterWithInfra("other", "infrastructure.cluster.x-k8s.io", "DockerCluster"),
		clusterWithInfra("missing-m3c", infrav1.GroupVersion.Group, "Metal3Cluster"),
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()

	machine := func(cluster string, ref *infrav1.IdentityRef) *infrav1.Metal3Machine {
		m := &infrav1.Metal3Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "worker-0"},
			Spec:       infrav1.Metal3MachineSpec{IdentityRef: ref},
		}
		if cluster != "" {
			m.Labels = map[string]string{clusterv1.ClusterNameLabel: cluster}
		}
		return m
	}
	own := &infrav1.IdentityRef{Name: "own-pool"}
	ownClusterIdentity := &infrav1.IdentityRef{Kind: infrav1.IdentityKindMetal3ClusterIdentity, Name: "pool-west"}
	m3cWithClusterIdentity := &infrav1.Metal3Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "shared"},
		Spec: infrav1.Metal3ClusterSpec{IdentityRef: &infrav1.IdentityRef{
			Kind: infrav1.IdentityKindMetal3ClusterIdentity, Name: "pool-east"}},
	}
	if err := c.Create(context.Background(), clusterWithInfra("shared", infrav1.GroupVersion.Group, "Metal3Cluster")); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), m3cWithClusterIdentity); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		machine *infrav1.Metal3Machine
		want    Key
		wantErr string
	}{
		{name: "own identityRef wins over the cluster's", machine: machine("metal3", own),
			want: Key{SecretNamespace: "tenant-a", SecretName: "own-pool"}},
		{name: "own identityRef needs no cluster", machine: machine("", own),
			want: Key{SecretNamespace: "tenant-a", SecretName: "own-pool"}},
		{name: "cluster's identityRef", machine: machine("metal3", nil),
			want: Key{SecretNamespace: "tenant-a", SecretName: "pool-east", Context: "east"}},
		{name: "cluster without identityRef: in-cluster", machine: machine("incluster", nil), want: InCluster},
		{name: "infrastructure is not a Metal3Cluster: in-cluster", machine: machine("other", nil), want: InCluster},
		{name: "infrastructure is not a Metal3Cluster, own identityRef", machine: machine("other", own),
			want: Key{SecretNamespace: "tenant-a", SecretName: "own-pool"}},
		// A Metal3ClusterIdentity is named, not resolved: which Secret it
		// stands for, and whether tenant-a may use it, is Resolve's to say.
		{name: "cluster's Metal3ClusterIdentity", machine: machine("shared", nil), want: Key{ClusterIdentity: "pool-east"}},
		{name: "own Metal3ClusterIdentity wins over the cluster's Secret", machine: machine("metal3", ownClusterIdentity),
			want: Key{ClusterIdentity: "pool-west"}},
		{name: "own Secret wins over the cluster's Metal3ClusterIdentity", machine: machine("shared", own),
			want: Key{SecretNamespace: "tenant-a", SecretName: "own-pool"}},
		{name: "no cluster label yet", machine: machine("", nil), wantErr: "cluster.x-k8s.io/cluster-name"},
		{name: "cluster missing", machine: machine("gone", nil), wantErr: "Cluster tenant-a/gone"},
		{name: "Metal3Cluster missing", machine: machine("missing-m3c", nil), wantErr: "Metal3Cluster tenant-a/missing-m3c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveMachine(context.Background(), c, tt.machine)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Key != tt.want || got.ObjectNamespace != "tenant-a" {
				t.Errorf("identity = %+v, want key %+v in tenant-a", got, tt.want)
			}
		})
	}
}

func TestMachineHostMode(t *testing.T) {
	claimCluster := &infrav1.Metal3Cluster{Spec: infrav1.Metal3ClusterSpec{HostMode: infrav1.HostModeHostClaim}}
	plainCluster := &infrav1.Metal3Cluster{}
	tests := []struct {
		name        string
		annotations map[string]string
		own         infrav1.HostMode
		cluster     *infrav1.Metal3Cluster
		want        infrav1.HostMode
	}{
		{name: "default is BareMetalHost", cluster: plainCluster, want: infrav1.HostModeBareMetalHost},
		{name: "no cluster", want: infrav1.HostModeBareMetalHost},
		{name: "the cluster's", cluster: claimCluster, want: infrav1.HostModeHostClaim},
		{name: "the machine's own wins", own: infrav1.HostModeBareMetalHost, cluster: claimCluster, want: infrav1.HostModeBareMetalHost},
		{name: "a recorded host pins BareMetalHost mode", cluster: claimCluster,
			annotations: map[string]string{infrav1.HostAnnotation: "pool/host-0"}, want: infrav1.HostModeBareMetalHost},
		{name: "a recorded claim pins HostClaim mode", own: infrav1.HostModeBareMetalHost,
			annotations: map[string]string{infrav1.HostClaimAnnotation: "pool/worker-0-abc"}, want: infrav1.HostModeHostClaim},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &infrav1.Metal3Machine{
				ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "worker-0", Annotations: tt.annotations},
				Spec:       infrav1.Metal3MachineSpec{HostMode: tt.own},
			}
			if got := OfMachine(m, tt.cluster).Mode; got != tt.want {
				t.Errorf("mode = %q, want %q", got, tt.want)
			}
		})
	}
}
