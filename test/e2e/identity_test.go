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
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
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
