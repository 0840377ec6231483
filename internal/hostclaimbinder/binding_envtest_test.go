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
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// TestClaimsOfTwoTenantsAreProvisionedAndReleased follows two tenants'
// claims, admitted by one policy, through the real BMO: bound to distinct
// hosts, their data copied next to the hosts and kept in sync, provisioned,
// reported back without a trace of the BMC; then one claim deleted, its
// host deprovisioned and returned to the pool, its copies gone.
func TestClaimsOfTwoTenantsAreProvisionedAndReleased(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	g := NewWithT(t)
	ctx := context.Background()
	tenantA := p.namespace(t, "tenant-a", nil)
	tenantB := p.namespace(t, "tenant-b", nil)
	poolNS := p.hosts(t, 2, &bmov1alpha1.HostClaimNamespaces{Names: []string{tenantA, tenantB}})

	claimA := p.claim(t, tenantA, "worker", "#cloud-config a", withImage)
	claimB := p.claim(t, tenantB, "worker", "#cloud-config b", withImage)

	hostA := p.boundHost(t, claimA, 60*time.Second)
	hostB := p.boundHost(t, claimB, 60*time.Second)
	g.Expect(hostA.Name).NotTo(Equal(hostB.Name), "two claims, two hosts")
	g.Expect(hostA.Namespace).To(Equal(poolNS))

	// The tenant's data is copied next to the host, under a name of the
	// contract, labelled for the claim, owned by the host; the host uses it.
	copyName := hostclaim.SecretCopyName(claimA.Name, p.getClaim(g, claimA).UID, pool.UserDataPurpose)
	g.Eventually(func(g Gomega) {
		host := p.getHost(g, poolNS, hostA.Name)
		g.Expect(host.Spec.UserData).To(Equal(&corev1.SecretReference{Namespace: poolNS, Name: copyName}))
		g.Expect(host.Spec.Image).To(Equal(testImage))
		g.Expect(host.Spec.Online).To(BeTrue())
		copied := &corev1.Secret{}
		g.Expect(p.env.Client.Get(ctx, client.ObjectKey{Namespace: poolNS, Name: copyName}, copied)).To(Succeed())
		g.Expect(copied.Data).To(HaveKeyWithValue("userData", []byte("#cloud-config a")))
		g.Expect(copied.Labels).To(HaveKeyWithValue(hostclaim.ClaimUIDLabel, string(p.getClaim(g, claimA).UID)))
		g.Expect(copied.Annotations).To(HaveKeyWithValue(hostclaim.ClaimAnnotation, tenantA+"/worker"))
		g.Expect(copied.OwnerReferences).To(ConsistOf(HaveField("UID", host.UID)))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// A change of the tenant's Secret reaches the copy.
	source := &corev1.Secret{}
	g.Expect(p.env.Client.Get(ctx, client.ObjectKey{Namespace: tenantA, Name: "worker-userdata"}, source)).To(Succeed())
	source.Data["userData"] = []byte("#cloud-config a, second edition")
	g.Expect(p.env.Client.Update(ctx, source)).To(Succeed())
	g.Eventually(func(g Gomega) []byte {
		copied := &corev1.Secret{}
		g.Expect(p.env.Client.Get(ctx, client.ObjectKey{Namespace: poolNS, Name: copyName}, copied)).To(Succeed())
		return copied.Data["userData"]
	}).WithTimeout(30*time.Second).Should(Equal([]byte("#cloud-config a, second edition")), "the copy follows the tenant's Secret")

	// BMO provisions both hosts; the tenants see it in their claims, with
	// their hosts' hardware in HardwareData copies of their own.
	for _, c := range []*bmov1alpha1.HostClaim{claimA, claimB} {
		g.Eventually(func(g Gomega) {
			got := p.getClaim(g, c)
			g.Expect(got.Finalizers).To(ContainElement(bmov1alpha1.HostClaimFinalizer))
			provisioned := condition(got, hostclaim.ProvisionedCondition)
			g.Expect(provisioned.Status).To(Equal(metav1.ConditionTrue), "Provisioned: %+v", provisioned)
			g.Expect(provisioned.Reason).To(Equal("Provisioned"))
			g.Expect(provisioned.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(condition(got, bmov1alpha1.SynchronizedCondition).Reason).To(Equal(bmov1alpha1.ConfigurationSyncedReason))
			g.Expect(condition(got, hostclaim.HealthyCondition).Reason).To(Equal(hostclaim.HealthyReason))
			g.Expect(got.Status.PoweredOn).To(BeTrue())
			g.Expect(got.Status.LastUpdated).NotTo(BeNil())
			g.Expect(got.Status.HardwareData).To(Equal(&bmov1alpha1.ObjectReference{Namespace: c.Namespace, Name: c.Name}))
			hd := &bmov1alpha1.HardwareData{}
			g.Expect(p.env.Client.Get(ctx, client.ObjectKeyFromObject(c), hd)).To(Succeed())
			g.Expect(hd.Spec.HardwareDetails).NotTo(BeNil())
			g.Expect(hd.Spec.HardwareDetails.NIC).NotTo(BeEmpty(), "the tenant sees its host's NICs")
			g.Expect(hd.OwnerReferences).To(ConsistOf(HaveField("UID", got.UID)))
			for key := range hd.Annotations {
				g.Expect(hostclaim.IsBMOKey(key)).To(BeFalse(), "BMO's annotation %s reached the tenant", key)
			}
			host := p.getHost(g, got.Status.BareMetalHost.Namespace, got.Status.BareMetalHost.Name)
			g.Expect(host.Status.Provisioning.State).To(Equal(bmov1alpha1.StateProvisioned))
		}).WithTimeout(75 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	}

	// Nothing a tenant reads names its host's BMC or its credentials.
	for _, c := range []*bmov1alpha1.HostClaim{claimA, claimB} {
		got := p.getClaim(g, c)
		host := p.getHost(g, got.Status.BareMetalHost.Namespace, got.Status.BareMetalHost.Name)
		g.Expect(host.Spec.BMC.Address).NotTo(BeEmpty())
		hd := &bmov1alpha1.HardwareData{}
		g.Expect(p.env.Client.Get(ctx, client.ObjectKeyFromObject(c), hd)).To(Succeed())
		for what, obj := range map[string]any{"claim": got, "HardwareData copy": hd} {
			data, err := json.Marshal(obj)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(data)).NotTo(ContainSubstring(host.Spec.BMC.Address), "the %s quotes the BMC address", what)
			g.Expect(string(data)).NotTo(ContainSubstring("192.168.122.1"), "the %s quotes the BMC's IP", what)
			g.Expect(string(data)).NotTo(ContainSubstring(host.Spec.BMC.CredentialsName), "the %s names the BMC credentials", what)
		}
	}

	// The metrics say what happened.
	g.Expect(scrape(t, p.metricsAddr)).To(And(
		ContainSubstring("# HELP hostclaim_binder_bindings_total"),
		MatchRegexp(`(?m)^hostclaim_binder_bindings_total [1-9]`),
		ContainSubstring("# HELP hostclaim_binder_claims_waiting"),
		MatchRegexp(`(?m)^hostclaim_binder_claims_bound [1-9]`),
	))

	// Deleting a claim deprovisions its host and gives it back.
	g.Expect(p.env.Client.Delete(ctx, claimA)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := p.env.Client.Get(ctx, client.ObjectKeyFromObject(claimA), &bmov1alpha1.HostClaim{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "claim gone (finalizer removed): %v", err)
	}).WithTimeout(75 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	host := p.getHost(g, poolNS, hostA.Name)
	g.Expect(host.Spec.ConsumerRef).To(BeNil())
	g.Expect(host.Spec.Image).To(BeNil())
	g.Expect(host.Spec.UserData).To(BeNil())
	g.Expect(host.Spec.Online).To(BeFalse())
	g.Expect(host.Annotations).NotTo(HaveKey(hostclaim.KeptForAnnotation), "not kept: the claim did not ask")
	g.Eventually(func() bmov1alpha1.ProvisioningState {
		return p.getHost(g, poolNS, hostA.Name).Status.Provisioning.State
	}).WithTimeout(30*time.Second).Should(Equal(bmov1alpha1.StateAvailable), "the host is back in the pool")
	err := p.env.Client.Get(ctx, client.ObjectKey{Namespace: poolNS, Name: copyName}, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Secret copy is deleted: %v", err)
	err = p.env.Client.Get(ctx, client.ObjectKeyFromObject(claimA), &bmov1alpha1.HardwareData{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the HardwareData copy is deleted: %v", err)
	// The other tenant's claim is untouched.
	g.Expect(condition(p.getClaim(g, claimB), hostclaim.ProvisionedCondition).Status).To(Equal(metav1.ConditionTrue))
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+addr+"/metrics", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read metrics: %v", err)
	}
	return string(body)
}

// TestMoreClaimsThanHosts: three claims, two hosts: two bound, each to its
// own host, and the third waiting, saying why.
func TestMoreClaimsThanHosts(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	g := NewWithT(t)
	tenant := p.namespace(t, "tenant", nil)
	poolNS := p.hosts(t, 2, &bmov1alpha1.HostClaimNamespaces{Names: []string{tenant}})
	claims := []*bmov1alpha1.HostClaim{
		p.claim(t, tenant, "c0", ""), p.claim(t, tenant, "c1", ""), p.claim(t, tenant, "c2", ""),
	}
	g.Eventually(func(g Gomega) {
		bound, waiting := 0, 0
		for _, c := range claims {
			got := p.getClaim(g, c)
			switch associated := condition(got, bmov1alpha1.AssociatedCondition); associated.Reason {
			case bmov1alpha1.BareMetalHostAssociatedReason:
				bound++
			case bmov1alpha1.NoBareMetalHostReason:
				waiting++
				g.Expect(associated.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(associated.Message).To(ContainSubstring("none of the 2 hosts in the admitted namespaces (" + poolNS + ")"))
				g.Expect(associated.Message).To(ContainSubstring("2 in use"))
				g.Expect(condition(got, hostclaim.ProvisionedCondition).Reason).To(Equal(hostclaim.WaitingForHostReason))
				g.Expect(got.Status.BareMetalHost).To(BeNil())
			}
		}
		g.Expect(bound).To(Equal(2))
		g.Expect(waiting).To(Equal(1))
		g.Expect(p.consumers(g, poolNS)).To(HaveLen(2), "both hosts bound, to two claims")
	}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	consumers := p.consumers(g, poolNS)
	g.Expect(consumers["node-0"]).NotTo(Equal(consumers["node-1"]), "no claim has two hosts")
}

// TestNamespaceNotAdmitted: a claim of a namespace no policy admits gets no
// host and says so. If a host is bound to it all the same (the binder
// crashed between binding and writing the status, say), the claim finds it
// by its consumerRef.
func TestNamespaceNotAdmitted(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	g := NewWithT(t)
	ctx := context.Background()
	admitted := p.namespace(t, "admitted", nil)
	outsider := p.namespace(t, "outsider", nil)
	poolNS := p.hosts(t, 1, &bmov1alpha1.HostClaimNamespaces{Names: []string{admitted}, NameMatches: "admitted-.*"})
	c := p.claim(t, outsider, "c", "")
	g.Eventually(func(g Gomega) {
		associated := condition(p.getClaim(g, c), bmov1alpha1.AssociatedCondition)
		g.Expect(associated.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(associated.Reason).To(Equal(hostclaim.NamespaceNotAdmittedReason))
		g.Expect(associated.Message).To(ContainSubstring(outsider))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(p.consumers(g, poolNS)).To(BeEmpty())

	// Bound by hand, as a crash after the binding would leave it.
	got := p.getClaim(g, c)
	g.Eventually(func() error {
		host := p.getHost(g, poolNS, "node-0")
		host.Spec.ConsumerRef = claimRef(got)
		return p.env.Client.Update(ctx, host)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	host := p.boundHost(t, c, 30*time.Second)
	g.Expect(host.Name).To(Equal("node-0"))
}

// TestEmptyNamesAdmitNone: a policy listing names: [] lists no namespace,
// so it admits none; a pool admin who emptied the list closed the hosts.
// Written as YAML is written: a typed client would drop the empty list.
func TestEmptyNamesAdmitNone(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	g := NewWithT(t)
	ctx := context.Background()
	tenant := p.namespace(t, "tenant", nil)
	poolNS := p.namespace(t, "pool", nil)
	g.Expect(testenv.RegisterHosts(ctx, p.env.Client, poolNS, "node", 1)).To(Succeed())
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": bmov1alpha1.GroupVersion.String(), "kind": "HostDeployPolicy",
		"metadata": map[string]any{"namespace": poolNS, "name": "nobody"},
		"spec":     map[string]any{"hostClaimNamespaces": map[string]any{"names": []any{}}},
	}}
	g.Expect(p.env.Client.Create(ctx, policy)).To(Succeed())
	c := p.claim(t, tenant, "c", "")
	g.Eventually(func(g Gomega) {
		associated := condition(p.getClaim(g, c), bmov1alpha1.AssociatedCondition)
		g.Expect(associated.Reason).To(Equal(hostclaim.NamespaceNotAdmittedReason))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(p.consumers(g, poolNS)).To(BeEmpty())
}

// TestAdmissionByNamespaceLabel: a policy admitting by label admits a
// namespace once it is labelled.
func TestAdmissionByNamespaceLabel(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	g := NewWithT(t)
	ctx := context.Background()
	tenant := p.namespace(t, "labelled", nil)
	key := "tenant.example.com/" + tenant // unique to this test
	p.hosts(t, 1, &bmov1alpha1.HostClaimNamespaces{HasLabels: []bmov1alpha1.NameValuePair{{Name: key, Value: "yes"}}})
	c := p.claim(t, tenant, "c", "")
	g.Eventually(func() string {
		return condition(p.getClaim(g, c), bmov1alpha1.AssociatedCondition).Reason
	}).WithTimeout(30 * time.Second).Should(Equal(hostclaim.NamespaceNotAdmittedReason))

	ns := &corev1.Namespace{}
	g.Expect(p.env.Client.Get(ctx, client.ObjectKey{Name: tenant}, ns)).To(Succeed())
	ns.Labels = map[string]string{key: "yes"}
	g.Expect(p.env.Client.Update(ctx, ns)).To(Succeed())
	p.boundHost(t, c, 60*time.Second)
}

// TestSecretOfAnotherNamespaceIsRefused: a claim may only hand over the
// Secrets of its own namespace; its host is bound but given nothing to
// provision.
func TestSecretOfAnotherNamespaceIsRefused(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	g := NewWithT(t)
	tenant := p.namespace(t, "tenant", nil)
	victim := p.namespace(t, "victim", nil)
	p.hosts(t, 1, &bmov1alpha1.HostClaimNamespaces{Names: []string{tenant}})
	c := p.claim(t, tenant, "c", "", withImage, func(c *bmov1alpha1.HostClaim) {
		c.Spec.NetworkData = &corev1.SecretReference{Namespace: victim, Name: "secret"}
	})
	host := p.boundHost(t, c, 60*time.Second)
	g.Eventually(func(g Gomega) {
		synced := condition(p.getClaim(g, c), bmov1alpha1.SynchronizedCondition)
		g.Expect(synced.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(synced.Reason).To(Equal(bmov1alpha1.BadNetworkDataSecretReason))
		g.Expect(synced.Message).To(And(ContainSubstring(victim+"/secret"), ContainSubstring("not in the claim's namespace")))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	h := p.getHost(g, host.Namespace, host.Name)
	g.Expect(h.Spec.Image).To(BeNil(), "not provisioned without the claim's data")
	g.Expect(h.Spec.NetworkData).To(BeNil())
}

// TestClaimWaitsForItsSecret: the provider creates a claim with its image
// and the name of its user-data Secret, and writes the Secret right after.
// A claim seen before its Secret is bound but its host is not given the
// image (never provisioned without the tenant's data), and the binder says
// it waits, not that it failed: no Warning, a reason the provider does not
// report as a host error. The Secret's creation alone brings the claim back
// and its host is provisioned.
func TestClaimWaitsForItsSecret(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	g := NewWithT(t)
	ctx := context.Background()
	tenant := p.namespace(t, "tenant", nil)
	poolNS := p.hosts(t, 1, &bmov1alpha1.HostClaimNamespaces{Names: []string{tenant}})
	c := p.claim(t, tenant, "worker", "", withImage, func(c *bmov1alpha1.HostClaim) {
		c.Spec.UserData = &corev1.SecretReference{Name: "worker-userdata"}
	})
	host := p.boundHost(t, c, 60*time.Second)
	g.Eventually(func(g Gomega) {
		synced := condition(p.getClaim(g, c), bmov1alpha1.SynchronizedCondition)
		g.Expect(synced.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(synced.Reason).To(Equal(hostclaim.WaitingForSecretReason))
		g.Expect(synced.Message).To(ContainSubstring("worker-userdata"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(p.getHost(g, poolNS, host.Name).Spec.Image).To(BeNil(), "not provisioned without the claim's data")
	events := &eventsv1.EventList{}
	g.Expect(p.env.Client.List(ctx, events, client.InNamespace(tenant))).To(Succeed())
	for _, e := range events.Items {
		g.Expect(e.Type).NotTo(Equal(corev1.EventTypeWarning), "Event %s: %s", e.Reason, e.Note)
	}

	g.Expect(p.env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "worker-userdata"},
		Data:       map[string][]byte{"userData": []byte("#cloud-config")},
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(condition(p.getClaim(g, c), bmov1alpha1.SynchronizedCondition).Reason).To(Equal(bmov1alpha1.ConfigurationSyncedReason))
		h := p.getHost(g, poolNS, host.Name)
		g.Expect(h.Spec.Image).To(Equal(testImage))
		g.Expect(h.Spec.UserData).NotTo(BeNil())
	}).WithTimeout(30*time.Second).Should(Succeed(), "the Secret's creation brings the claim back")
}

// TestHardwareDataNotTheBindersIsLeftAlone: a HardwareData named after a
// claim that the binder did not write (the tenant made it first) is neither
// overwritten nor pointed to, and the claim is still bound and provisioned.
// The binder caches its own copies only, so it learns of this one from the
// server when creating its copy fails.
func TestHardwareDataNotTheBindersIsLeftAlone(t *testing.T) {
	t.Parallel()
	p := testPool(t)
	g := NewWithT(t)
	ctx := context.Background()
	tenant := p.namespace(t, "tenant", nil)
	p.hosts(t, 1, &bmov1alpha1.HostClaimNamespaces{Names: []string{tenant}})
	foreign := &bmov1alpha1.HardwareData{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "c"},
		Spec:       bmov1alpha1.HardwareDataSpec{HardwareDetails: &bmov1alpha1.HardwareDetails{Hostname: "made-up"}},
	}
	g.Expect(p.env.Client.Create(ctx, foreign)).To(Succeed())

	c := p.claim(t, tenant, "c", "#cloud-config", withImage)
	p.boundHost(t, c, 60*time.Second)
	g.Eventually(func(g Gomega) {
		got := p.getClaim(g, c)
		g.Expect(condition(got, hostclaim.ProvisionedCondition).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(got.Status.HardwareData).To(BeNil(), "the claim points at a HardwareData the binder did not write")
	}).WithTimeout(75 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	got := &bmov1alpha1.HardwareData{}
	g.Expect(p.env.Client.Get(ctx, client.ObjectKeyFromObject(foreign), got)).To(Succeed())
	g.Expect(got.ResourceVersion).To(Equal(foreign.ResourceVersion), "the tenant's HardwareData was written over")
	g.Expect(got.Labels).NotTo(HaveKey(hostclaim.ClaimUIDLabel))
}
