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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

var _ = Describe("A machine pool with its own identityRef", func() {
	It("takes its hosts from its own pool while the control plane uses the cluster's", func() {
		controlPlanePool, err := environment.AddPool(ctx, GinkgoT(), "pool-cp", "tenant-c-cp", 2)
		Expect(err).NotTo(HaveOccurred())
		workerPool, err := environment.AddPool(ctx, GinkgoT(), "pool-workers", "tenant-c-workers", 3)
		Expect(err).NotTo(HaveOccurred())
		c := newTenant(environment.Management, management, env.ClusterSpec{
			Namespace: "tenant-c", Name: "split", Identity: controlPlanePool, WorkerIdentity: workerPool, Workers: 2,
		}, environment.Pool.Client, "pool-cp", "pool-workers")

		machines := c.waitMachinesRunning(3)
		By("Checking which pool each machine's host is in")
		for _, m := range machines {
			m3m := &infrav1.Metal3Machine{}
			Expect(management.GetClient().Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.InfrastructureRef.Name}, m3m)).To(Succeed())
			hostNamespace, _, _ := strings.Cut(m3m.Annotations[infrav1.HostAnnotation], "/")
			_, controlPlane := m.Labels[clusterv1.MachineControlPlaneLabel]
			if controlPlane {
				Expect(hostNamespace).To(Equal("pool-cp"), "control-plane machine %s", m.Name)
			} else {
				Expect(hostNamespace).To(Equal("pool-workers"), "worker %s", m.Name)
			}
		}
		Eventually(func(g Gomega) {
			hosts := &bmov1alpha1.BareMetalHostList{}
			g.Expect(environment.Pool.Client.List(ctx, hosts, client.InNamespace("pool-cp"))).To(Succeed())
			consumed := 0
			for _, h := range hosts.Items {
				if h.Spec.ConsumerRef != nil {
					consumed++
				}
			}
			g.Expect(consumed).To(Equal(1), "only the control plane takes a host of the control plane's pool")
			c.expectSecretsNextToHosts(g)
		}).Should(Succeed())

		c.deleteAndWaitReleased()
	})
})

var _ = Describe("A cluster whose identityRef names a Metal3ClusterIdentity", func() {
	It("takes its hosts from the pool the platform admin's identity names, and gives them back", func() {
		const tenantNamespace, poolNamespace, identityName = "tenant-platform", "pool-platform", "pool-platform"
		kubeconfig, err := environment.AddPool(ctx, GinkgoT(), poolNamespace, "platform-identity", 2)
		Expect(err).NotTo(HaveOccurred())
		// What the platform admin sets up: the pool's kubeconfig in the
		// provider's namespace, and an identity admitting the tenant.
		mgmt := environment.Management
		Expect(mgmt.Client.Create(ctx, testenv.IdentitySecret("capm3-system", identityName+"-kubeconfig", kubeconfig))).To(Succeed())
		Expect(mgmt.Client.Create(ctx, &infrav1.Metal3ClusterIdentity{
			ObjectMeta: metav1.ObjectMeta{Name: identityName},
			Spec: infrav1.Metal3ClusterIdentitySpec{
				SecretRef:         infrav1.KubeconfigSecretReference{Name: identityName + "-kubeconfig"},
				AllowedNamespaces: &infrav1.AllowedNamespaces{List: []string{tenantNamespace}},
			},
		})).To(Succeed())
		c := newTenant(mgmt, management, env.ClusterSpec{
			Namespace: tenantNamespace, Name: "platform", ClusterIdentity: identityName, Workers: 1,
		}, environment.Pool.Client, poolNamespace)
		c.waitMachinesRunning(2)
		Eventually(c.expectSecretsNextToHosts).Should(Succeed())
		c.deleteAndWaitReleased()
	})
})
