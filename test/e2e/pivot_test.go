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
	"encoding/json"
	"maps"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// pivotHost is what a host is provisioned with, by name: the Secrets'
// namespaces change with the host's, nothing else may.
type pivotHost struct {
	State    bmov1alpha1.ProvisioningState
	Consumer corev1.ObjectReference
	Image    string
	UserData string
	MetaData string
}

func pivotHostsOf(g Gomega, hosts []bmov1alpha1.BareMetalHost) map[string]pivotHost {
	out := map[string]pivotHost{}
	for _, h := range hosts {
		g.Expect(h.Spec.Image).NotTo(BeNil())
		g.Expect(h.Spec.UserData).NotTo(BeNil())
		g.Expect(h.Spec.MetaData).NotTo(BeNil())
		out[h.Name] = pivotHost{
			State: h.Status.Provisioning.State, Consumer: *h.Spec.ConsumerRef, Image: h.Spec.Image.URL,
			UserData: h.Spec.UserData.Name, MetaData: h.Spec.MetaData.Name,
		}
	}
	return out
}

// The pivot of docs/move.md, step by step: an all-in-one bootstrap cluster
// (no identityRef, hosts in the cluster's namespace), its hosts moved with
// their status to a pool namespace of another name, the Metal3Cluster
// re-pointed at it, then `clusterctl move` to a management cluster without
// BMO. Every host stays provisioned with what it had.
var _ = Describe("The pivot from an all-in-one bootstrap cluster", func() {
	It("moves the hosts to a pool with their status, re-points identityRef, then clusterctl moves the rest; no host is reprovisioned", func() {
		const ns, poolNS, name = "pivot-aio", "pool-east", "aio"
		mgmt := environment.Management
		pool := environment.Pool
		Expect(env.CreateNamespace(ctx, mgmt.Client, ns)).To(Succeed())
		Expect(env.AddHosts(ctx, mgmt.Client, ns, "aio", 3)).To(Succeed())
		Expect(mgmt.CreateCluster(ctx, GinkgoT(), environment.Workload, env.ClusterSpec{Namespace: ns, Name: name, Workers: 1})).To(Succeed())
		c := &tenantCluster{proxy: management, namespace: ns, name: name, hosts: mgmt.Client, hostNamespaces: []string{ns}}
		diagnoseOnFailure(mgmt.Name, mgmt.Client, ns)
		c.waitMachinesRunning(2)
		var before map[string]pivotHost
		Eventually(func(g Gomega) {
			hosts := c.boundHosts(g)
			g.Expect(hosts).To(HaveLen(2))
			before = pivotHostsOf(g, hosts)
		}).Should(Succeed())

		By("1. Pausing the Cluster: the provider pauses its hosts; the free one is paused by hand")
		c.setPaused(true)
		Eventually(func(g Gomega) {
			for _, h := range c.boundHosts(g) {
				g.Expect(h.Annotations).To(HaveKeyWithValue(bmov1alpha1.PausedAnnotation, "metal3.io/capm3"), "host %s", h.Name)
			}
		}).Should(Succeed())
		hosts := &bmov1alpha1.BareMetalHostList{}
		Expect(mgmt.Client.List(ctx, hosts, client.InNamespace(ns))).To(Succeed())
		Expect(hosts.Items).To(HaveLen(3))
		for i := range hosts.Items {
			h := &hosts.Items[i]
			if _, paused := h.Annotations[bmov1alpha1.PausedAnnotation]; !paused {
				patch := client.MergeFrom(h.DeepCopy())
				if h.Annotations == nil {
					h.Annotations = map[string]string{}
				}
				h.Annotations[bmov1alpha1.PausedAnnotation] = "pivot"
				Expect(mgmt.Client.Patch(ctx, h, patch)).To(Succeed())
			}
		}

		By("2. Copying the hosts, their status and their Secrets to " + poolNS + " on the pool")
		Expect(env.CreateNamespace(ctx, pool.Client, poolNS)).To(Succeed())
		Expect(mgmt.Client.List(ctx, hosts, client.InNamespace(ns))).To(Succeed())
		for i := range hosts.Items {
			pivotHostTo(mgmt.Client, pool.Client, &hosts.Items[i], poolNS)
		}

		By("3. Removing the hosts from the bootstrap cluster without deprovisioning them")
		for i := range hosts.Items {
			h := &hosts.Items[i]
			patch := client.MergeFrom(h.DeepCopy())
			h.Finalizers = nil
			Expect(mgmt.Client.Patch(ctx, h, patch)).To(Succeed())
			Expect(mgmt.Client.Delete(ctx, h)).To(Succeed())
			for _, secret := range hostSecretNames(h) {
				Expect(client.IgnoreNotFound(mgmt.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secret}}))).To(Succeed())
			}
		}

		By("4. Re-pointing the Metal3Cluster at the pool through an identity")
		kubeconfig := pool.ServiceAccountKubeconfig(GinkgoT(), poolNS, "tenant-pivot", 24*time.Hour, testenv.HostProviderRules()...)
		Expect(mgmt.Client.Create(ctx, testenv.IdentitySecret(ns, name+"-pool-identity", kubeconfig))).To(Succeed())
		m3c := &infrav1.Metal3Cluster{}
		Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m3c)).To(Succeed())
		patch := client.MergeFrom(m3c.DeepCopy())
		m3c.Spec.IdentityRef = &infrav1.IdentityRef{Name: name + "-pool-identity"}
		Expect(mgmt.Client.Patch(ctx, m3c, patch)).To(Succeed())
		c.hosts, c.hostNamespaces = pool.Client, []string{poolNS}

		By("5. Unpausing the Cluster: every machine finds its host where its identity looks now")
		c.setPaused(false)
		Eventually(func(g Gomega) {
			m3ms := &infrav1.Metal3MachineList{}
			g.Expect(mgmt.Client.List(ctx, m3ms, client.InNamespace(ns))).To(Succeed())
			g.Expect(m3ms.Items).To(HaveLen(2))
			for i := range m3ms.Items {
				m3m := &m3ms.Items[i]
				associated := conditions.Get(m3m, infrav1.HostAssociatedCondition)
				g.Expect(associated).NotTo(BeNil())
				g.Expect(associated.Status).To(Equal(metav1.ConditionTrue), "%s: %s", associated.Reason, associated.Message)
				g.Expect(associated.Message).To(ContainSubstring("the host moved"))
				g.Expect(associated.Message).To(ContainSubstring(poolNS + "/"))
			}
			for _, h := range c.boundHosts(g) {
				g.Expect(h.Annotations).NotTo(HaveKey(bmov1alpha1.PausedAnnotation), "the provider lifts its pause from host %s", h.Name)
			}
			g.Expect(pivotHostsOf(g, c.boundHosts(g))).To(Equal(before), "the pool's BMO restored each host as it was")
		}, intervals("wait-machines-running")...).Should(Succeed())

		By("6. Unpausing the free host by hand")
		free := &bmov1alpha1.BareMetalHost{}
		for i := range hosts.Items {
			if hosts.Items[i].Spec.ConsumerRef == nil {
				Expect(pool.Client.Get(ctx, client.ObjectKey{Namespace: poolNS, Name: hosts.Items[i].Name}, free)).To(Succeed())
			}
		}
		Expect(free.Name).NotTo(BeEmpty())
		patch = client.MergeFrom(free.DeepCopy())
		delete(free.Annotations, bmov1alpha1.PausedAnnotation)
		Expect(pool.Client.Patch(ctx, free, patch)).To(Succeed())
		c.waitMachinesRunning(2)

		By("7. clusterctl move to a management cluster without BMO")
		c.moveToNewManagement("management-pivot")
		c.waitMachinesRunning(2)
		Consistently(func(g Gomega) {
			g.Expect(pivotHostsOf(g, c.boundHosts(g))).To(Equal(before))
		}, "15s", "3s").Should(Succeed(), "no host is deprovisioned or reprovisioned")

		c.deleteAndWaitReleased()
	})
})

