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
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// TestDataTemplateIndexes: 30 claims created at once get 30 distinct
// indexes; deleting 10 and creating 10 others leaves no gap; the template
// cannot go while data rendered from it exist.
func TestDataTemplateIndexes(t *testing.T) {
	g := NewWithT(t)
	nsTenantA := testNamespace(t, "tenant-a")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	startControllers(t, mgmt, scheme)
	mgmt.GrantInNamespace(t, nsTenantA, "nobody")
	template := &infrav1.Metal3DataTemplate{
		ObjectMeta: metav1ObjectMeta(nsTenantA, "workers"),
		Spec:       infrav1.Metal3DataTemplateSpec{ClusterName: "cluster-a"},
	}
	g.Expect(mgmt.Client.Create(ctx, template)).To(Succeed())

	createClaims := func(from, to int) {
		var wg sync.WaitGroup
		for i := from; i < to; i++ {
			wg.Go(func() {
				claim := &infrav1.Metal3DataClaim{
					ObjectMeta: metav1ObjectMeta(nsTenantA, fmt.Sprintf("claim-%d", i)),
					Spec:       infrav1.Metal3DataClaimSpec{Template: &infrav1.Metal3ObjectRef{Name: "workers"}},
				}
				g.Expect(mgmt.Client.Create(ctx, claim)).To(Succeed())
			})
		}
		wg.Wait()
	}
	// indexes returns the sorted indexes of the template's data, checking
	// every live claim has exactly one.
	indexes := func(g Gomega, liveClaims int) []int {
		datas := &infrav1.Metal3DataList{}
		g.Expect(mgmt.Client.List(ctx, datas, client.InNamespace(nsTenantA))).To(Succeed())
		perClaim := map[string]int{}
		var out []int
		for _, d := range datas.Items {
			g.Expect(d.Spec.Index).NotTo(BeNil(), "%s has its index", d.Name)
			index := int(*d.Spec.Index)
			g.Expect(d.Name).To(Equal(fmt.Sprintf("workers-%d", index)))
			perClaim[d.Spec.Claim.Name]++
			out = append(out, index)
		}
		for claim, n := range perClaim {
			g.Expect(n).To(Equal(1), "claim %s has %d Metal3Data", claim, n)
		}
		g.Expect(out).To(HaveLen(liveClaims))
		sort.Ints(out)
		return out
	}
	upTo := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}

	createClaims(0, 30)
	g.Eventually(func(g Gomega) {
		g.Expect(indexes(g, 30)).To(Equal(upTo(30)))
		claims := &infrav1.Metal3DataClaimList{}
		g.Expect(mgmt.Client.List(ctx, claims, client.InNamespace(nsTenantA))).To(Succeed())
		for _, c := range claims.Items {
			g.Expect(c.Status.RenderedData).NotTo(BeNil(), "claim %s knows its data", c.Name)
		}
		got := &infrav1.Metal3DataTemplate{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(template), got)).To(Succeed())
		g.Expect(got.Status.Indexes).To(HaveLen(30))
	}).WithTimeout(60*time.Second).WithPolling(time.Second).Should(Succeed(), "30 concurrent claims, 30 distinct indexes")

	for i := range 10 {
		g.Expect(mgmt.Client.Delete(ctx, &infrav1.Metal3DataClaim{ObjectMeta: metav1ObjectMeta(nsTenantA, fmt.Sprintf("claim-%d", i*3))})).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		g.Expect(indexes(g, 20)).To(HaveLen(20))
		for i := range 10 {
			err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: nsTenantA, Name: fmt.Sprintf("claim-%d", i*3)}, &infrav1.Metal3DataClaim{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a deleted claim goes once its data is released")
		}
	}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())

	createClaims(30, 40)
	g.Eventually(func(g Gomega) {
		g.Expect(indexes(g, 30)).To(Equal(upTo(30)), "freed indexes are reused: no gaps")
	}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())

	g.Expect(mgmt.Client.Delete(ctx, template)).To(Succeed())
	g.Consistently(func() error {
		return mgmt.Client.Get(ctx, client.ObjectKeyFromObject(template), &infrav1.Metal3DataTemplate{})
	}).WithTimeout(3*time.Second).Should(Succeed(), "a template with data is not deleted")
}

