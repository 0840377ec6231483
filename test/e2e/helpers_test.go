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
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
)

// tenantCluster is one workload cluster of a scenario, on its management
// cluster, with where its hosts live.
type tenantCluster struct {
	proxy     framework.ClusterProxy
	namespace string
	name      string
	// hosts is the client of the API server holding the cluster's hosts,
	// in hostNamespaces.
	hosts          client.Client
	hostNamespaces []string
}

func (c *tenantCluster) cluster() *clusterv1.Cluster {
	cluster := &clusterv1.Cluster{}
	Expect(c.proxy.GetClient().Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: c.name}, cluster)).To(Succeed())
	return cluster
}

func (c *tenantCluster) machineDeployment() *clusterv1.MachineDeployment {
	md := &clusterv1.MachineDeployment{}
	Expect(c.proxy.GetClient().Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: c.name + "-workers"}, md)).To(Succeed())
	return md
}

// waitMachinesRunning waits until the cluster has want Machines, each
// Running with a node whose providerID is the Machine's, and returns them.
func (c *tenantCluster) waitMachinesRunning(want int) []clusterv1.Machine {
	GinkgoHelper()
	By("Waiting for " + c.name + "'s machines to run")
	var machines []clusterv1.Machine
	Eventually(func(g Gomega) {
		machines = framework.GetMachinesByCluster(ctx, framework.GetMachinesByClusterInput{
			Lister: c.proxy.GetClient(), ClusterName: c.name, Namespace: c.namespace,
		})
		g.Expect(machines).To(HaveLen(want))
		for _, m := range machines {
			g.Expect(m.Status.Phase).To(Equal(string(clusterv1.MachinePhaseRunning)), "machine %s", m.Name)
			g.Expect(m.Status.NodeRef.IsDefined()).To(BeTrue(), "machine %s has a node", m.Name)
			node := &corev1.Node{}
			g.Expect(environment.Workload.Client.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, node)).To(Succeed())
			g.Expect(node.Spec.ProviderID).NotTo(BeEmpty())
			g.Expect(node.Spec.ProviderID).To(Equal(m.Spec.ProviderID), "node %s", node.Name)
		}
	}, intervals("wait-machines-running")...).Should(Succeed())
	return machines
}

// boundHosts are the cluster's hosts that a consumer claims.
func (c *tenantCluster) boundHosts(g Gomega) []bmov1alpha1.BareMetalHost {
	var bound []bmov1alpha1.BareMetalHost
	for _, ns := range c.hostNamespaces {
		hosts := &bmov1alpha1.BareMetalHostList{}
		g.Expect(c.hosts.List(ctx, hosts, client.InNamespace(ns))).To(Succeed())
		for _, h := range hosts.Items {
			if h.Spec.ConsumerRef != nil {
				bound = append(bound, h)
			}
		}
	}
	return bound
}

// expectSecretsNextToHosts checks that every Secret a bound host is given
// exists in the host's namespace, written by the provider.
func (c *tenantCluster) expectSecretsNextToHosts(g Gomega) {
	for _, h := range c.boundHosts(g) {
		for _, ref := range []*corev1.SecretReference{h.Spec.UserData, h.Spec.MetaData} {
			g.Expect(ref).NotTo(BeNil(), "host %s has its user data and metadata", h.Name)
			g.Expect(ref.Namespace).To(Or(BeEmpty(), Equal(h.Namespace)))
			secret := &corev1.Secret{}
			g.Expect(c.hosts.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: ref.Name}, secret)).To(Succeed())
			g.Expect(secret.Labels).To(HaveKey(hostbinding.OwnerUIDLabel))
		}
	}
}

// deleteAndWaitReleased deletes the cluster and waits until it is gone, its
// hosts are available and unclaimed, and no Secret of ours is left next to
// them.
func (c *tenantCluster) deleteAndWaitReleased() {
	GinkgoHelper()
	cluster := c.cluster()
	framework.DeleteCluster(ctx, framework.DeleteClusterInput{Deleter: c.proxy.GetClient(), Cluster: cluster})
	framework.WaitForClusterDeleted(ctx, framework.WaitForClusterDeletedInput{
		ClusterProxy: c.proxy, Cluster: cluster, ClusterctlConfigPath: "unused",
	}, intervals("wait-deleted")...)
	By("Waiting for " + c.name + "'s hosts to be available again")
	Eventually(func(g Gomega) {
		for _, ns := range c.hostNamespaces {
			hosts := &bmov1alpha1.BareMetalHostList{}
			g.Expect(c.hosts.List(ctx, hosts, client.InNamespace(ns))).To(Succeed())
			for _, h := range hosts.Items {
				g.Expect(h.Spec.ConsumerRef).To(BeNil(), "host %s is released", h.Name)
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateAvailable), "host %s", h.Name)
			}
			secrets := &corev1.SecretList{}
			g.Expect(c.hosts.List(ctx, secrets, client.InNamespace(ns), client.HasLabels{hostbinding.OwnerUIDLabel})).To(Succeed())
			g.Expect(secrets.Items).To(BeEmpty(), "no Secret of ours is left in %s", ns)
		}
		leftovers := &infrav1.Metal3DataList{}
		g.Expect(c.proxy.GetClient().List(ctx, leftovers, client.InNamespace(c.namespace))).To(Succeed())
		g.Expect(leftovers.Items).To(BeEmpty(), "no Metal3Data is left")
	}, intervals("wait-hosts-available")...).Should(Succeed())
}

// newTenant creates namespace on mgmt and the cluster of spec in it.
func newTenant(mgmt *env.Management, proxy framework.ClusterProxy, spec env.ClusterSpec, hosts client.Client, hostNamespaces ...string) *tenantCluster {
	GinkgoHelper()
	Expect(env.CreateNamespace(ctx, mgmt.Client, spec.Namespace)).To(Succeed())
	Expect(mgmt.CreateCluster(ctx, GinkgoT(), environment.Workload, spec)).To(Succeed())
	diagnoseOnFailure(mgmt.Name, mgmt.Client, spec.Namespace)
	diagnoseOnFailure("hosts of "+mgmt.Name+"/"+spec.Namespace, hosts, hostNamespaces...)
	return &tenantCluster{proxy: proxy, namespace: spec.Namespace, name: spec.Name, hosts: hosts, hostNamespaces: hostNamespaces}
}
