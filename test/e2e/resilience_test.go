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
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// expectOneHostPerMachine checks that no host is bound twice: every bound
// host has its own consumer, and there are want of them.
func expectOneHostPerMachine(g Gomega, c *tenantCluster, want int) {
	consumers := map[string]string{}
	for _, h := range c.boundHosts(g) {
		ref := h.Spec.ConsumerRef
		key := ref.Namespace + "/" + ref.Name
		g.Expect(consumers).NotTo(HaveKey(key), "%s is bound to %s and %s", key, consumers[key], h.Name)
		consumers[key] = h.Name
	}
	g.Expect(consumers).To(HaveLen(want))
}

var _ = Describe("Resilience", func() {
	It("converges when the identity is rotated to another ServiceAccount while the workers scale up", func() {
		const poolNamespace = "pool-rotate"
		Expect(env.CreateNamespace(ctx, environment.Pool.Client, poolNamespace)).To(Succeed())
		Expect(env.AddHosts(ctx, environment.Pool.Client, poolNamespace, poolNamespace, 4)).To(Succeed())
		first := environment.Pool.ServiceAccountKubeconfig(GinkgoT(), poolNamespace, "capm3-first", time.Hour, testenv.HostProviderRules()...)
		c := newTenant(environment.Management, management,
			env.ClusterSpec{Namespace: "tenant-r", Name: "rotate", Identity: first, Workers: 0},
			environment.Pool.Client, poolNamespace)
		c.waitMachinesRunning(1)

		By("Scaling the workers 0→3 and, meanwhile, rotating the identity")
		md := c.machineDeployment()
		patch := client.MergeFrom(md.DeepCopy())
		md.Spec.Replicas = ptr.To[int32](3)
		Expect(management.GetClient().Patch(ctx, md, patch)).To(Succeed())
		second := environment.Pool.ServiceAccountKubeconfig(GinkgoT(), poolNamespace, "capm3-second", time.Hour, testenv.HostProviderRules()...)
		secret := &corev1.Secret{}
		Expect(management.GetClient().Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: "rotate-pool-identity"}, secret)).To(Succeed())
		secret.Data["kubeconfig"] = second
		Expect(management.GetClient().Update(ctx, secret)).To(Succeed())
		Expect(environment.Pool.Client.Delete(ctx, &corev1.ServiceAccount{
			ObjectMeta: metav1.ObjectMeta{Namespace: poolNamespace, Name: "capm3-first"},
		})).To(Succeed())

		c.waitMachinesRunning(4)
		Eventually(func(g Gomega) { expectOneHostPerMachine(g, c, 4) }).Should(Succeed())
		c.deleteAndWaitReleased()
	})

	It("converges after the pool's API server goes down mid-provisioning and comes back", func() {
		kubeconfig, err := environment.AddPool(ctx, GinkgoT(), "pool-outage", "tenant-o", 4)
		Expect(err).NotTo(HaveOccurred())
		c := newTenant(environment.Management, management,
			env.ClusterSpec{Namespace: "tenant-o", Name: "outage", Identity: kubeconfig, Workers: 2},
			environment.Pool.Client, "pool-outage")

		By("Waiting for a host to be provisioning")
		Eventually(func(g Gomega) {
			provisioning := 0
			for _, h := range c.boundHosts(g) {
				if h.Status.Provisioning.State == bmov1alpha1.StateProvisioning {
					provisioning++
				}
			}
			g.Expect(provisioning).To(BeNumerically(">", 0))
		}, intervals("wait-machines-running")...).Should(Succeed())

		By("Stopping the pool's API server for a while")
		restart := environment.StopPool()
		time.Sleep(20 * time.Second) // the outage itself, not a wait for a result
		restart()

		c.waitMachinesRunning(3)
		Eventually(func(g Gomega) {
			expectOneHostPerMachine(g, c, 3)
			c.expectSecretsNextToHosts(g)
			secrets := &corev1.SecretList{}
			g.Expect(environment.Pool.Client.List(ctx, secrets, client.InNamespace("pool-outage"), client.HasLabels{hostbinding.OwnerUIDLabel})).To(Succeed())
			g.Expect(secrets.Items).To(HaveLen(6), "user data and metadata of three hosts: none twice, none orphaned")
		}, intervals("wait-pool-recovery")...).Should(Succeed())
		c.deleteAndWaitReleased()
	})
})