// TestDataTemplateIndexesStableAcrossRestartsAndRevisions: indexes survive
// a provider restart (they live in the Metal3Data, not in memory), a claim
// created while the provider was down gets the lowest free index, and a new
// revision of a template sharing its templateReference allocates from the
// same index space, so machines rolled onto it never reuse a live index.
func TestDataTemplateIndexesStableAcrossRestartsAndRevisions(t *testing.T) {
	g := NewWithT(t)
	nsTenantA := testNamespace(t, "tenant-a")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, noHosts)
	_, stop := startStoppableControllers(t, mgmt, scheme)
	mgmt.GrantInNamespace(t, nsTenantA, "nobody")

	for _, name := range []string{"workers-v1", "workers-v2"} {
		g.Expect(mgmt.Client.Create(ctx, &infrav1.Metal3DataTemplate{
			ObjectMeta: metav1ObjectMeta(nsTenantA, name),
			Spec:       infrav1.Metal3DataTemplateSpec{ClusterName: "cluster-a", TemplateReference: "workers"},
		})).To(Succeed())
	}
	claim := func(name, template string) {
		t.Helper()
		g.Expect(mgmt.Client.Create(ctx, &infrav1.Metal3DataClaim{
			ObjectMeta: metav1ObjectMeta(nsTenantA, name),
			Spec:       infrav1.Metal3DataClaimSpec{Template: &infrav1.Metal3ObjectRef{Name: template}},
		})).To(Succeed())
	}
	// dataOf maps claim names to the Metal3Data name and index they hold.
	dataOf := func(g Gomega) map[string]string {
		datas := &infrav1.Metal3DataList{}
		g.Expect(mgmt.Client.List(ctx, datas, client.InNamespace(nsTenantA))).To(Succeed())
		out := map[string]string{}
		for _, d := range datas.Items {
			if d.DeletionTimestamp.IsZero() {
				out[d.Spec.Claim.Name] = fmt.Sprintf("%s/%d", d.Name, ptr.Deref(d.Spec.Index, -1))
			}
		}
		return out
	}

	for i := range 4 {
		claim(fmt.Sprintf("a-%d", i), "workers-v1")
	}
	g.Eventually(dataOf).WithTimeout(30 * time.Second).Should(Equal(map[string]string{
		"a-0": "workers-v1-0/0", "a-1": "workers-v1-1/1", "a-2": "workers-v1-2/2", "a-3": "workers-v1-3/3",
	}))
	g.Expect(mgmt.Client.Delete(ctx, &infrav1.Metal3DataClaim{ObjectMeta: metav1ObjectMeta(nsTenantA, "a-1")})).To(Succeed())
	g.Eventually(dataOf).WithTimeout(30 * time.Second).Should(HaveLen(3))

	// Down: a claim arrives. Up again: it gets the freed index, the others
	// keep theirs.
	stop()
	claim("a-4", "workers-v1")
	startControllers(t, mgmt, scheme)
	want := map[string]string{
		"a-0": "workers-v1-0/0", "a-2": "workers-v1-2/2", "a-3": "workers-v1-3/3", "a-4": "workers-v1-1/1",
	}
	g.Eventually(dataOf).WithTimeout(30 * time.Second).Should(Equal(want))

	// A revision sharing the templateReference continues the index space.
	claim("b-0", "workers-v2")
	claim("b-1", "workers-v2")
	want["b-0"], want["b-1"] = "workers-v2-4/4", "workers-v2-5/5"
	g.Eventually(dataOf).WithTimeout(30 * time.Second).Should(Equal(want))
	g.Consistently(dataOf).WithTimeout(2*time.Second).Should(Equal(want), "indexes stay put")
}

