//go:build e2e

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

package e2e

import (
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
)

var _ = Describe("A cluster in HostClaim mode", func() {
	It("runs on hosts its identity cannot see, bound by the pool's binder, and gives them back when deleted", func() {
		const hostNamespace, tenantNamespace = "claim-hosts", "claim-tenant"
		Expect(environment.AddClaimPool(ctx, GinkgoT(), environment.Pool, hostNamespace, tenantNamespace, 3)).To(Succeed())
		identity := environment.ClaimTenantKubeconfig(GinkgoT(), tenantNamespace, "capm3-claims")
		c := newTenant(environment.Management, management, env.ClusterSpec{
			Namespace: "claimers", Name: "claimer", Identity: identity, Workers: 1, HostMode: infrav1.HostModeHostClaim,
		}, environment.Pool.Client, hostNamespace)
		c.waitMachinesRunning(2)

		By("Checking that each machine runs on the host its own claim is bound to, and its Node names the claim")
		Eventually(func(g Gomega) { c.expectClaimsBound(g, 2) }).Should(Succeed())

		By("Checking that the tenant's identity reads its claims, and no host nor any Secret next to them")
		config, err := clientcmd.RESTConfigFromKubeConfig(identity)
		Expect(err).NotTo(HaveOccurred())
		tenant, err := client.New(config, client.Options{Scheme: env.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		claims := &bmov1alpha1.HostClaimList{}
		Expect(tenant.List(ctx, claims, client.InNamespace(tenantNamespace))).To(Succeed())
		Expect(claims.Items).To(HaveLen(2))
		err = tenant.List(ctx, &bmov1alpha1.BareMetalHostList{}, client.InNamespace(hostNamespace))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "listing the hosts: %v", err)
		host := c.boundHosts(Default)[0]
		err = tenant.Get(ctx, client.ObjectKey{Namespace: hostNamespace, Name: host.Spec.BMC.CredentialsName}, &corev1.Secret{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "reading a BMC credentials Secret: %v", err)

		By("Scaling the workers up to the pool's last host")
		framework.ScaleAndWaitMachineDeployment(ctx, framework.ScaleAndWaitMachineDeploymentInput{
			ClusterProxy: management, Cluster: c.cluster(), MachineDeployment: c.machineDeployment(), Replicas: 2,
			WaitForMachineDeployments: intervals("wait-machines-running"),
		})
		c.waitMachinesRunning(3)
		Eventually(func(g Gomega) { c.expectClaimsBound(g, 3) }).Should(Succeed())

		c.deleteAndWaitReleased()
		c.expectNoClaimLeft(tenantNamespace)
	})

	It("works without identityRef, with hosts and claims in the management cluster", func() {
		const hostNamespace, tenantNamespace = "local-claim-hosts", "local-claimers"
		mgmt := environment.Management
		Expect(environment.AddClaimPool(ctx, GinkgoT(), mgmt.Env, hostNamespace, tenantNamespace, 2)).To(Succeed())
		c := newTenant(mgmt, management, env.ClusterSpec{
			Namespace: tenantNamespace, Name: "local-claimer", Workers: 1, HostMode: infrav1.HostModeHostClaim,
		}, mgmt.Client, hostNamespace)
		c.waitMachinesRunning(2)
		Eventually(func(g Gomega) { c.expectClaimsBound(g, 2) }).Should(Succeed())

		By("Pausing the Cluster: its claims pause, and the binder pauses their hosts")
		c.setPaused(true)
		Eventually(func(g Gomega) { c.expectClaimsPaused(g, tenantNamespace, true) }).Should(Succeed())
		c.setPaused(false)
		Eventually(func(g Gomega) { c.expectClaimsPaused(g, tenantNamespace, false) }).Should(Succeed())

		c.deleteAndWaitReleased()
		c.expectNoClaimLeft(tenantNamespace)
	})
})

// setPaused sets the Cluster's spec.paused, as clusterctl move does.
func (c *tenantCluster) setPaused(paused bool) {
	GinkgoHelper()
	cluster := c.cluster()
	patch := client.MergeFrom(cluster.DeepCopy())
	cluster.Spec.Paused = ptr.To(paused)
	Expect(c.proxy.GetClient().Patch(ctx, cluster, patch)).To(Succeed())
}

// expectClaimsPaused checks that every claim of claimNamespace, and the
// host it is bound to, is paused (by the provider, by the binder) or not.
func (c *tenantCluster) expectClaimsPaused(g Gomega, claimNamespace string, paused bool) {
	claims := &bmov1alpha1.HostClaimList{}
	g.Expect(c.hosts.List(ctx, claims, client.InNamespace(claimNamespace))).To(Succeed())
	g.Expect(claims.Items).NotTo(BeEmpty())
	for _, claim := range claims.Items {
		ref := claim.Status.BareMetalHost
		g.Expect(ref).NotTo(BeNil())
		host := &bmov1alpha1.BareMetalHost{}
		g.Expect(c.hosts.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, host)).To(Succeed())
		if paused {
			g.Expect(claim.Annotations).To(HaveKey(hostclaim.PausedAnnotation), "claim %s", claim.Name)
			g.Expect(host.Annotations).To(HaveKeyWithValue(hostclaim.PausedAnnotation, hostclaim.PausedByBinder), "host %s", host.Name)
		} else {
			g.Expect(claim.Annotations).NotTo(HaveKey(hostclaim.PausedAnnotation), "claim %s", claim.Name)
			g.Expect(host.Annotations).NotTo(HaveKey(hostclaim.PausedAnnotation), "host %s", host.Name)
		}
	}
}

// expectNoClaimLeft waits until nothing of the cluster's claims, in
// claimNamespace, is left where its hosts are: no claim, no HardwareData
// copy, no Secret beside a claim or copied next to a host.
func (c *tenantCluster) expectNoClaimLeft(claimNamespace string) {
	GinkgoHelper()
	By("Checking that nothing of " + c.name + "'s claims is left")
	Eventually(func(g Gomega) {
		claims := &bmov1alpha1.HostClaimList{}
		g.Expect(c.hosts.List(ctx, claims, client.InNamespace(claimNamespace))).To(Succeed())
		g.Expect(claims.Items).To(BeEmpty(), "no HostClaim")
		hardware := &bmov1alpha1.HardwareDataList{}
		g.Expect(c.hosts.List(ctx, hardware, client.InNamespace(claimNamespace))).To(Succeed())
		g.Expect(hardware.Items).To(BeEmpty(), "no HardwareData copy")
		labels := map[string]string{claimNamespace: hostbinding.OwnerUIDLabel}
		for _, ns := range c.hostNamespaces {
			labels[ns] = hostclaim.ClaimUIDLabel
		}
		for ns, label := range labels {
			secrets := &corev1.SecretList{}
			g.Expect(c.hosts.List(ctx, secrets, client.InNamespace(ns), client.HasLabels{label})).To(Succeed())
			g.Expect(secrets.Items).To(BeEmpty(), "no Secret labelled %s in %s", label, ns)
		}
	}, intervals("wait-hosts-available")...).Should(Succeed())
}

// expectClaimsBound checks that the cluster has want machines, each with
// its own HostClaim bound to a provisioned host, the host's Secrets copied
// next to it for that claim, and the machine's providerID naming the claim.
func (c *tenantCluster) expectClaimsBound(g Gomega, want int) {
	m3ms := &infrav1.Metal3MachineList{}
	g.Expect(c.proxy.GetClient().List(ctx, m3ms, client.InNamespace(c.namespace))).To(Succeed())
	g.Expect(m3ms.Items).To(HaveLen(want))
	hosts := map[string]bool{}
	for _, m3m := range m3ms.Items {
		claimKey := m3m.Annotations[infrav1.HostClaimAnnotation]
		namespace, name, ok := strings.Cut(claimKey, "/")
		g.Expect(ok).To(BeTrue(), "Metal3Machine %s records its claim", m3m.Name)
		g.Expect(m3m.Spec.ProviderID).To(Equal("metal3://" + claimKey + "/" + m3m.Name))
		claim := &bmov1alpha1.HostClaim{}
		g.Expect(c.hosts.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, claim)).To(Succeed())
		ref := claim.Status.BareMetalHost
		g.Expect(ref).NotTo(BeNil(), "HostClaim %s is bound", claimKey)
		g.Expect(hosts).NotTo(HaveKey(ref.Name), "host %s has two claims", ref.Name)
		hosts[ref.Name] = true
		host := &bmov1alpha1.BareMetalHost{}
		g.Expect(c.hosts.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, host)).To(Succeed())
		g.Expect(host.Spec.ConsumerRef).NotTo(BeNil())
		g.Expect(host.Spec.ConsumerRef.UID).To(Equal(claim.UID), "host %s is the claim's", host.Name)
		g.Expect(host.Status.Provisioning.State).To(Equal(bmov1alpha1.StateProvisioned))
		g.Expect(host.Spec.UserData).NotTo(BeNil())
		secret := &corev1.Secret{}
		g.Expect(c.hosts.Get(ctx, client.ObjectKey{Namespace: host.Namespace, Name: host.Spec.UserData.Name}, secret)).To(Succeed())
		g.Expect(secret.Labels).To(HaveKeyWithValue(hostclaim.ClaimUIDLabel, string(claim.UID)), "the user data next to host %s is its claim's", host.Name)
	}
}
