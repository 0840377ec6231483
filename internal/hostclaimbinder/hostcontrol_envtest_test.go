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
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// updateClaim changes the claim, retrying on conflicts with the binder.
func (p *poolEnv) updateClaim(t *testing.T, c *bmov1alpha1.HostClaim, change func(*bmov1alpha1.HostClaim)) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) error {
		got := p.getClaim(g, c)
		if got.Annotations == nil {
			got.Annotations = map[string]string{}
		}
		change(got)
		return p.env.Client.Update(context.Background(), got)
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// TestPauseAndReboots: a paused claim pauses its host and stops the binder
// from changing it, until resumed; a reboot annotation of the claim is
// mirrored on its host while the claim has it.
func TestPauseAndReboots(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	g := NewWithT(t)
	tenant := p.namespace(t, "tenant", nil)
	p.hosts(t, 1, &bmov1alpha1.HostClaimNamespaces{Names: []string{tenant}})
	c := p.claim(t, tenant, "c", "")
	bound := p.boundHost(t, c, 60*time.Second)
	host := func(g Gomega) *bmov1alpha1.BareMetalHost { return p.getHost(g, bound.Namespace, bound.Name) }
	g.Eventually(func(g Gomega) { g.Expect(host(g).Spec.Online).To(BeTrue()) }).WithTimeout(10 * time.Second).Should(Succeed())

	// Paused: the host is paused by the binder and no longer follows the claim.
	p.updateClaim(t, c, func(c *bmov1alpha1.HostClaim) {
		c.Annotations[hostclaim.PausedAnnotation] = "tenant"
	})
	g.Eventually(func(g Gomega) {
		g.Expect(host(g).Annotations).To(HaveKeyWithValue(bmov1alpha1.PausedAnnotation, hostclaim.PausedByBinder))
		synced := condition(p.getClaim(g, c), bmov1alpha1.SynchronizedCondition)
		g.Expect(synced.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(synced.Reason).To(Equal(bmov1alpha1.HostPausedReason))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	p.updateClaim(t, c, func(c *bmov1alpha1.HostClaim) {
		c.Spec.PoweredOn = false
		c.Annotations[hostclaim.RebootAnnotationPrefix+"/while-paused"] = ""
	})
	// The binder saw the change (the claim's status is written for its
	// generation) and left the host alone.
	g.Eventually(func(g Gomega) {
		got := p.getClaim(g, c)
		g.Expect(condition(got, bmov1alpha1.SynchronizedCondition).ObservedGeneration).To(Equal(got.Generation))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Expect(host(g).Spec.Online).To(BeTrue(), "a paused claim's power is not synced")
	g.Expect(host(g).Annotations).NotTo(HaveKey(hostclaim.RebootAnnotationPrefix + "/while-paused"))

	// Resumed: the binder's pause goes, the claim's changes follow.
	p.updateClaim(t, c, func(c *bmov1alpha1.HostClaim) {
		delete(c.Annotations, hostclaim.PausedAnnotation)
		delete(c.Annotations, hostclaim.RebootAnnotationPrefix+"/while-paused")
	})
	g.Eventually(func(g Gomega) {
		h := host(g)
		g.Expect(h.Annotations).NotTo(HaveKey(bmov1alpha1.PausedAnnotation))
		g.Expect(h.Spec.Online).To(BeFalse())
		g.Expect(condition(p.getClaim(g, c), bmov1alpha1.SynchronizedCondition).Reason).To(Equal(bmov1alpha1.ConfigurationSyncedReason))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	// An operator's pause is never removed by the binder.
	g.Eventually(func() error {
		h := host(g)
		if h.Annotations == nil {
			h.Annotations = map[string]string{}
		}
		h.Annotations[bmov1alpha1.PausedAnnotation] = "operator"
		h.Annotations[hostclaim.RebootAnnotationPrefix+"/operator"] = ""
		return p.env.Client.Update(context.Background(), h)
	}).WithTimeout(10 * time.Second).Should(Succeed())

	// Reboots: mirrored while the claim asks, removed when it stops.
	const reboot = hostclaim.RebootAnnotationPrefix + "/remediation"
	p.updateClaim(t, c, func(c *bmov1alpha1.HostClaim) { c.Annotations[reboot] = `{"mode":"hard"}` })
	g.Eventually(func(g Gomega) {
		annotations := host(g).Annotations
		g.Expect(annotations).To(HaveKeyWithValue(reboot, `{"mode":"hard"}`))
		g.Expect(annotations).To(HaveKeyWithValue(hostclaim.MirroredRebootsAnnotation, reboot))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	p.updateClaim(t, c, func(c *bmov1alpha1.HostClaim) { delete(c.Annotations, reboot) })
	g.Eventually(func(g Gomega) {
		annotations := host(g).Annotations
		g.Expect(annotations).NotTo(HaveKey(reboot))
		g.Expect(annotations).NotTo(HaveKey(hostclaim.MirroredRebootsAnnotation))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	annotations := host(g).Annotations
	g.Expect(annotations).To(HaveKeyWithValue(bmov1alpha1.PausedAnnotation, "operator"), "the operator's pause stays")
	g.Expect(annotations).To(HaveKey(hostclaim.RebootAnnotationPrefix+"/operator"), "the operator's reboot stays")

	// The attack: the tenant asks on its claim for the operator's own
	// reboot annotation, then drops it, to have the binder remove the
	// operator's and power the host the operator is holding off back on.
	const operators = hostclaim.RebootAnnotationPrefix + "/operator"
	p.updateClaim(t, c, func(c *bmov1alpha1.HostClaim) { c.Annotations[operators] = `{"mode":"soft"}` })
	g.Eventually(func(g Gomega) {
		got := p.getClaim(g, c)
		g.Expect(condition(got, bmov1alpha1.SynchronizedCondition).ObservedGeneration).To(Equal(got.Generation))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	p.updateClaim(t, c, func(c *bmov1alpha1.HostClaim) { delete(c.Annotations, operators) })
	g.Consistently(func(g Gomega) {
		annotations := host(g).Annotations
		g.Expect(annotations).To(HaveKeyWithValue(operators, ""), "the operator's reboot is neither taken over nor removed")
		g.Expect(annotations).NotTo(HaveKey(hostclaim.MirroredRebootsAnnotation))
	}).WithTimeout(3 * time.Second).Should(Succeed())
}

// withKey gives a claim the node reuse key, asking to keep its host for it
// when released if keep.
func withKey(key string, keep bool) func(*bmov1alpha1.HostClaim) {
	return func(c *bmov1alpha1.HostClaim) {
		c.Annotations[hostclaim.NodeReuseKeyAnnotation] = key
		if keep {
			c.Annotations[hostclaim.KeepOnReleaseAnnotation] = "true"
		}
	}
}

// TestNodeReuse: a claim released with keep-on-release leaves its host
// kept for its key; the next claim with that key waits for that host while
// it is deprovisioned, rather than take another available one, and gets
// it. A reservation no claim carries the key of ends after the grace.
func TestNodeReuse(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	g := NewWithT(t)
	ctx := context.Background()
	tenant := p.namespace(t, "tenant", nil)
	poolNS := p.hosts(t, 2, &bmov1alpha1.HostClaimNamespaces{Names: []string{tenant}})
	first := p.claim(t, tenant, "first", "", withImage, withKey("cluster/md", true))
	kept := p.boundHost(t, first, 60*time.Second)
	g.Eventually(func() bmov1alpha1.ProvisioningState {
		return p.getHost(g, poolNS, kept.Name).Status.Provisioning.State
	}).WithTimeout(75 * time.Second).WithPolling(500 * time.Millisecond).Should(Equal(bmov1alpha1.StateProvisioned))

	// The next claim with the key, created right after the first was
	// deleted, must wait for the host being deprovisioned, the other one
	// being free all along.
	g.Expect(p.env.Client.Delete(ctx, first)).To(Succeed())
	second := p.claim(t, tenant, "second", "", withKey("cluster/md", false))
	g.Eventually(func(g Gomega) {
		h := p.getHost(g, poolNS, kept.Name)
		g.Expect(h.Annotations).To(HaveKeyWithValue(hostclaim.KeptForAnnotation, tenant+"/cluster/md"),
			"marked kept when deprovisioning starts")
		g.Expect(h.Spec.Image).To(BeNil(), "deprovisioning")
	}).WithTimeout(20 * time.Second).Should(Succeed())
	host := p.boundHost(t, second, 90*time.Second)
	g.Expect(host.Name).To(Equal(kept.Name), "the claim with the key gets the host kept for it")
	g.Expect(host.Annotations).NotTo(HaveKey(hostclaim.KeptForAnnotation), "the reservation ends with the binding")
	g.Expect(p.consumers(g, poolNS)).To(HaveLen(1), "the other host, free all along, was not taken")

	// Released for a key nobody carries: freed after the grace.
	p.updateClaim(t, second, withKey("cluster/gone", true))
	g.Expect(p.env.Client.Delete(ctx, second)).To(Succeed())
	g.Eventually(func(g Gomega) {
		h := p.getHost(g, poolNS, kept.Name)
		g.Expect(h.Spec.ConsumerRef).To(BeNil())
		g.Expect(h.Annotations).To(HaveKeyWithValue(hostclaim.KeptForAnnotation, tenant+"/cluster/gone"))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		h := p.getHost(g, poolNS, kept.Name)
		g.Expect(h.Annotations).NotTo(HaveKey(hostclaim.KeptForAnnotation))
		g.Expect(h.Annotations).NotTo(HaveKey(hostclaim.KeptSinceAnnotation))
	}).WithTimeout(nodeReuseGrace + 30*time.Second).Should(Succeed())
}

// updateHost changes the host, retrying on conflicts with BMO and the
// binder, as a pool admin's edit would.
func (p *poolEnv) updateHost(t *testing.T, namespace, name string, change func(*bmov1alpha1.BareMetalHost)) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) error {
		got := p.getHost(g, namespace, name)
		if got.Annotations == nil {
			got.Annotations = map[string]string{}
		}
		change(got)
		return p.env.Client.Update(context.Background(), got)
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// TestUnhealthyHostLeavesPool: remediation's unhealthy mark on a claim,
// under either name (here the deprecated one an older provider writes), is
// carried to its host at once under upstream CAPM3 v1.13+'s name, stays
// when the claim goes (even one asking to keep its host for node reuse),
// and no claim is bound to that host, not even one of the node reuse key,
// which takes another host instead; nor to a host the pool admin marked
// under the deprecated name, whose mark the binder never removes. Once the
// admin clears the binder's mark, the host serves claims again and the
// namespace has its allowance of marks back.
func TestUnhealthyHostLeavesPool(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	g := NewWithT(t)
	ctx := context.Background()
	tenant := p.namespace(t, "tenant", nil)
	poolNS := p.hosts(t, 3, &bmov1alpha1.HostClaimNamespaces{Names: []string{tenant}})
	// Marked before any claim exists, as upstream CAPM3 before v1.13 (or
	// an admin following its guide) marks a host.
	const adminMarked = "node-2"
	p.updateHost(t, poolNS, adminMarked, func(h *bmov1alpha1.BareMetalHost) {
		h.Annotations[hostclaim.DeprecatedUnhealthyAnnotation] = "admin"
	})
	first := p.claim(t, tenant, "first", "", withKey("cluster/md", true))
	sick := p.boundHost(t, first, 60*time.Second)
	g.Expect(sick.Name).NotTo(Equal(adminMarked))

	p.updateClaim(t, first, func(c *bmov1alpha1.HostClaim) { c.Annotations[hostclaim.DeprecatedUnhealthyAnnotation] = "" })
	g.Eventually(func(g Gomega) {
		g.Expect(p.getHost(g, poolNS, sick.Name).Annotations).To(And(
			HaveKeyWithValue(hostclaim.UnhealthyAnnotation, pool.UnhealthyValue),
			Not(HaveKey(hostclaim.DeprecatedUnhealthyAnnotation)),
			HaveKeyWithValue(hostclaim.UnhealthyMarkedByAnnotation, tenant)))
	}).WithTimeout(20*time.Second).Should(Succeed(), "the mark is on the host, under the new name, while the claim holds it")

	g.Expect(p.env.Client.Delete(ctx, first)).To(Succeed())
	g.Eventually(func(g Gomega) {
		h := p.getHost(g, poolNS, sick.Name)
		g.Expect(h.Spec.ConsumerRef).To(BeNil(), "released")
		g.Expect(h.Annotations).To(HaveKey(hostclaim.UnhealthyAnnotation), "and still marked")
		g.Expect(h.Annotations).NotTo(HaveKey(hostclaim.KeptForAnnotation), "kept for nobody")
	}).WithTimeout(60 * time.Second).Should(Succeed())

	second := p.claim(t, tenant, "second", "", withKey("cluster/md", false))
	healthy := p.boundHost(t, second, 60*time.Second)
	g.Expect(healthy.Name).NotTo(Or(Equal(sick.Name), Equal(adminMarked)), "the key's next claim takes the healthy host")
	third := p.claim(t, tenant, "third", "")
	g.Eventually(func(g Gomega) {
		associated := condition(p.getClaim(g, third), bmov1alpha1.AssociatedCondition)
		g.Expect(associated.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(associated.Message).To(ContainSubstring("2 marked unhealthy"))
	}).WithTimeout(20*time.Second).Should(Succeed(), "the marked hosts are no claim's, and the claim left waiting is told why")
	g.Expect(p.getHost(g, poolNS, sick.Name).Spec.ConsumerRef).To(BeNil())
	g.Expect(p.getHost(g, poolNS, adminMarked).Spec.ConsumerRef).To(BeNil())

	// The admin, having repaired the host, removes the mark the binder set
	// and nothing else.
	p.updateHost(t, poolNS, sick.Name, func(h *bmov1alpha1.BareMetalHost) {
		delete(h.Annotations, hostclaim.UnhealthyAnnotation)
	})
	g.Expect(p.boundHost(t, third, 60*time.Second).Name).To(Equal(sick.Name), "the repaired host serves the waiting claim")
	g.Expect(p.getHost(g, poolNS, sick.Name).Annotations).NotTo(HaveKey(hostclaim.UnhealthyMarkedByAnnotation),
		"and no longer counts against the namespace")
	p.updateClaim(t, second, func(c *bmov1alpha1.HostClaim) { c.Annotations[hostclaim.UnhealthyAnnotation] = "" })
	g.Eventually(func(g Gomega) {
		g.Expect(p.getHost(g, poolNS, healthy.Name).Annotations).To(HaveKeyWithValue(hostclaim.UnhealthyMarkedByAnnotation, tenant))
	}).WithTimeout(20*time.Second).Should(Succeed(), "the namespace's allowance (1) is back: its next mark is carried")
	g.Expect(p.getHost(g, poolNS, adminMarked).Annotations).To(HaveKeyWithValue(hostclaim.DeprecatedUnhealthyAnnotation, "admin"),
		"the admin's mark stays")
}

// TestUnhealthyMarksPerNamespace plays a tenant that marks every host it
// holds unhealthy on its claims, to take them out of the pool for good:
// the binder carries the marks of one namespace to as many hosts as the
// pool allows (1 here), tells the claim beyond that, and that claim's host
// goes back to the pool when released.
func TestUnhealthyMarksPerNamespace(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	g := NewWithT(t)
	ctx := context.Background()
	tenant := p.namespace(t, "tenant", nil)
	poolNS := p.hosts(t, 2, &bmov1alpha1.HostClaimNamespaces{Names: []string{tenant}})
	first := p.claim(t, tenant, "first", "")
	second := p.claim(t, tenant, "second", "")
	firstHost, secondHost := p.boundHost(t, first, 60*time.Second), p.boundHost(t, second, 60*time.Second)

	p.updateClaim(t, first, func(c *bmov1alpha1.HostClaim) { c.Annotations[hostclaim.UnhealthyAnnotation] = "" })
	g.Eventually(func(g Gomega) {
		g.Expect(p.getHost(g, poolNS, firstHost.Name).Annotations).To(And(
			HaveKey(hostclaim.UnhealthyAnnotation), HaveKeyWithValue(hostclaim.UnhealthyMarkedByAnnotation, tenant)))
	}).WithTimeout(20*time.Second).Should(Succeed(), "the first mark is carried")
	p.updateClaim(t, second, func(c *bmov1alpha1.HostClaim) { c.Annotations[hostclaim.UnhealthyAnnotation] = "" })
	g.Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(p.env.Client.List(ctx, events, client.InNamespace(tenant))).To(Succeed())
		var refused []string
		for _, e := range events.Items {
			if e.Reason == hostclaim.UnhealthyMarkRefusedReason {
				refused = append(refused, e.Regarding.Name)
			}
		}
		g.Expect(refused).To(ConsistOf(second.Name))
	}).WithTimeout(20*time.Second).Should(Succeed(), "the second claim is told its mark is refused")
	g.Expect(p.getHost(g, poolNS, secondHost.Name).Annotations).NotTo(HaveKey(hostclaim.UnhealthyAnnotation))

	g.Expect(p.env.Client.Delete(ctx, second)).To(Succeed())
	g.Eventually(func(g Gomega) {
		h := p.getHost(g, poolNS, secondHost.Name)
		g.Expect(h.Spec.ConsumerRef).To(BeNil())
		g.Expect(h.Annotations).NotTo(HaveKey(hostclaim.UnhealthyAnnotation))
	}).WithTimeout(60*time.Second).Should(Succeed(), "its host goes back to the pool")
	third := p.claim(t, tenant, "third", "")
	g.Expect(p.boundHost(t, third, 60*time.Second).Name).To(Equal(secondHost.Name), "and serves the next claim")
}

// TestDeployPolicy plays a tenant whose claim asks its host to deploy an
// image from a file of the pool's own machines, or a custom deploy method
// the pool admin did not allow: the binder refuses it, says so on the
// claim, and gives the host nothing to deploy.
func TestDeployPolicy(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	tenant := p.namespace(t, "tenant", nil)
	poolNS := p.hosts(t, 3, &bmov1alpha1.HostClaimNamespaces{Names: []string{tenant}})
	tests := []struct {
		name       string
		mutate     func(*bmov1alpha1.HostClaim)
		wantReason string
		wantIn     string
	}{
		{name: "file-image", mutate: func(c *bmov1alpha1.HostClaim) {
			c.Spec.Image = &bmov1alpha1.Image{URL: "file:///var/lib/ironic/images/other-tenant.qcow2", Checksum: testImage.Checksum,
				ChecksumType: bmov1alpha1.SHA256}
		}, wantReason: hostclaim.ImageNotAllowedReason, wantIn: `scheme "file"`},
		{name: "file-checksum", mutate: func(c *bmov1alpha1.HostClaim) {
			c.Spec.Image = &bmov1alpha1.Image{URL: testImage.URL, Checksum: "file:///etc/shadow"}
		}, wantReason: hostclaim.ImageNotAllowedReason, wantIn: "spec.image.checksum"},
		{name: "custom-deploy", mutate: func(c *bmov1alpha1.HostClaim) {
			c.Spec.CustomDeploy = &bmov1alpha1.CustomDeploy{Method: "flash_bmc_firmware"}
		}, wantReason: hostclaim.CustomDeployNotAllowedReason, wantIn: "flash_bmc_firmware"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := p.claim(t, tenant, tt.name, "", tt.mutate)
			host := p.boundHost(t, c, 60*time.Second)
			g.Eventually(func(g Gomega) {
				synced := condition(p.getClaim(g, c), bmov1alpha1.SynchronizedCondition)
				g.Expect(synced.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(synced.Reason).To(Equal(tt.wantReason))
				g.Expect(synced.Message).To(ContainSubstring(tt.wantIn))
			}).WithTimeout(20 * time.Second).Should(Succeed())
			h := p.getHost(g, poolNS, host.Name)
			g.Expect(h.Spec.Image).To(BeNil(), "the host is given nothing to deploy")
			g.Expect(h.Spec.CustomDeploy).To(BeNil())
		})
	}
}

// TestBMCRedactedInAnyCase: a host error quoting the BMC address and
// credentials Secret in another case than the host's spec writes them (as
// drivers do) reaches the tenant's claim without them. The pool's hosts
// here have no BMO: the test writes their status as BMO would.
func TestBMCRedactedInAnyCase(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	g := NewWithT(t)
	ctx := context.Background()
	tenant := p.namespace(t, "tenant", nil)
	poolNS := p.namespace(t, "pool", nil)
	g.Expect(testenv.RegisterHosts(ctx, p.env.Client, poolNS, "node", 1)).To(Succeed())
	g.Expect(p.env.Client.Create(ctx, &bmov1alpha1.HostDeployPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: poolNS, Name: "tenants"},
		Spec:       bmov1alpha1.HostDeployPolicySpec{HostClaimNamespaces: &bmov1alpha1.HostClaimNamespaces{Names: []string{tenant}}},
	})).To(Succeed())
	setStatus := func(change func(*bmov1alpha1.BareMetalHost)) {
		g.Eventually(func() error {
			h := p.getHost(g, poolNS, "node-0")
			change(h)
			return p.env.Client.Status().Update(ctx, h)
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}
	setStatus(func(h *bmov1alpha1.BareMetalHost) {
		h.Status.Provisioning.State = bmov1alpha1.StateAvailable
		h.Status.OperationalStatus = bmov1alpha1.OperationalStatusOK
	})
	c := p.claim(t, tenant, "c", "")
	p.boundHost(t, c, 30*time.Second)
	// The host's BMC is ipmi://192.168.122.1:6230 with Secret node-0-bmc.
	setStatus(func(h *bmov1alpha1.BareMetalHost) {
		h.Status.OperationalStatus = bmov1alpha1.OperationalStatusError
		h.Status.ErrorType = bmov1alpha1.PowerManagementError
		h.Status.ErrorMessage = "IPMI://192.168.122.1:6230 did not answer; credentials NODE-0-BMC rejected"
	})
	g.Eventually(func(g Gomega) {
		healthy := condition(p.getClaim(g, c), hostclaim.HealthyCondition)
		g.Expect(healthy.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(healthy.Message).To(Equal("<BMC> did not answer; credentials <BMC> rejected"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
}
