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
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// ipPool names an IP pool of the template's namespace.
type ipPool struct{ apiGroup, kind, name string }

var (
	// capiPool is a pool of CAPI's IPAM contract (the in-cluster provider).
	capiPool = ipPool{apiGroup: "ipam.cluster.x-k8s.io", kind: "InClusterIPPool", name: "pool-a"}
	// metal3Pool is a pool of the Metal3 IP Address Manager.
	metal3Pool = ipPool{apiGroup: "ipam.metal3.io", kind: "IPPool", name: "pool-a"}
)

// dataTemplate asks for metadata and network data reading the host's NICs
// and an address of pool; hostInterface is the NIC the metadata reads.
func dataTemplate(namespace, name, hostInterface string, pool ipPool) *infrav1.Metal3DataTemplate {
	poolRef := infrav1.IPPoolReference{APIGroup: pool.apiGroup, Kind: pool.kind, Name: pool.name}
	return &infrav1.Metal3DataTemplate{
		ObjectMeta: metav1ObjectMeta(namespace, name),
		Spec: infrav1.Metal3DataTemplateSpec{
			ClusterName: "cluster-a",
			MetaData: &infrav1.MetaData{
				Strings:            []infrav1.MetaDataString{{Key: "role", Value: "worker"}},
				ObjectNames:        []infrav1.MetaDataObjectName{{Key: "machine", Object: infrav1.DataSourceObjectMachine}},
				Indexes:            []infrav1.MetaDataIndex{{Key: "index", Prefix: "node-"}},
				FromHostInterfaces: []infrav1.MetaDataHostInterface{{Key: "mac", Interface: hostInterface}},
				IPAddressesFromPool: []infrav1.FromPool{{
					Key: "ip", APIGroup: pool.apiGroup, Kind: pool.kind, Name: pool.name,
				}},
			},
			NetworkData: &infrav1.NetworkData{
				Links: &infrav1.NetworkDataLink{Ethernets: []infrav1.NetworkDataLinkEthernet{{
					Type: infrav1.EthernetLinkTypePhy, ID: "eth0", MTU: 1500,
					MACAddress: &infrav1.NetworkLinkEthernetMac{FromHostInterface: "eth0"},
				}}},
				Networks: &infrav1.NetworkDataNetwork{IPv4: []infrav1.NetworkDataIPv4{{
					ID: "provisioning", Link: "eth0", FromPoolRef: poolRef,
				}}},
			},
		},
	}
}

// dataClaim creates a Metal3DataClaim owned by m3m, as the Metal3Machine
// controller would.
func dataClaim(t *testing.T, c client.Client, m3m *infrav1.Metal3Machine, name, template string) *infrav1.Metal3DataClaim {
	t.Helper()
	claim := &infrav1.Metal3DataClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: m3m.Namespace, Name: name,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: infrav1.GroupVersion.String(), Kind: "Metal3Machine", Name: m3m.Name, UID: m3m.UID,
			}},
		},
		Spec: infrav1.Metal3DataClaimSpec{Template: &infrav1.Metal3ObjectRef{Name: template}},
	}
	if err := c.Create(context.Background(), claim); err != nil {
		t.Fatal(err)
	}
	return claim
}

// giveHostNICs writes inspected NICs to the host's status.
func giveHostNICs(t *testing.T, c client.Client, host *bmov1alpha1.BareMetalHost) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(host), host); err != nil {
			return err
		}
		host.Status.HardwareDetails = &bmov1alpha1.HardwareDetails{
			Hostname: host.Name,
			NIC: []bmov1alpha1.NIC{
				{Name: "eth0", MAC: host.Spec.BootMACAddress, IP: "192.168.111.20"},
				{Name: "eth1", MAC: "00:5c:52:31:3b:01"},
			},
		}
		return c.Status().Update(context.Background(), host)
	}).Should(Succeed())
}

