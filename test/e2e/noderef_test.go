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
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
)

// Cluster API's Machine controller looks for a Machine's Node once per
// event, in its cache of the workload cluster, and before the control
// plane is initialized hears of no Node event: a lookup that ran a moment
// before its cache saw the Node's providerID left, until the provider
// asked Cluster API to look again, a cluster that never came up. The
// cache's lag cannot be arranged; the spec builds the same state instead:
// the providerID is published while the Node is not there yet, so Cluster
// API looks and misses, and the Node then registers and gets the
// providerID, with no event Cluster API would look again on.
var _ = Describe("A control-plane Machine whose Node Cluster API looked for too early", func() {
	It("is linked to its Node once the Node carries its providerID", func() {
		const ns, name = "late-node", "late"
		mgmt := environment.Management
		Expect(env.CreateNamespace(ctx, mgmt.Client, ns)).To(Succeed())
		Expect(env.AddHosts(ctx, mgmt.Client, ns, name, 1)).To(Succeed())
		host := &bmov1alpha1.BareMetalHost{}
		Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-0"}, host)).To(Succeed())
		registerNode := environment.HoldNodeRegistration(host.UID)
		DeferCleanup(registerNode)
		Expect(mgmt.CreateCluster(ctx, GinkgoT(), environment.Workload, env.ClusterSpec{Namespace: ns, Name: name})).To(Succeed())
		c := &tenantCluster{proxy: management, namespace: ns, name: name, hosts: mgmt.Client, hostNamespaces: []string{ns}}
		diagnoseOnFailure(mgmt.Name, mgmt.Client, ns)

		By("Waiting for the control plane's host to be provisioned, its Node not registered")
		m3m := &infrav1.Metal3Machine{}
		Eventually(func(g Gomega) {
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(host), host)).To(Succeed())
			g.Expect(host.Spec.ConsumerRef).NotTo(BeNil())
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: host.Spec.ConsumerRef.Name}, m3m)).To(Succeed())
			g.Expect(conditions.IsTrue(m3m, infrav1.HostProvisionedCondition)).To(BeTrue(), "host provisioned")
			g.Expect(m3m.Spec.ProviderID).To(BeEmpty(), "no providerID before the Node carries it")
		}, intervals("wait-machines-running")...).Should(Succeed())

		By("Publishing the providerID before the Node registers: Cluster API looks for it and misses")
		// The provider, finding its providerID published, reports the
		// machine provisioned, as it does when the Node carries it.
		providerID := hostbinding.ProviderID(client.ObjectKeyFromObject(host), m3m)
		before := m3m.DeepCopy()
		m3m.Spec.ProviderID = providerID
		Expect(mgmt.Client.Patch(ctx, m3m, client.MergeFrom(before))).To(Succeed())
		machine := &clusterv1.Machine{}
		Eventually(func(g Gomega) {
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3m), m3m)).To(Succeed())
			g.Expect(m3m.Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: m3m.OwnerReferences[0].Name}, machine)).To(Succeed())
			g.Expect(machine.Spec.ProviderID).To(Equal(providerID), "Cluster API took the providerID, and looked")
		}, intervals("wait-machines-running")...).Should(Succeed())
		Expect(machine.Status.NodeRef.IsDefined()).To(BeFalse())
		// Every change of the Metal3Machine is an event Cluster API looks
		// again on: the Node registers after the last one.
		var lastSeen string
		Eventually(func(g Gomega) {
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3m), m3m)).To(Succeed())
			seen := m3m.ResourceVersion
			defer func() { lastSeen = seen }()
			g.Expect(seen).To(Equal(lastSeen), "the Metal3Machine has stopped changing")
		}).WithPolling(3 * time.Second).WithTimeout(time.Minute).Should(Succeed())

		By("Registering the Node: the provider gives it the providerID, and Cluster API links the Machine")
		registerNode()
		c.waitMachinesRunning(1)
		c.deleteAndWaitReleased()
	})
})
