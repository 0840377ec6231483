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
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

var _ = Describe("Two management clusters sharing one pool", func() {
	It("never adopt, release or rewrite each other's hosts or Secrets, with identical names", func() {
		const poolNamespace = "pool-shared"
		// One identity per management cluster, into the same namespace.
		first, err := environment.AddPool(ctx, GinkgoT(), poolNamespace, "management-1", 6)
		Expect(err).NotTo(HaveOccurred())
		second := environment.Pool.ServiceAccountKubeconfig(GinkgoT(), poolNamespace, "management-2", time.Hour, testenv.HostProviderRules()...)

		// The second management cluster has no Bare Metal Operator: every
		// tenant of it has an identity, so it needs none.
		otherMgmt := environment.AddManagement(GinkgoT(), env.ManagementOptions{Name: "management-2", WithoutBareMetalOperator: true})
		otherProxy := framework.NewClusterProxy(otherMgmt.Name, otherMgmt.WriteKubeconfig(GinkgoT()), env.Scheme())
		DeferCleanup(func() { otherProxy.Dispose(ctx) })

		spec := env.ClusterSpec{Namespace: "twins", Name: "twin", Workers: 1}
		spec.Identity = first
		a := newTenant(environment.Management, management, spec, environment.Pool.Client, poolNamespace)
		spec.Identity = second
		b := newTenant(otherMgmt, otherProxy, spec, environment.Pool.Client, poolNamespace)
		a.waitMachinesRunning(2)
		b.waitMachinesRunning(2)

		By("Checking that each host has one consumer and each consumer one host")
		var hostsOfA map[string]bmov1alpha1.BareMetalHost
		Eventually(func(g Gomega) {
			hostsOfA = map[string]bmov1alpha1.BareMetalHost{}
			seen := map[string]string{}
			for _, h := range a.boundHosts(g) {
				ref := h.Spec.ConsumerRef
				key := ref.Namespace + "/" + ref.Name + "/" + string(ref.UID)
				g.Expect(seen).NotTo(HaveKey(key), "two hosts for one consumer")
				seen[key] = h.Name
			}
			g.Expect(seen).To(HaveLen(4), "two machines of each management cluster, each on its own host")
		}).Should(Succeed())
		for _, h := range a.boundHosts(Default) {
			if consumedBy(&h, management) {
				hostsOfA[h.Name] = h
			}
		}
		Expect(hostsOfA).To(HaveLen(2))

		By("Deleting the second management cluster's cluster")
		cluster := b.cluster()
		framework.DeleteCluster(ctx, framework.DeleteClusterInput{Deleter: otherProxy.GetClient(), Cluster: cluster})
		framework.WaitForClusterDeleted(ctx, framework.WaitForClusterDeletedInput{
			ClusterProxy: otherProxy, Cluster: cluster, ClusterctlConfigPath: "unused",
		}, intervals("wait-deleted")...)
		Eventually(func(g Gomega) {
			g.Expect(a.boundHosts(g)).To(HaveLen(2), "only the first management cluster's hosts stay bound")
			secrets := &corev1.SecretList{}
			g.Expect(environment.Pool.Client.List(ctx, secrets, client.InNamespace(poolNamespace), client.HasLabels{hostbinding.OwnerUIDLabel})).To(Succeed())
			g.Expect(secrets.Items).To(HaveLen(4), "the user data and metadata of the first management cluster's two hosts, nothing else")
		}, intervals("wait-hosts-available")...).Should(Succeed())
		Consistently(func(g Gomega) {
			for name, before := range hostsOfA {
				h := &bmov1alpha1.BareMetalHost{}
				g.Expect(environment.Pool.Client.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: name}, h)).To(Succeed())
				g.Expect(equality.Semantic.DeepEqual(h.Spec, before.Spec)).To(BeTrue(), "host %s unchanged", name)
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateProvisioned))
				for _, ref := range []*corev1.SecretReference{h.Spec.UserData, h.Spec.MetaData} {
					secret := &corev1.Secret{}
					g.Expect(environment.Pool.Client.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: ref.Name}, secret)).To(Succeed())
					g.Expect(secret.Labels).To(HaveKey(hostbinding.OwnerUIDLabel))
				}
			}
		}, "15s", "3s").Should(Succeed())
		a.waitMachinesRunning(2)

		a.deleteAndWaitReleased()
	})
})

// consumedBy reports whether host's consumer is a Metal3Machine of mgmt
// (same namespace, name and consumer ID).
func consumedBy(host *bmov1alpha1.BareMetalHost, mgmt framework.ClusterProxy) bool {
	ref := host.Spec.ConsumerRef
	m3m := &infrav1.Metal3Machine{}
	if err := mgmt.GetClient().Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, m3m); err != nil {
		return false
	}
	return infrav1.ConsumerID(m3m) == ref.UID
}
