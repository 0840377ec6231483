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

package remediation

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/workload"
)

const providerID = "metal3://pool/host-0/worker-0"

// query is how the remediation of worker-0 on host-0 looks for its Node.
var query = workload.NodeQuery{ProviderID: providerID, HostUID: "host-uid"}

func workloadNode(name, providerID string, labels map[string]string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid"), Labels: labels},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
	}
}

func TestFindNode(t *testing.T) {
	tests := []struct {
		name  string
		nodes []client.Object
		want  string
	}{
		{name: "by providerID, when no Node has the host's label", want: "by-id", nodes: []client.Object{
			workloadNode("other", "", map[string]string{pool.HostUIDLabel: "other-uid"}), workloadNode("by-id", providerID, nil),
		}},
		{name: "the labelled Node that carries the providerID", want: "by-id", nodes: []client.Object{
			workloadNode("by-label", "", map[string]string{pool.HostUIDLabel: "host-uid"}),
			workloadNode("by-id", providerID, map[string]string{pool.HostUIDLabel: "host-uid"}),
		}},
		{name: "by the host's UID before the Node has its providerID", want: "by-label", nodes: []client.Object{
			workloadNode("by-label", "", map[string]string{pool.HostUIDLabel: "host-uid"}),
			workloadNode("other", "metal3://pool/host-1/worker-1", map[string]string{pool.HostUIDLabel: "other-uid"}),
		}},
		{name: "an earlier machine's Node on the same host is not this one's", want: "by-label", nodes: []client.Object{
			workloadNode("earlier", "metal3://pool/host-0/worker-old", map[string]string{pool.HostUIDLabel: "host-uid"}),
			workloadNode("by-label", "", map[string]string{pool.HostUIDLabel: "host-uid"}),
		}},
		{name: "none", nodes: []client.Object{workloadNode("other", "", map[string]string{pool.HostUIDLabel: "other-uid"})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(tt.nodes...).Build()
			nodes := WorkloadNodes(func(context.Context) (client.Client, error) { return c, nil }, query)
			node, err := nodes.Find(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if node != nil {
				got = node.Name
			}
			if got != tt.want {
				t.Fatalf("found %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUnreachableWorkload(t *testing.T) {
	nodes := WorkloadNodes(func(context.Context) (client.Client, error) {
		return nil, fmt.Errorf("%w: not connected", ErrWorkloadUnreachable)
	}, query)
	if _, err := nodes.Find(context.Background()); !errors.Is(err, ErrWorkloadUnreachable) {
		t.Fatalf("Find = %v, want ErrWorkloadUnreachable", err)
	}
}

// The Node registered after the reboot keeps what it has; what the old
// one had and it lacks is added.
func TestRestoreNode(t *testing.T) {
	ctx := context.Background()
	registered := workloadNode("host-0", "", map[string]string{pool.HostUIDLabel: "host-uid", "zone": "b"})
	registered.Annotations = map[string]string{"kubelet": "new"}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(registered).Build()
	nodes := WorkloadNodes(func(context.Context) (client.Client, error) { return c, nil }, query)
	backup := NodeBackup{
		NodeUID:     "old",
		Labels:      map[string]string{"zone": "a", "role": "db", pool.HostUIDLabel: "host-uid"},
		Annotations: map[string]string{"kubelet": "old", "owner": "team-a"},
	}
	if err := nodes.Restore(ctx, registered.DeepCopy(), backup); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: "host-0"}, got); err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{pool.HostUIDLabel: "host-uid", "zone": "b", "role": "db"}
	wantAnnotations := map[string]string{"kubelet": "new", "owner": "team-a"}
	if !maps.Equal(got.Labels, wantLabels) || !maps.Equal(got.Annotations, wantAnnotations) {
		t.Fatalf("labels %v, annotations %v; want %v, %v", got.Labels, got.Annotations, wantLabels, wantAnnotations)
	}

	if err := nodes.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := nodes.Restore(ctx, got, backup); !errors.Is(err, ErrNodeGone) {
		t.Fatalf("Restore of a deleted Node = %v, want ErrNodeGone", err)
	}
}

func TestBackupRoundTrip(t *testing.T) {
	r := &infrav1.Metal3Remediation{}
	if _, saved, err := backupOf(r); saved || err != nil {
		t.Fatalf("a new remediation has a saved Node (%v, %v)", saved, err)
	}
	n := workloadNode("host-0", providerID, map[string]string{"role": "db"})
	n.Annotations = map[string]string{"owner": "team-a"}
	if err := saveBackup(r, n); err != nil {
		t.Fatal(err)
	}
	backup, saved, err := backupOf(r)
	if err != nil || !saved || backup.NodeUID != n.UID || backup.Labels["role"] != "db" || backup.Annotations["owner"] != "team-a" {
		t.Fatalf("read back %+v (%v, %v)", backup, saved, err)
	}
	dropBackup(r)
	r.Annotations[infrav1.RemediationNodeBackupAnnotation] = "{not json"
	if _, _, err := backupOf(r); err == nil {
		t.Fatal("a corrupt annotation reads as a saved Node")
	}
}
