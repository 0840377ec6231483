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

package controllers

import (
	"context"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// provisionAndRelease drives one machine through its life against the hosts
// in hostCluster/hostNamespace: claim, provision, delete, release.
func provisionAndRelease(t *testing.T, mgmt client.Client, hostCluster client.Client, m3m *infrav1.Metal3Machine, hostNamespace string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	key := m3m.Namespace + "/" + m3m.Name

	var host bmov1alpha1.BareMetalHost
	g.Eventually(func(g Gomega) {
		hosts := consumedHosts(g, hostCluster, hostNamespace)
		g.Expect(hosts).To(HaveKey(key))
		host = hosts[key]
	}).WithTimeout(30*time.Second).Should(Succeed(), "one host is claimed for the machine")
	g.Expect(host.Spec.ConsumerRef.UID).To(Equal(m3m.UID))
	g.Expect(host.Spec.Image).NotTo(BeNil())
	g.Expect(host.Spec.Image.URL).To(Equal("http://172.22.0.1/images/node.qcow2"))
	g.Expect(host.Spec.Online).To(BeTrue())
	g.Expect(host.Spec.UserData).NotTo(BeNil())
	g.Expect(host.Spec.UserData.Namespace).To(Equal(hostNamespace), "user data is next to the host")

	userData := &corev1.Secret{}
	g.Expect(hostCluster.Get(ctx, client.ObjectKey{Namespace: hostNamespace, Name: host.Spec.UserData.Name}, userData)).To(Succeed())
	g.Expect(string(userData.Data["value"])).To(ContainSubstring("hostname: " + m3m.Name))
	g.Expect(userData.Labels[hostbinding.OwnerUIDLabel]).To(Equal(string(m3m.UID)))
	g.Expect(userData.OwnerReferences).To(ContainElement(HaveField("UID", host.UID)), "the Secret goes with its host")

	// Plain metadata and network data Secrets are copied next to the host
	// as they are, like user data.
	var copies []*corev1.Secret
	for _, s := range []struct{ source, copied *corev1.SecretReference }{
		{m3m.Spec.MetaData, host.Spec.MetaData}, {m3m.Spec.NetworkData, host.Spec.NetworkData},
	} {
		if s.source == nil {
			g.Expect(s.copied).To(BeNil())
			continue
		}
		g.Expect(s.copied).NotTo(BeNil())
		g.Expect(s.copied.Namespace).To(Equal(hostNamespace))
		source, copied := &corev1.Secret{}, &corev1.Secret{}
		g.Expect(mgmt.Get(ctx, client.ObjectKey{Namespace: m3m.Namespace, Name: s.source.Name}, source)).To(Succeed())
		g.Expect(hostCluster.Get(ctx, client.ObjectKey{Namespace: hostNamespace, Name: s.copied.Name}, copied)).To(Succeed())
		g.Expect(copied.Data).To(Equal(source.Data))
		g.Expect(copied.Labels[hostbinding.OwnerUIDLabel]).To(Equal(string(m3m.UID)))
		copies = append(copies, copied)
	}

	setHostState(t, hostCluster, &host, bmov1alpha1.StateProvisioned)
	g.Eventually(func(g Gomega) {
		got := &infrav1.Metal3Machine{}
		g.Expect(mgmt.Get(ctx, client.ObjectKeyFromObject(m3m), got)).To(Succeed())
		g.Expect(got.Spec.ProviderID).To(Equal("metal3://" + hostNamespace + "/" + host.Name + "/" + m3m.Name))
		g.Expect(got.Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
		g.Expect(got.Status.Addresses).To(ContainElement(clusterv1.MachineAddress{Type: clusterv1.MachineInternalIP, Address: "192.168.111.20"}))
		g.Expect(conditions.IsTrue(got, infrav1.ReadyCondition)).To(BeTrue())
		g.Expect(got.Annotations[infrav1.HostAnnotation]).To(Equal(hostNamespace + "/" + host.Name))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	g.Expect(mgmt.Delete(ctx, m3m)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hostCluster.Get(ctx, client.ObjectKeyFromObject(&host), &host)).To(Succeed())
		g.Expect(host.Spec.Image).To(BeNil(), "deprovisioning clears the image")
		g.Expect(host.Spec.UserData).To(BeNil())
		g.Expect(host.Spec.ConsumerRef).NotTo(BeNil(), "the host stays the machine's until deprovisioned")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	// The Bare Metal Operator deprovisions and cleans the host.
	setHostState(t, hostCluster, &host, bmov1alpha1.StateAvailable)
	g.Eventually(func(g Gomega) {
		g.Expect(hostCluster.Get(ctx, client.ObjectKeyFromObject(&host), &host)).To(Succeed())
		g.Expect(host.Spec.ConsumerRef).To(BeNil(), "the host is released")
		err := hostCluster.Get(ctx, client.ObjectKeyFromObject(userData), &corev1.Secret{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the user data Secret is deleted")
		for _, copied := range copies {
			err := hostCluster.Get(ctx, client.ObjectKeyFromObject(copied), &corev1.Secret{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Secret %s is deleted", copied.Name)
		}
		err = mgmt.Get(ctx, client.ObjectKeyFromObject(m3m), &infrav1.Metal3Machine{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Metal3Machine is gone")
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// TestProvisioningInCluster: the upstream CAPM3 flow, hosts next to the machines.
func TestProvisioningInCluster(t *testing.T) {
	nsTenantA := testNamespace(t, "tenant-a")
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	startControllers(t, mgmt, scheme)
	mgmt.GrantInNamespace(t, nsTenantA, "nobody")
	cluster := workloadCluster{namespace: nsTenantA, name: "cluster-a"}
	cluster.create(t, mgmt.Client)
	availableHosts(t, mgmt.Client, nsTenantA, "host", 3)
	m3m := cluster.machine(t, mgmt.Client, "worker-0", nil)
	provisionAndRelease(t, mgmt.Client, mgmt.Client, m3m, nsTenantA)
}

// TestProvisioningThroughPools: the same flow with the hosts in other
// clusters, reached through the Metal3Cluster's identity, and for one
// template's machines through that template's own identity.
func TestProvisioningThroughPools(t *testing.T) {
	g := NewWithT(t)
	nsTenantA, nsPoolEast, nsPoolGPU := testNamespace(t, "tenant-a"), testNamespace(t, "pool-east"), testNamespace(t, "pool-gpu")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, noHosts)
	poolEast := poolCluster(t, scheme, 0)
	poolGPU := poolCluster(t, scheme, 1)
	startControllers(t, mgmt, scheme)

	mgmt.GrantInNamespace(t, nsTenantA, "nobody")
	for _, pool := range []struct {
		env              *testenv.Env
		secret, poolName string
	}{{poolEast, "pool-east-kubeconfig", nsPoolEast}, {poolGPU, "pool-gpu-kubeconfig", nsPoolGPU}} {
		pool.env.GrantInNamespace(t, pool.poolName, nsTenantA, testenv.HostProviderRules()...)
		g.Expect(mgmt.Client.Create(ctx, testenv.IdentitySecret(nsTenantA, pool.secret, pool.env.UserKubeconfig(t, nsTenantA, pool.poolName, pool.poolName)))).To(Succeed())
		availableHosts(t, pool.env.Client, pool.poolName, "host", 2)
	}
	cluster := workloadCluster{namespace: nsTenantA, name: "cluster-a", identityRef: &infrav1.IdentityRef{Name: "pool-east-kubeconfig"}}
	cluster.create(t, mgmt.Client)

	// A machine of the cluster's default identity, and one stamped from a
	// template overriding it, as CAPI would clone it.
	g.Expect(mgmt.Client.Create(ctx, &infrav1.Metal3MachineTemplate{
		ObjectMeta: metav1ObjectMeta(nsTenantA, "gpu-workers"),
		Spec: infrav1.Metal3MachineTemplateSpec{Template: infrav1.Metal3MachineTemplateResource{Spec: infrav1.Metal3MachineSpec{
			IdentityRef: &infrav1.IdentityRef{Name: "pool-gpu-kubeconfig"},
			Image:       infrav1.Image{URL: "http://172.22.0.1/images/node.qcow2", Checksum: ptr.To("http://172.22.0.1/images/node.qcow2.sha256sum")},
		}}},
	})).To(Succeed())
	// The worker also brings its own metadata and network data.
	for name, data := range map[string]map[string][]byte{
		"worker-0-metadata":    {"metaData": []byte("local-hostname: worker-0\n")},
		"worker-0-networkdata": {"networkData": []byte(`{"links":[],"networks":[],"services":[]}`)},
	} {
		g.Expect(mgmt.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1ObjectMeta(nsTenantA, name), Data: data})).To(Succeed())
	}
	worker := cluster.machine(t, mgmt.Client, "worker-0", func(m *infrav1.Metal3Machine) {
		m.Spec.MetaData = &corev1.SecretReference{Name: "worker-0-metadata"}
		m.Spec.NetworkData = &corev1.SecretReference{Name: "worker-0-networkdata"}
	})
	gpu := cluster.machine(t, mgmt.Client, "gpu-0", func(m *infrav1.Metal3Machine) {
		m.Annotations = map[string]string{clusterv1.TemplateClonedFromNameAnnotation: "gpu-workers"}
		m.Spec.IdentityRef = &infrav1.IdentityRef{Name: "pool-gpu-kubeconfig"}
	})

	g.Eventually(func(g Gomega) {
		g.Expect(consumedHosts(g, poolEast.Client, nsPoolEast)).To(HaveKey(nsTenantA + "/worker-0"))
		g.Expect(consumedHosts(g, poolGPU.Client, nsPoolGPU)).To(HaveKey(nsTenantA + "/gpu-0"))
	}).WithTimeout(30*time.Second).Should(Succeed(), "each machine lands in its own pool")
	g.Expect(consumedHosts(g, poolEast.Client, nsPoolEast)).NotTo(HaveKey(nsTenantA + "/gpu-0"))
	g.Expect(consumedHosts(g, poolGPU.Client, nsPoolGPU)).NotTo(HaveKey(nsTenantA + "/worker-0"))

	// No host Secret is written in the management cluster.
	secrets := &corev1.SecretList{}
	g.Expect(mgmt.Client.List(ctx, secrets, client.InNamespace(nsTenantA), client.HasLabels{hostbinding.OwnerUIDLabel})).To(Succeed())
	g.Expect(secrets.Items).To(BeEmpty())

	provisionAndRelease(t, mgmt.Client, poolEast.Client, worker, nsPoolEast)
	provisionAndRelease(t, mgmt.Client, poolGPU.Client, gpu, nsPoolGPU)
}