// TestDataTemplateSharedByClusters: one template without clusterName
// serves the machines of two clusters, as a ClusterClass's would (upstream
// CAPM3 v1.14): each machine gets its Metal3Data, labelled with its own
// cluster, from one index space; the template is owned by no Cluster.
// Deleting one cluster (its machines first, as Cluster API does) leaves the
// template and the other cluster's data as they were, and the index it
// freed goes to the other cluster's next machine. A deleted template waits
// until no claim names it and no data rendered from it remains.
func TestDataTemplateSharedByClusters(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := testNamespace(t, "tenant-shared")
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	mgmt.GrantInNamespace(t, ns, "nobody")
	// Hosts reported available, no Bare Metal Operator: a deprovisioned
	// host is released at once. (The operator's test provisioner keeps one
	// image for all its hosts, so one host of several never finishes
	// deprovisioning while the others are provisioned.)
	availableHosts(t, mgmt.Client, ns, "host", 3)
	startControllers(t, mgmt, scheme)

	template := &infrav1.Metal3DataTemplate{
		ObjectMeta: metav1ObjectMeta(ns, "nodes"),
		Spec: infrav1.Metal3DataTemplateSpec{MetaData: &infrav1.MetaData{
			ObjectNames: []infrav1.MetaDataObjectName{{Key: "name", Object: infrav1.DataSourceObjectMachine}},
		}},
	}
	g.Expect(mgmt.Client.Create(ctx, template)).To(Succeed())
	clusterA := workloadCluster{namespace: ns, name: "cluster-a"}
	clusterB := workloadCluster{namespace: ns, name: "cluster-b"}
	clusterA.create(t, mgmt.Client)
	clusterB.create(t, mgmt.Client)
	useTemplate := func(m *infrav1.Metal3Machine) { m.Spec.DataTemplate = &infrav1.Metal3ObjectRef{Name: "nodes"} }
	a0 := clusterA.machine(t, mgmt.Client, "a-0", useTemplate)
	b0 := clusterB.machine(t, mgmt.Client, "b-0", useTemplate)

	// rendered is a claim's live Metal3Data.
	type rendered struct {
		Name, Cluster string
		Index         int32
		UID           types.UID
	}
	dataByClaim := func(g Gomega) map[string]rendered {
		datas := &infrav1.Metal3DataList{}
		g.Expect(mgmt.Client.List(ctx, datas, client.InNamespace(ns))).To(Succeed())
		out := map[string]rendered{}
		for _, d := range datas.Items {
			if d.DeletionTimestamp.IsZero() {
				out[d.Spec.Claim.Name] = rendered{
					Name: d.Name, Cluster: d.Labels[clusterv1.ClusterNameLabel], Index: ptr.Deref(d.Spec.Index, -1), UID: d.UID,
				}
			}
		}
		return out
	}
	machineRecords := func(g Gomega, m3m *infrav1.Metal3Machine, data string) {
		got := &infrav1.Metal3Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3m), got)).To(Succeed())
		g.Expect(got.Status.RenderedData).To(HaveValue(HaveField("Name", data)), "machine %s records its data", m3m.Name)
	}

	var before map[string]rendered
	g.Eventually(func(g Gomega) {
		before = dataByClaim(g)
		g.Expect(before).To(HaveLen(2))
		g.Expect(before).To(HaveKeyWithValue("a-0", HaveField("Cluster", "cluster-a")))
		g.Expect(before).To(HaveKeyWithValue("b-0", HaveField("Cluster", "cluster-b")))
		g.Expect([]int32{before["a-0"].Index, before["b-0"].Index}).To(ConsistOf(int32(0), int32(1)), "one index space for both clusters")
		machineRecords(g, a0, before["a-0"].Name)
		machineRecords(g, b0, before["b-0"].Name)
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "each cluster's machine gets its data from the shared template")
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(template), template)).To(Succeed())
	g.Expect(template.OwnerReferences).To(BeEmpty(), "no Cluster owns a shared template (garbage collection would delete it with that cluster)")
	g.Expect(template.Labels).NotTo(HaveKey(clusterv1.ClusterNameLabel))
	g.Expect(template.Status.Indexes).To(HaveLen(2))

	// Cluster A goes, as Cluster API deletes a cluster: its machines
	// first (this API server has no garbage collector to do the rest).
	deleteAndWait := func(objs ...client.Object) {
		t.Helper()
		for _, obj := range objs {
			g.Expect(client.IgnoreNotFound(mgmt.Client.Delete(ctx, obj))).To(Succeed())
			g.Eventually(func(g Gomega) {
				err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s is deleted; last seen: %+v", obj, obj.GetName(), obj)
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		}
	}
	deleteAndWait(a0, &clusterv1.Machine{ObjectMeta: metav1ObjectMeta(ns, "a-0")},
		&infrav1.Metal3Cluster{ObjectMeta: metav1ObjectMeta(ns, "cluster-a")}, &clusterv1.Cluster{ObjectMeta: metav1ObjectMeta(ns, "cluster-a")})
	g.Eventually(dataByClaim).WithTimeout(time.Minute).Should(Equal(map[string]rendered{"b-0": before["b-0"]}),
		"cluster A's data is gone, cluster B's is untouched")
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(template), template)).To(Succeed())
	g.Expect(template.DeletionTimestamp.IsZero()).To(BeTrue(), "the template outlives the cluster")

	b1 := clusterB.machine(t, mgmt.Client, "b-1", useTemplate)
	g.Eventually(func(g Gomega) {
		got := dataByClaim(g)
		g.Expect(got).To(HaveKeyWithValue("b-1", And(HaveField("Cluster", "cluster-b"), HaveField("Index", before["a-0"].Index))))
		machineRecords(g, b1, got["b-1"].Name)
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the index cluster A freed goes to cluster B's next machine")

	g.Expect(mgmt.Client.Delete(ctx, template)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(template), template)).To(Succeed())
		g.Expect(conditions.Get(template, infrav1.Metal3DataTemplateIndexesAllocatedCondition)).To(HaveValue(And(
			HaveField("Reason", infrav1.DeletingReason),
			HaveField("Message", ContainSubstring("Waiting for 2 Metal3DataClaims naming this template and 2 Metal3Data")))))
	}).WithTimeout(20*time.Second).Should(Succeed(), "the deleting template says what it waits for")
	g.Consistently(func(g Gomega) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(template), &infrav1.Metal3DataTemplate{})).To(Succeed())
		g.Expect(dataByClaim(g)).To(HaveLen(2))
	}).WithTimeout(3*time.Second).Should(Succeed(), "a template with data is not deleted, nor is its data")
	deleteAndWait(b0, b1, &infrav1.Metal3DataTemplate{ObjectMeta: metav1ObjectMeta(ns, "nodes")})
	g.Expect(dataByClaim(g)).To(BeEmpty())
}
