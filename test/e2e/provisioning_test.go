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
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
)

var _ = Describe("A cluster", func() {
	It("provisions, scales and deletes with in-cluster credentials (hosts in the cluster's namespace)", func() {
		const ns = "in-cluster"
		mgmt := environment.Management
		Expect(env.CreateNamespace(ctx, mgmt.Client, ns)).To(Succeed())
		Expect(env.AddHosts(ctx, mgmt.Client, ns, "local", 3)).To(Succeed())
		Expect(mgmt.CreateCluster(ctx, GinkgoT(), environment.Workload, env.ClusterSpec{Namespace: ns, Name: "local", Workers: 2})).To(Succeed())
		c := &tenantCluster{proxy: management, namespace: ns, name: "local", hosts: mgmt.Client, hostNamespaces: []string{ns}}
		diagnoseOnFailure(mgmt.Name, mgmt.Client, ns)

		c.waitMachinesRunning(3)
		Eventually(c.expectSecretsNextToHosts).Should(Succeed())

		By("Reading the Cluster as v1beta1, through Cluster API's conversion")
		old := &clusterv1beta1.Cluster{}
		Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "local"}, old)).To(Succeed())
		Expect(old.Spec.InfrastructureRef).NotTo(BeNil())
		Expect(old.Spec.InfrastructureRef.Kind).To(Equal("Metal3Cluster"))

		By("Scaling the workers to 1")
		framework.ScaleAndWaitMachineDeployment(ctx, framework.ScaleAndWaitMachineDeploymentInput{
			ClusterProxy: management, Cluster: c.cluster(), MachineDeployment: c.machineDeployment(), Replicas: 1,
			WaitForMachineDeployments: intervals("wait-machines-running"),
		})
		c.waitMachinesRunning(2)
		Eventually(func(g Gomega) { g.Expect(c.boundHosts(g)).To(HaveLen(2)) }, intervals("wait-hosts-available")...).Should(Succeed())

		c.deleteAndWaitReleased()
	})

	It("keeps every host Secret in the pool when its Metal3Cluster has an identityRef", func() {
		kubeconfig, err := environment.AddPool(ctx, GinkgoT(), "pool-a", "tenant-a", 3)
		Expect(err).NotTo(HaveOccurred())
		c := newTenant(environment.Management, management,
			env.ClusterSpec{Namespace: "tenant-a", Name: "remote", Identity: kubeconfig, Workers: 2},
			environment.Pool.Client, "pool-a")

		c.waitMachinesRunning(3)
		Eventually(func(g Gomega) {
			g.Expect(c.boundHosts(g)).To(HaveLen(3))
			c.expectSecretsNextToHosts(g)
		}).Should(Succeed())

		By("Checking that no host Secret is in the tenant's namespace")
		secrets := &corev1.SecretList{}
		Expect(environment.Management.Client.List(ctx, secrets, client.InNamespace("tenant-a"), client.HasLabels{hostbinding.OwnerUIDLabel})).To(Succeed())
		Expect(secrets.Items).To(BeEmpty())

		c.deleteAndWaitReleased()
	})
})
