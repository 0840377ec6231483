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
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// TestDataKindsHonourPause: a Metal3Data of a paused Cluster, or a
// Metal3DataTemplate with the paused annotation, says so in its Paused
// condition and is not reconciled (no finalizer, no index allocated, no
// condition of its work) until unpaused; then its status reports the
// generation it was computed for. A template belongs to no Cluster, even
// one that still names a Cluster in spec.clusterName (deprecated), as
// upstream CAPM3 v1.14 has it: a Cluster's pause holds that cluster's claims
// (no index, nothing written on them) while the template serves the claims
// of other clusters.
func TestDataKindsHonourPause(t *testing.T) {
	g := NewWithT(t)
	ns := testNamespace(t, "tenant-a")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, noHosts)
	startControllers(t, mgmt, scheme)
	mgmt.GrantInNamespace(t, ns, "nobody")

	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1ObjectMeta(ns, "cluster-a"),
		Spec: clusterv1.ClusterSpec{Paused: ptr.To(true), InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "Metal3Cluster", Name: "cluster-a",
		}},
	}
	g.Expect(mgmt.Client.Create(ctx, cluster)).To(Succeed())
	template := &infrav1.Metal3DataTemplate{
		ObjectMeta: metav1ObjectMeta(ns, "workers"),
		Spec:       infrav1.Metal3DataTemplateSpec{ClusterName: "cluster-a"},
	}
	g.Expect(mgmt.Client.Create(ctx, template)).To(Succeed())
	// A claim carries its machine's cluster, as the Metal3Machine labels it.
	claim := func(name, cluster string) {
		g.Expect(mgmt.Client.Create(ctx, &infrav1.Metal3DataClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}},
			Spec:       infrav1.Metal3DataClaimSpec{Template: &infrav1.Metal3ObjectRef{Name: "workers"}},
		})).To(Succeed())
	}
	claim("claim-0", "cluster-a")
	claim("claim-b", "cluster-b")
	// A Metal3Data of the cluster whose claim does not exist (of another
	// template, which would delete it as orphaned): once reconciled it
	// waits for its claim, which only an unpaused one says.
	data := &infrav1.Metal3Data{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan", Labels: map[string]string{clusterv1.ClusterNameLabel: "cluster-a"}},
		Spec: infrav1.Metal3DataSpec{
			Template: &infrav1.Metal3ObjectRef{Name: "others"}, Claim: &infrav1.Metal3ObjectRef{Name: "no-such-claim"},
		},
	}
	g.Expect(mgmt.Client.Create(ctx, data)).To(Succeed())

	expectPaused := func(g Gomega, obj paused.ConditionSetter, message string) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		g.Expect(conditions.Get(obj, clusterv1.PausedCondition)).To(HaveValue(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", clusterv1.PausedReason),
			HaveField("Message", ContainSubstring(message)))))
		g.Expect(obj.GetFinalizers()).To(BeEmpty(), "a paused object is not reconciled")
	}
	dataOfClaim := func(g Gomega, name string) []infrav1.Metal3Data {
		datas := &infrav1.Metal3DataList{}
		g.Expect(mgmt.Client.List(ctx, datas, client.InNamespace(ns))).To(Succeed())
		var out []infrav1.Metal3Data
		for _, d := range datas.Items {
			if d.Spec.Claim.Name == name {
				out = append(out, d)
			}
		}
		return out
	}

	// Paused by the Cluster: its data and its claims, not the template.
	g.Eventually(func(g Gomega) {
		expectPaused(g, data, "Cluster spec.paused is set to true")
	}).WithTimeout(20*time.Second).Should(Succeed(), "the cluster's pause shows on its data")
	g.Expect(conditions.Get(data, infrav1.Metal3DataSecretsRenderedCondition)).To(BeNil())
	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(template), template)).To(Succeed())
		g.Expect(conditions.IsFalse(template, clusterv1.PausedCondition)).To(BeTrue(), "the Cluster spec.clusterName names does not pause the template")
		g.Expect(dataOfClaim(g, "claim-b")).To(HaveLen(1), "the claim of a running cluster is served")
		g.Expect(conditions.Get(template, infrav1.Metal3DataTemplateIndexesAllocatedCondition)).To(HaveValue(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", infrav1.Metal3DataTemplateAllocationPendingReason),
			HaveField("Message", ContainSubstring("1 Metal3DataClaims wait for their paused Cluster: claim-0")))))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	// The pass that served claim-b went over claim-0 too.
	g.Expect(dataOfClaim(g, "claim-0")).To(BeEmpty(), "no index is allocated to a claim of a paused cluster")
	held := &infrav1.Metal3DataClaim{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "claim-0"}, held)).To(Succeed())
	g.Expect(held.Finalizers).To(BeEmpty(), "nothing is written on a claim of a paused cluster")
	g.Expect(held.Status).To(BeZero())

	update(t, mgmt.Client, cluster, func() { cluster.Spec.Paused = nil })
	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(template), template)).To(Succeed())
		g.Expect(conditions.IsFalse(template, clusterv1.PausedCondition)).To(BeTrue())
		g.Expect(conditions.IsTrue(template, infrav1.ReadyCondition)).To(BeTrue())
		g.Expect(template.Status.ObservedGeneration).To(Equal(template.Generation))
		g.Expect(dataOfClaim(g, "claim-0")).To(HaveLen(1))
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(data), data)).To(Succeed())
		g.Expect(conditions.IsFalse(data, clusterv1.PausedCondition)).To(BeTrue())
		g.Expect(conditions.Get(data, infrav1.Metal3DataSecretsRenderedCondition)).To(HaveValue(
			HaveField("Reason", infrav1.Metal3DataWaitingForHostReason)))
		g.Expect(conditions.Get(data, infrav1.ReadyCondition)).To(HaveValue(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", infrav1.Metal3DataWaitingForHostReason))))
		g.Expect(data.Status.ObservedGeneration).To(Equal(data.Generation))
	}).WithTimeout(20*time.Second).Should(Succeed(), "unpausing the cluster resumes the template and the data")

	// Paused by its own annotation.
	update(t, mgmt.Client, template, func() {
		template.Annotations = map[string]string{clusterv1.PausedAnnotation: ""}
	})
	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(template), template)).To(Succeed())
		g.Expect(conditions.Get(template, clusterv1.PausedCondition)).To(HaveValue(And(
			HaveField("Status", metav1.ConditionTrue),
			HaveField("Message", ContainSubstring("Metal3DataTemplate has the cluster.x-k8s.io/paused annotation")))))
	}).WithTimeout(20*time.Second).Should(Succeed(), "the annotation pauses the template")
	claim("claim-1", "cluster-a")
	// The claim's creation reaches the paused template, which must ignore
	// it: a later unpause is what allocates its index.
	g.Consistently(func(g Gomega) {
		g.Expect(dataOfClaim(g, "claim-1")).To(BeEmpty())
	}).WithTimeout(3*time.Second).Should(Succeed(), "no index is allocated while the template is paused")
	update(t, mgmt.Client, template, func() { delete(template.Annotations, clusterv1.PausedAnnotation) })
	g.Eventually(func(g Gomega) {
		g.Expect(dataOfClaim(g, "claim-1")).To(HaveLen(1))
	}).WithTimeout(20*time.Second).Should(Succeed(), "removing the annotation resumes the template")
}