// TestDataRenderedNextToHost: a Metal3Data of a machine whose hosts are in
// another cluster claims an address from a CAPI IPAM pool (served by the
// real in-cluster provider), renders and writes its Secrets next to the
// host through the machine's identity, and deletes them and its address
// claim when it goes. For a machine with a dataTemplate whose template
// cannot be rendered, or whose pool is exhausted, the Metal3Data, its claim
// and the machine say which field; nothing is written next to the host and
// the host is not given anything to provision.
func TestDataRenderedNextToHost(t *testing.T) {
	g := NewWithT(t)
	nsTenantA, nsPoolA := testNamespace(t, "tenant-a"), testNamespace(t, "pool-a")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := ipamManagementCluster(t, scheme)
	pool := poolCluster(t, scheme, 0)
	startControllers(t, mgmt, scheme)

	mgmt.GrantInNamespace(t, nsTenantA, "nobody")
	pool.GrantInNamespace(t, nsPoolA, nsTenantA, testenv.HostProviderRules()...)
	g.Expect(mgmt.Client.Create(ctx, testenv.IdentitySecret(nsTenantA, "pool-a-kubeconfig", pool.UserKubeconfig(t, nsTenantA, nsPoolA, nsPoolA)))).To(Succeed())
	availableHosts(t, pool.Client, nsPoolA, "host", 5)
	// The pool admin's hosts carry their BMC in places a template could
	// read: kubectl's last applied configuration, and a label naming the
	// credentials Secret.
	hosts := &bmov1alpha1.BareMetalHostList{}
	g.Expect(pool.Client.List(ctx, hosts, client.InNamespace(nsPoolA))).To(Succeed())
	for i := range hosts.Items {
		h := &hosts.Items[i]
		update(t, pool.Client, h, func() {
			h.Spec.BMC = bmov1alpha1.BMCDetails{Address: "ipmi://10.9.9.9:623", CredentialsName: h.Name + "-bmc-secret"}
			h.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"spec":{"bmc":{"address":"ipmi://10.9.9.9:623"}}}`}
			h.Labels = map[string]string{"example.com/bmc-credentials": h.Name + "-bmc-secret"}
		})
	}
	cluster := workloadCluster{namespace: nsTenantA, name: "cluster-a", identityRef: &infrav1.IdentityRef{Name: "pool-a-kubeconfig"}}
	cluster.create(t, mgmt.Client)
	createIPPool(t, mgmt.Client, nsTenantA, capiPool, "192.168.111.50", "192.168.111.60", "192.168.111.1")
	// A Metal3 pool whose only address is reserved for someone else.
	reserved, tiny := ipamv1.IPAddressStr("192.168.111.70"), ipamv1.IPAddressStr("192.168.111.70")
	g.Expect(mgmt.Client.Create(ctx, &ipamv1.IPPool{
		ObjectMeta: metav1ObjectMeta(nsTenantA, "tiny"),
		Spec: ipamv1.IPPoolSpec{
			NamePrefix: "tiny", Prefix: 24, Pools: []ipamv1.Pool{{Start: &tiny, End: &tiny}},
			PreAllocations: map[string]ipamv1.IPAddressStr{"someone-else": reserved},
		},
	})).To(Succeed())

	hostOf := func(m3m *infrav1.Metal3Machine) *bmov1alpha1.BareMetalHost {
		var host bmov1alpha1.BareMetalHost
		g.Eventually(func(g Gomega) {
			hosts := consumedHosts(g, pool.Client, nsPoolA)
			g.Expect(hosts).To(HaveKey(nsTenantA + "/" + m3m.Name))
			host = hosts[nsTenantA+"/"+m3m.Name]
		}).WithTimeout(30*time.Second).Should(Succeed(), "the machine claims a host")
		giveHostNICs(t, pool.Client, &host)
		return &host
	}
	// dataOf returns the Metal3Data of claim once the template created it.
	dataOf := func(claim *infrav1.Metal3DataClaim) *infrav1.Metal3Data {
		data := &infrav1.Metal3Data{}
		g.Eventually(func(g Gomega) {
			datas := &infrav1.Metal3DataList{}
			g.Expect(mgmt.Client.List(ctx, datas, client.InNamespace(nsTenantA))).To(Succeed())
			found := false
			for i := range datas.Items {
				if datas.Items[i].Spec.Claim.Name == claim.Name {
					*data = datas.Items[i]
					found = true
				}
			}
			g.Expect(found).To(BeTrue())
		}).WithTimeout(30*time.Second).Should(Succeed(), "the template creates the claim's Metal3Data")
		return data
	}
	hostSecrets := func(g Gomega, c client.Client, namespace string, owner *infrav1.Metal3Data) []corev1.Secret {
		secrets := &corev1.SecretList{}
		g.Expect(c.List(ctx, secrets, client.InNamespace(namespace),
			client.MatchingLabels{hostbinding.OwnerUIDLabel: string(owner.UID)})).To(Succeed())
		return secrets.Items
	}

	// Rendered: Secrets next to the host, through the identity.
	g.Expect(mgmt.Client.Create(ctx, dataTemplate(nsTenantA, "workers", "eth1", capiPool))).To(Succeed())
	worker := cluster.machine(t, mgmt.Client, "worker-0", nil)
	host := hostOf(worker)
	claim := dataClaim(t, mgmt.Client, worker, "worker-0", "workers")
	data := dataOf(claim)
	g.Eventually(func(g Gomega) {
		got := &infrav1.Metal3Data{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(data), got)).To(Succeed())
		g.Expect(got.Status.Ready).To(HaveValue(BeTrue()))
		g.Expect(conditions.IsTrue(got, infrav1.Metal3DataSecretsRenderedCondition)).To(BeTrue())
		g.Expect(got.Status.MetaData).To(HaveValue(HaveField("Namespace", nsPoolA)))
		g.Expect(got.Status.NetworkData).To(HaveValue(HaveField("Namespace", nsPoolA)))
		data = got
	}).WithTimeout(30*time.Second).Should(Succeed(), "the data is rendered next to the host")
	g.Expect(data.Namespace).To(Equal(nsTenantA), "the Metal3Data stays in the management namespace")
	g.Expect(data.Finalizers).To(ContainElement(infrav1.DataFinalizer))

	metaData := &corev1.Secret{}
	g.Expect(pool.Client.Get(ctx, client.ObjectKey{Namespace: nsPoolA, Name: data.Status.MetaData.Name}, metaData)).To(Succeed())
	networkData := &corev1.Secret{}
	g.Expect(pool.Client.Get(ctx, client.ObjectKey{Namespace: nsPoolA, Name: data.Status.NetworkData.Name}, networkData)).To(Succeed())
	for _, s := range []*corev1.Secret{metaData, networkData} {
		g.Expect(s.Labels[hostbinding.OwnerUIDLabel]).To(Equal(string(data.UID)))
		g.Expect(s.OwnerReferences).To(ContainElement(HaveField("UID", host.UID)), "the Secret goes with its host")
	}
	md := string(metaData.Data["metaData"])
	g.Expect(md).To(ContainSubstring("role: worker"))
	g.Expect(md).To(ContainSubstring("machine: worker-0"))
	g.Expect(md).To(ContainSubstring("index: node-0"))
	g.Expect(md).To(ContainSubstring("00:5c:52:31:3b:01"))
	g.Expect(md).To(ContainSubstring("192.168.111.50"))
	nd := string(networkData.Data["networkData"])
	g.Expect(nd).To(ContainSubstring(host.Spec.BootMACAddress))
	g.Expect(nd).To(ContainSubstring("192.168.111.50"))
	g.Expect(nd).To(ContainSubstring("255.255.255.0"))
	g.Expect(hostSecrets(g, mgmt.Client, nsTenantA, data)).To(BeEmpty(), "nothing is written in the management namespace")

	ipClaim := &capipamv1.IPAddressClaim{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: nsTenantA, Name: data.Name + "-pool-a"}, ipClaim)).To(Succeed())
	g.Expect(ipClaim.OwnerReferences).To(ContainElement(HaveField("UID", data.UID)))
	g.Expect(ipClaim.Spec.PoolRef).To(Equal(capipamv1.IPPoolReference{APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: "pool-a"}))

	// Deleting the claim releases its data: Secrets and address claim go.
	g.Expect(mgmt.Client.Delete(ctx, claim)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hostSecrets(g, pool.Client, nsPoolA, data)).To(BeEmpty())
		err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(ipClaim), &capipamv1.IPAddressClaim{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the IP address claim is released")
		err = mgmt.Client.Get(ctx, client.ObjectKeyFromObject(data), &infrav1.Metal3Data{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Metal3Data is gone")
	}).WithTimeout(30*time.Second).Should(Succeed(), "the Secrets next to the host are deleted with the data")

	// Not renderable, for the template or for the IP address manager: the
	// condition names the field, on the data and its claim; nothing is
	// written next to the host.
	//
	// The last two are a tenant's template reading its host's BMC address
	// and credentials through fromAnnotations and fromLabels, to find it in
	// the metadata its node boots with: a template reads the host as the
	// tenant may see it, without them.
	readBMCAnnotation := func(md *infrav1.MetaData) {
		md.FromAnnotations = []infrav1.MetaDataFromAnnotation{{Key: "bmc", Object: infrav1.DataSourceObjectBareMetalHost,
			Annotation: "kubectl.kubernetes.io/last-applied-configuration"}}
	}
	readBMCLabel := func(md *infrav1.MetaData) {
		md.FromLabels = []infrav1.MetaDataFromLabel{{Key: "bmc", Object: infrav1.DataSourceObjectBareMetalHost, Label: "example.com/bmc-credentials"}}
	}
	failures := []struct {
		machine, template, hostInterface string
		pool                             ipPool
		adjust                           func(*infrav1.MetaData)
		field, cause                     string
	}{
		{"worker-1", "broken", "eth9", capiPool, nil, "spec.metaData.fromHostInterfaces[0]", "eth9"},
		{"worker-2", "exhausted", "eth1", ipPool{apiGroup: "ipam.metal3.io", kind: "IPPool", name: "tiny"}, nil,
			"spec.metaData.ipAddressesFromPool[0]", "Exhausted"},
		{"worker-3", "bmc-annotation", "eth1", capiPool, readBMCAnnotation, "spec.metaData.fromAnnotations[0]", "has no such annotation"},
		{"worker-4", "bmc-label", "eth1", capiPool, readBMCLabel, "spec.metaData.fromLabels[0]", "has no such label"},
	}
	for _, failure := range failures {
		template := dataTemplate(nsTenantA, failure.template, failure.hostInterface, failure.pool)
		if failure.adjust != nil {
			failure.adjust(template.Spec.MetaData)
		}
		g.Expect(mgmt.Client.Create(ctx, template)).To(Succeed())
		// These machines claim their data themselves, from spec.dataTemplate.
		m3m := cluster.machine(t, mgmt.Client, failure.machine, func(m3m *infrav1.Metal3Machine) {
			m3m.Spec.DataTemplate = &infrav1.Metal3ObjectRef{Name: failure.template}
		})
		host := hostOf(m3m)
		claim := &infrav1.Metal3DataClaim{ObjectMeta: metav1ObjectMeta(nsTenantA, failure.machine)}
		failed := dataOf(claim)
		g.Eventually(func(g Gomega) {
			got := &infrav1.Metal3Data{}
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(failed), got)).To(Succeed())
			g.Expect(conditions.Get(got, infrav1.Metal3DataSecretsRenderedCondition)).To(HaveValue(And(
				HaveField("Reason", infrav1.Metal3DataRenderingFailedReason),
				HaveField("Message", And(ContainSubstring(failure.field), ContainSubstring(failure.cause))))))
			g.Expect(got.Status.Ready).To(HaveValue(BeFalse()))
			gotClaim := &infrav1.Metal3DataClaim{}
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(claim), gotClaim)).To(Succeed())
			g.Expect(gotClaim.Status.ErrorMessage).To(ContainSubstring(failure.field))
			g.Expect(conditions.Get(gotClaim, infrav1.Metal3DataClaimDataReadyCondition)).To(HaveValue(And(
				HaveField("Reason", infrav1.Metal3DataClaimDataFailedReason),
				HaveField("Message", ContainSubstring(failure.field)))))
			gotMachine := &infrav1.Metal3Machine{}
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3m), gotMachine)).To(Succeed())
			g.Expect(conditions.Get(gotMachine, infrav1.DataReadyCondition)).To(HaveValue(And(
				HaveField("Reason", infrav1.Metal3DataClaimDataFailedReason),
				HaveField("Message", ContainSubstring(failure.field)))))
			g.Expect(conditions.Get(gotMachine, infrav1.HostProvisionedCondition)).To(HaveValue(
				HaveField("Reason", infrav1.WaitingForDataReason)))
			failed = got
		}).WithTimeout(30*time.Second).Should(Succeed(), "%s: the failure names the template field", failure.template)
		g.Expect(pool.Client.Get(ctx, client.ObjectKeyFromObject(host), host)).To(Succeed())
		g.Expect(host.Spec.Image).To(BeNil(), "%s: the host is not provisioned without its data", failure.template)
		g.Expect(host.Spec.UserData).To(BeNil())
		g.Expect(hostSecrets(g, pool.Client, nsPoolA, failed)).To(BeEmpty(), "%s: nothing is written next to the host", failure.template)
		g.Expect(failed.Status.MetaData).To(BeNil())
	}
	g.Expect(tenantView(t, mgmt.Client, nsTenantA)).NotTo(Or(ContainSubstring("10.9.9.9"), ContainSubstring("-bmc-secret")),
		"nothing the tenant reads names the hosts' BMCs")
}
