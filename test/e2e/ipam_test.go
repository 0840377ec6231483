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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
)

// IP pools of both address managers, built unstructured: neither
// manager's Go module is a dependency of the suite.
func ipPool(group, version, kind, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	pool := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	pool.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: version, Kind: kind})
	pool.SetNamespace(namespace)
	pool.SetName(name)
	return pool
}

var _ = Describe("A cluster whose machines take addresses from both IP address managers", func() {
	It("renders each machine an address of each pool, and gives them all back when deleted", func() {
		const ns, name = "addressed", "addressed"
		mgmt := environment.Management
		Expect(env.CreateNamespace(ctx, mgmt.Client, ns)).To(Succeed())
		Expect(env.AddHosts(ctx, mgmt.Client, ns, "addressed", 2)).To(Succeed())
		Expect(mgmt.Client.Create(ctx, ipPool("ipam.metal3.io", "v1alpha1", "IPPool", ns, "metal3-pool", map[string]any{
			"namePrefix": "metal3-pool", "prefix": int64(24), "gateway": "192.168.50.1",
			"pools": []any{map[string]any{"start": "192.168.50.10", "end": "192.168.50.20"}},
		}))).To(Succeed())
		Expect(mgmt.Client.Create(ctx, ipPool("ipam.cluster.x-k8s.io", "v1alpha2", "InClusterIPPool", ns, "capi-pool", map[string]any{
			"addresses": []any{"192.168.60.10-192.168.60.20"}, "prefix": int64(24), "gateway": "192.168.60.1",
		}))).To(Succeed())
		Expect(mgmt.CreateCluster(ctx, GinkgoT(), environment.Workload, env.ClusterSpec{
			Namespace: ns, Name: name, Workers: 1,
			IPPools: []infrav1.FromPool{
				{Key: "ip-metal3", APIGroup: "ipam.metal3.io", Kind: "IPPool", Name: "metal3-pool"},
				{Key: "ip-capi", APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: "capi-pool"},
			},
		})).To(Succeed())
		c := &tenantCluster{proxy: management, namespace: ns, name: name, hosts: mgmt.Client, hostNamespaces: []string{ns}}
		diagnoseOnFailure(mgmt.Name, mgmt.Client, ns)
		c.waitMachinesRunning(2)

		By("Checking that each host's metadata holds an address of each pool")
		Eventually(func(g Gomega) {
			hosts := c.boundHosts(g)
			g.Expect(hosts).To(HaveLen(2))
			for _, h := range hosts {
				g.Expect(h.Spec.MetaData).NotTo(BeNil())
				secret := &corev1.Secret{}
				g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: h.Spec.MetaData.Namespace, Name: h.Spec.MetaData.Name}, secret)).To(Succeed())
				metaData := string(secret.Data["metaData"])
				g.Expect(metaData).To(MatchRegexp(`ip-metal3: 192\.168\.50\.\d+`), "host %s", h.Name)
				g.Expect(metaData).To(MatchRegexp(`ip-capi: 192\.168\.60\.\d+`), "host %s", h.Name)
			}
		}).Should(Succeed())

		c.deleteAndWaitReleased()
		By("Checking that every address claim is gone")
		Eventually(func(g Gomega) {
			metal3Claims := &unstructured.UnstructuredList{}
			metal3Claims.SetGroupVersionKind(schema.GroupVersionKind{Group: "ipam.metal3.io", Version: "v1alpha1", Kind: "IPClaimList"})
			g.Expect(mgmt.Client.List(ctx, metal3Claims, client.InNamespace(ns))).To(Succeed())
			g.Expect(metal3Claims.Items).To(BeEmpty())
			capiClaims := &ipamv1.IPAddressClaimList{}
			g.Expect(mgmt.Client.List(ctx, capiClaims, client.InNamespace(ns))).To(Succeed())
			g.Expect(capiClaims.Items).To(BeEmpty())
		}, intervals("wait-deleted")...).Should(Succeed())
	})
})
