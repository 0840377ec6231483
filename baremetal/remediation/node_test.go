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
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

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
			nodes := WorkloadNodes(func(context.Context) (client.Client, error) { return c, nil }, nil, query)
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
	}, func(context.Context) (*version.Info, error) {
		return nil, errors.New("connection reset")
	}, query)
	ctx := context.Background()
	if _, err := nodes.Find(ctx); !errors.Is(err, ErrWorkloadUnreachable) {
		t.Fatalf("Find = %v, want ErrWorkloadUnreachable", err)
	}
	if _, err := nodes.Drain(ctx, workloadNode("host-0", "", nil)); !errors.Is(err, ErrWorkloadUnreachable) {
		t.Fatalf("Drain = %v, want ErrWorkloadUnreachable", err)
	}
	// A version that could not be read is retried, never guessed.
	if info, err := nodes.Version(ctx); info != nil || !errors.Is(err, ErrWorkloadUnreachable) {
		t.Fatalf("Version = %v, %v; want ErrWorkloadUnreachable", info, err)
	}
}

// The Node registered after the reboot keeps what it has; what the old
// one had and it lacks is added.
func TestRestoreNode(t *testing.T) {
	ctx := context.Background()
	registered := workloadNode("host-0", "", map[string]string{pool.HostUIDLabel: "host-uid", "zone": "b"})
	registered.Annotations = map[string]string{"kubelet": "new"}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(registered).Build()
	nodes := WorkloadNodes(func(context.Context) (client.Client, error) { return c, nil }, nil, query)
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

// TestWorkloadTaint: the taint is added once, with upstream's value and
// effect and the time it was added, next to the taints the Node has, even
// when the node lifecycle controller changes them in between (a conflict,
// retried on the Node read again); removing it keeps the others.
func TestWorkloadTaint(t *testing.T) {
	ctx := context.Background()
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	n := workloadNode("host-0", providerID, nil)
	n.Spec.Taints = []corev1.Taint{unreachable}
	base := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(n).Build()
	conflicts := 0
	c := interceptor.NewClient(base, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if conflicts == 0 {
				// The node lifecycle controller adds a taint meanwhile.
				conflicts++
				live := &corev1.Node{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
					return err
				}
				live.Spec.Taints = append(live.Spec.Taints, notReady)
				if err := c.Update(ctx, live); err != nil {
					return err
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	nodes := WorkloadNodes(func(context.Context) (client.Client, error) { return c, nil }, nil, query)
	read := func() *corev1.Node {
		t.Helper()
		got := &corev1.Node{}
		if err := base.Get(ctx, client.ObjectKey{Name: "host-0"}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	keys := func(node *corev1.Node) []string {
		var k []string
		for _, taint := range node.Spec.Taints {
			k = append(k, taint.Key)
		}
		return k
	}

	if err := nodes.Taint(ctx, n.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	got := read()
	if want := []string{unreachable.Key, notReady.Key, corev1.TaintNodeOutOfService}; !slices.Equal(keys(got), want) {
		t.Fatalf("taints %v, want %v", keys(got), want)
	}
	added := got.Spec.Taints[2]
	if added.Value != "nodeshutdown" || added.Effect != corev1.TaintEffectNoExecute || added.TimeAdded == nil {
		t.Errorf("taint %+v, want node.kubernetes.io/out-of-service=nodeshutdown:NoExecute with its time", added)
	}
	if err := nodes.Taint(ctx, got); err != nil {
		t.Fatal(err)
	}
	if again := read(); len(again.Spec.Taints) != 3 || again.ResourceVersion != got.ResourceVersion {
		t.Errorf("tainting a tainted Node changed it: %v", keys(again))
	}

	if err := nodes.Untaint(ctx, read()); err != nil {
		t.Fatal(err)
	}
	if want := []string{unreachable.Key, notReady.Key}; !slices.Equal(keys(read()), want) {
		t.Fatalf("after Untaint: taints %v, want %v", keys(read()), want)
	}

	// A Node registered again under the same name is not the one tainted.
	stale := read()
	stale.UID = "older"
	stale.ResourceVersion = "1"
	if err := nodes.Taint(ctx, stale); !errors.Is(err, ErrNodeGone) {
		t.Errorf("Taint of a Node replaced meanwhile = %v, want ErrNodeGone", err)
	}
}

// TestWorkloadDrain: what holds a Node out of service, with upstream's
// conditions: its pods that are terminating (not those running, which
// tolerate the taint, nor another Node's), and every volume attachment
// naming it, attached or not.
func TestWorkloadDrain(t *testing.T) {
	ctx := context.Background()
	deleted := metav1.Now()
	pod := func(namespace, name, nodeName string, terminating bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: corev1.PodSpec{NodeName: nodeName}}
		if terminating {
			p.DeletionTimestamp, p.Finalizers = &deleted, []string{"example.com/hold"}
		}
		return p
	}
	attachment := func(name, nodeName string, attached bool) *storagev1.VolumeAttachment {
		return &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: nodeName},
			Status:     storagev1.VolumeAttachmentStatus{Attached: attached},
		}
	}
	base := fake.NewClientBuilder().WithScheme(testScheme(t)).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		WithObjects(
			pod("shop", "db-0", "host-0", true), pod("shop", "web-1", "host-0", true),
			pod("kube-system", "tolerating", "host-0", false), pod("shop", "db-1", "host-1", true),
			attachment("csi-attached", "host-0", true), attachment("csi-detaching", "host-0", false),
			attachment("csi-other", "host-1", true),
		).Build()
	// The fake client cannot select metadata by a spec field, as the API
	// server does (test/remediation lists against one): the pods are
	// selected as objects and handed back as metadata.
	c := interceptor.NewClient(base, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			meta, ok := list.(*metav1.PartialObjectMetadataList)
			if !ok || meta.GroupVersionKind().Kind != "PodList" {
				return c.List(ctx, list, opts...)
			}
			pods := &corev1.PodList{}
			if err := c.List(ctx, pods, opts...); err != nil {
				return err
			}
			for _, p := range pods.Items {
				meta.Items = append(meta.Items, metav1.PartialObjectMetadata{ObjectMeta: p.ObjectMeta})
			}
			return nil
		},
	})
	nodes := WorkloadNodes(func(context.Context) (client.Client, error) { return c, nil }, nil, query)
	d, err := nodes.Drain(ctx, workloadNode("host-0", providerID, nil))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(d.Pods)
	slices.Sort(d.VolumeAttachments)
	if want := []string{"shop/db-0", "shop/web-1"}; !slices.Equal(d.Pods, want) {
		t.Errorf("pods %v, want %v", d.Pods, want)
	}
	if want := []string{"csi-attached", "csi-detaching"}; !slices.Equal(d.VolumeAttachments, want) {
		t.Errorf("volume attachments %v, want %v", d.VolumeAttachments, want)
	}
	if d, err := nodes.Drain(ctx, workloadNode("host-2", "", nil)); err != nil || !d.Empty() {
		t.Errorf("a Node with nothing on it: %+v, %v", d, err)
	}
}
