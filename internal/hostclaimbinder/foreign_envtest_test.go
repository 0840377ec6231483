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

package hostclaimbinder

import (
	"context"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
)

// TestClaimBoundByAnotherController stands for a pool admin who enabled
// the Bare Metal Operator's own HostClaim controller (v0.14, --hostclaims)
// next to the binder: BMO bound the claim first, writing the host's
// consumerRef without the claim's UID (as it does). Without the check the
// binder would bind the claim a second host and provision both with the
// tenant's data. It leaves the claim alone, says so on it (condition and
// Event), binds no host to it, and writes none of its finalizers; once the
// other controller lets the host go, the claim is the binder's.
func TestClaimBoundByAnotherController(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	g := NewWithT(t)
	ctx := context.Background()
	tenant := p.namespace(t, "tenant", nil)
	poolNS := p.hosts(t, 2, &bmov1alpha1.HostClaimNamespaces{Names: []string{tenant}})

	// BMO's HostClaim controller binds node-0 to the claim, as its
	// Associate does: no UID in the consumerRef.
	g.Eventually(func() error {
		host := p.getHost(g, poolNS, "node-0")
		host.Spec.ConsumerRef = &corev1.ObjectReference{
			APIVersion: bmov1alpha1.GroupVersion.String(), Kind: "HostClaim", Namespace: tenant, Name: "c",
		}
		return p.env.Client.Update(ctx, host)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	c := p.claim(t, tenant, "c", "", withImage)

	g.Eventually(func(g Gomega) {
		got := p.getClaim(g, c)
		handled := condition(got, hostclaim.HandledByBinderCondition)
		g.Expect(handled.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(handled.Reason).To(Equal(hostclaim.BoundByAnotherControllerReason))
		g.Expect(handled.Message).To(ContainSubstring(poolNS + "/node-0"))
		g.Expect(handled.Message).To(ContainSubstring("--hostclaims"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		events := &corev1.EventList{}
		g.Expect(p.env.Client.List(ctx, events, client.InNamespace(tenant))).To(Succeed())
		var reasons []string
		for _, e := range events.Items {
			reasons = append(reasons, e.Reason)
		}
		g.Expect(reasons).To(ContainElement(hostclaim.BoundByAnotherControllerReason))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		got := p.getClaim(g, c)
		g.Expect(got.Finalizers).To(BeEmpty(), "the binder added no finalizer")
		g.Expect(got.Status.BareMetalHost).To(BeNil(), "nor bound it")
		host := p.getHost(g, poolNS, "node-1")
		g.Expect(host.Spec.ConsumerRef).To(BeNil(), "no second host for the claim")
		g.Expect(p.getHost(g, poolNS, "node-0").Spec.Image).To(BeNil(), "nor gave the other controller's host the image")
	}).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

	// The other controller lets the host go: the claim is the binder's.
	g.Eventually(func() error {
		host := p.getHost(g, poolNS, "node-0")
		host.Spec.ConsumerRef = nil
		return p.env.Client.Update(ctx, host)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	p.updateClaim(t, c, func(c *bmov1alpha1.HostClaim) { c.Annotations["touch"] = "1" })
	p.boundHost(t, c, 60*time.Second)
	g.Eventually(func(g Gomega) {
		g.Expect(condition(p.getClaim(g, c), hostclaim.HandledByBinderCondition).Type).To(BeEmpty(), "the condition goes")
	}).WithTimeout(10 * time.Second).Should(Succeed())
}
