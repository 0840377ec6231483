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

package workload

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

func node(name, providerID string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

func TestFindNode(t *testing.T) {
	const ours, earlier = "metal3://pool/host-0/worker-1", "metal3://pool/host-0/worker-0"
	uid := map[string]string{pool.HostUIDLabel: "host-0-uid"}
	query := NodeQuery{ProviderID: ours, HostUID: "host-0-uid", Hostnames: []string{"host-0"}}
	tests := []struct {
		name      string
		query     NodeQuery
		nodes     []client.Object
		want      string
		ambiguous bool
	}{
		{name: "none registered yet", query: query},
		{name: "by Cluster API's nodeRef", query: NodeQuery{NodeName: "n", ProviderID: ours}, want: "n",
			nodes: []client.Object{node("n", ours, nil)}},
		{name: "a nodeRef carrying another providerID is not ours", query: NodeQuery{NodeName: "old", ProviderID: ours, HostUID: "host-0-uid"},
			want: "new", nodes: []client.Object{node("old", earlier, uid), node("new", "", uid)}},
		{name: "by the host's UID label", query: query, want: "n", nodes: []client.Object{node("n", "", uid), node("other", "", nil)}},
		{name: "an earlier machine's Node on the same host is skipped", query: query, want: "new",
			nodes: []client.Object{node("old", earlier, uid), node("new", "", uid)}},
		{name: "the labelled Node carrying the providerID wins", query: query, want: "ours",
			nodes: []client.Object{node("stale", "", uid), node("ours", ours, uid)}},
		{name: "two labelled Nodes without providerID: ambiguous", query: query, ambiguous: true,
			nodes: []client.Object{node("a", "", uid), node("b", "", uid)}},
		{name: "by hostname when no Node has the label", query: query, want: "host-0",
			nodes: []client.Object{node("host-0", "", map[string]string{corev1.LabelHostname: "host-0"})}},
		{name: "a Node labelled for another host is not ours by hostname", query: query,
			nodes: []client.Object{node("host-0", "", map[string]string{corev1.LabelHostname: "host-0", pool.HostUIDLabel: "other"})}},
		{name: "a host name that is no label value is skipped", query: NodeQuery{HostUID: "x", Hostnames: []string{"Not A Label Value!"}}},
		{name: "by providerID alone, as a kubelet started with --provider-id registers", query: query, want: "kubelet",
			nodes: []client.Object{node("kubelet", ours, nil), node("other", earlier, nil)}},
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.nodes...).Build()
			got, err := FindNode(context.Background(), c, tt.query)
			if tt.ambiguous {
				if !errors.Is(err, ErrAmbiguousNode) {
					t.Fatalf("got %v, %v; want ErrAmbiguousNode", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tt.want {
				t.Fatalf("found %q, want %q", name, tt.want)
			}
		})
	}
}