// hostSecretNames are the Secrets a host's spec names.
func hostSecretNames(h *bmov1alpha1.BareMetalHost) []string {
	names := []string{h.Spec.BMC.CredentialsName}
	for _, ref := range []*corev1.SecretReference{h.Spec.UserData, h.Spec.MetaData, h.Spec.NetworkData} {
		if ref != nil {
			names = append(names, ref.Name)
		}
	}
	return names
}

// pivotHostTo creates host in namespace of to as docs/move.md's step 2
// says: its status in BMO's status annotation, its paused annotation kept,
// the Secrets it names copied beside it (labels kept; of their owner
// references only the host's, pointed at the new host).
func pivotHostTo(from, to client.Client, host *bmov1alpha1.BareMetalHost, namespace string) {
	GinkgoHelper()
	status, err := json.Marshal(host.Status)
	Expect(err).NotTo(HaveOccurred())
	moved := &bmov1alpha1.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: host.Name, Labels: maps.Clone(host.Labels), Annotations: maps.Clone(host.Annotations),
		},
		Spec: *host.Spec.DeepCopy(),
	}
	if moved.Annotations == nil {
		moved.Annotations = map[string]string{}
	}
	moved.Annotations[bmov1alpha1.StatusAnnotation] = string(status)
	for _, ref := range []*corev1.SecretReference{moved.Spec.UserData, moved.Spec.MetaData, moved.Spec.NetworkData} {
		if ref != nil {
			ref.Namespace = namespace
		}
	}
	Expect(to.Create(ctx, moved)).To(Succeed())
	for _, name := range hostSecretNames(host) {
		secret := &corev1.Secret{}
		Expect(from.Get(ctx, client.ObjectKey{Namespace: host.Namespace, Name: name}, secret)).To(Succeed())
		copied := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: namespace, Name: name, Labels: secret.Labels, Annotations: secret.Annotations,
			},
			Type: secret.Type, Data: secret.Data,
		}
		// An owner of another cluster would have the pool's garbage
		// collector delete the Secret: only the host's own is kept.
		for _, owner := range secret.OwnerReferences {
			if owner.UID == host.UID {
				owner.UID = moved.UID
				copied.OwnerReferences = append(copied.OwnerReferences, owner)
			}
		}
		Expect(to.Create(ctx, copied)).To(Succeed())
	}
}
