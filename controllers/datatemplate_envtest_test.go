package controllers

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
)

// TestDataTemplateIndexes: 30 claims created at once get 30 distinct
// indexes; deleting 10 and creating 10 others leaves no gap; the template
// cannot go while data rendered from it exist.
func TestDataTemplateIndexes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	startControllers(t, mgmt, scheme)
	mgmt.GrantInNamespace(t, "tenant-a", "nobody")
	template := &infrav1.Metal3DataTemplate{
		ObjectMeta: metav1ObjectMeta("tenant-a", "workers"),
		Spec:       infrav1.Metal3DataTemplateSpec{ClusterName: "cluster-a"},
	}
	g.Expect(mgmt.Client.Create(ctx, template)).To(Succeed())

	createClaims := func(from, to int) {
		var wg sync.WaitGroup
		for i := from; i < to; i++ {
			wg.Go(func() {
				claim := &infrav1.Metal3DataClaim{
					ObjectMeta: metav1ObjectMeta("tenant-a", fmt.Sprintf("claim-%d", i)),
					Spec:       infrav1.Metal3DataClaimSpec{Template: corev1.ObjectReference{Name: "workers"}},
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
		g.Expect(mgmt.Client.List(ctx, datas, client.InNamespace("tenant-a"))).To(Succeed())
		perClaim := map[string]int{}
		var out []int
		for _, d := range datas.Items {
			g.Expect(d.Name).To(Equal(fmt.Sprintf("workers-%d", d.Spec.Index)))
			perClaim[d.Spec.Claim.Name]++
			out = append(out, d.Spec.Index)
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
		g.Expect(mgmt.Client.List(ctx, claims, client.InNamespace("tenant-a"))).To(Succeed())
		for _, c := range claims.Items {
			g.Expect(c.Status.RenderedData).NotTo(BeNil(), "claim %s knows its data", c.Name)
		}
		got := &infrav1.Metal3DataTemplate{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(template), got)).To(Succeed())
		g.Expect(got.Status.Indexes).To(HaveLen(30))
	}).WithTimeout(60*time.Second).WithPolling(time.Second).Should(Succeed(), "30 concurrent claims, 30 distinct indexes")

	for i := range 10 {
		g.Expect(mgmt.Client.Delete(ctx, &infrav1.Metal3DataClaim{ObjectMeta: metav1ObjectMeta("tenant-a", fmt.Sprintf("claim-%d", i*3))})).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		g.Expect(indexes(g, 20)).To(HaveLen(20))
		for i := range 10 {
			err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: fmt.Sprintf("claim-%d", i*3)}, &infrav1.Metal3DataClaim{})
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
