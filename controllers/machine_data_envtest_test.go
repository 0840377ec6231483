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
	"encoding/json"
	"net/netip"
	"regexp"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// createIPPool creates pool in namespace, handing out addresses from first
// to last, prefix 24, with gateway and, for a Metal3 pool, the pool-wide DNS
// servers dns (an in-cluster pool has none to give).
func createIPPool(t *testing.T, c client.Client, namespace string, pool ipPool, first, last, gateway string, dns ...string) {
	t.Helper()
	var obj client.Object
	switch pool.apiGroup {
	case metal3Pool.apiGroup:
		start, end, gw := ipamv1.IPAddressStr(first), ipamv1.IPAddressStr(last), ipamv1.IPAddressStr(gateway)
		servers := make([]ipamv1.IPAddressStr, 0, len(dns))
		for _, d := range dns {
			servers = append(servers, ipamv1.IPAddressStr(d))
		}
		obj = &ipamv1.IPPool{
			ObjectMeta: metav1ObjectMeta(namespace, pool.name),
			Spec: ipamv1.IPPoolSpec{
				NamePrefix: pool.name, Prefix: 24, Gateway: &gw, DNSServers: servers,
				Pools: []ipamv1.Pool{{Start: &start, End: &end}},
			},
		}
	default:
		if len(dns) > 0 {
			t.Fatalf("pool %s: CAPI's IPAM contract has no DNS servers", pool.name)
		}
		obj = inClusterIPPool(namespace, pool.name, first+"-"+last, 24, gateway)
	}
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// TestMachinesWithDataTemplatesSharePool: two tenants whose Metal3Machines
// and Metal3DataTemplates have the same names provision hosts of one pool
// namespace through their own identities. Each machine claims its data;
// its metadata and network data are rendered, with addresses from the real
// IP address managers, into Secrets next to its host, which points at them;
// the Metal3 objects stay in the tenants' namespaces. The network data of
// the machine on a Metal3 IPPool carries the pool's DNS servers where its
// template asks for them, as upstream renders them; the one on the CAPI pool
// lists none (dnsFromIPPool can name only a Metal3 pool).
// Deleting a machine removes its Secrets and releases its addresses, and
// leaves the other tenant's alone.
func TestMachinesWithDataTemplatesSharePool(t *testing.T) {
	g := NewWithT(t)
	nsTenantA, nsTenantB, nsPoolA := testNamespace(t, "tenant-a"), testNamespace(t, "tenant-b"), testNamespace(t, "pool-a")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := ipamManagementCluster(t, scheme)
	pool := poolCluster(t, scheme, 0)
	startControllers(t, mgmt, scheme)

	tenants := []struct {
		namespace   string
		pool        ipPool
		first, last string
		// dns are the pool's DNS servers; services the DNS services its
		// network data must list, on the host and on its default route.
		dns      []string
		services []any
	}{
		{nsTenantA, metal3Pool, "192.168.111.100", "192.168.111.110", []string{"192.168.111.2", "192.168.111.3"},
			[]any{dnsService("8.8.8.8"), dnsService("192.168.111.2"), dnsService("192.168.111.3")}},
		{nsTenantB, capiPool, "192.168.111.200", "192.168.111.210", nil, nil},
	}
	for _, tenant := range tenants {
		mgmt.GrantInNamespace(t, tenant.namespace, "nobody")
		pool.GrantInNamespace(t, nsPoolA, tenant.namespace, testenv.HostProviderRules()...)
	}
	availableHosts(t, pool.Client, nsPoolA, "host", 2)
	for _, name := range []string{"host-0", "host-1"} {
		giveHostNICs(t, pool.Client, &bmov1alpha1.BareMetalHost{ObjectMeta: metav1ObjectMeta(nsPoolA, name)})
	}
	machines := map[string]*infrav1.Metal3Machine{}
	for _, tenant := range tenants {
		g.Expect(mgmt.Client.Create(ctx, testenv.IdentitySecret(tenant.namespace, "pool-a-kubeconfig", pool.UserKubeconfig(t, tenant.namespace, nsPoolA, nsPoolA)))).To(Succeed())
		cluster := workloadCluster{namespace: tenant.namespace, name: "cluster-a", identityRef: &infrav1.IdentityRef{Name: "pool-a-kubeconfig"}}
		cluster.create(t, mgmt.Client)
		createIPPool(t, mgmt.Client, tenant.namespace, tenant.pool, tenant.first, tenant.last, "192.168.111.1", tenant.dns...)
		template := dataTemplate(tenant.namespace, "workers", "eth1", tenant.pool)
		if tenant.pool == metal3Pool {
			askPoolDNS(template, tenant.pool, "8.8.8.8")
		}
		g.Expect(mgmt.Client.Create(ctx, template)).To(Succeed())
		machines[tenant.namespace] = cluster.machine(t, mgmt.Client, "worker-0", func(m3m *infrav1.Metal3Machine) {
			m3m.Spec.DataTemplate = &infrav1.Metal3ObjectRef{Name: "workers"}
		})
	}

	// Provisioned with rendered data: the host points at the Secrets.
	hosts := map[string]bmov1alpha1.BareMetalHost{}
	g.Eventually(func(g Gomega) {
		hosts = consumedHosts(g, pool.Client, nsPoolA)
		for _, tenant := range tenants {
			m3m := &infrav1.Metal3Machine{}
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(machines[tenant.namespace]), m3m)).To(Succeed())
			g.Expect(conditions.IsTrue(m3m, infrav1.DataReadyCondition)).To(BeTrue(), "%s: %v", tenant.namespace, m3m.Status.Conditions)
			host, ok := hosts[tenant.namespace+"/worker-0"]
			g.Expect(ok).To(BeTrue())
			g.Expect(host.Spec.Image).NotTo(BeNil(), "the host is given its image once the data is rendered")
			g.Expect(host.Spec.MetaData).NotTo(BeNil())
			g.Expect(host.Spec.NetworkData).NotTo(BeNil())
			g.Expect(m3m.Status.MetaData).To(Equal(host.Spec.MetaData))
			g.Expect(m3m.Status.NetworkData).To(Equal(host.Spec.NetworkData))
			g.Expect(m3m.Status.RenderedData).To(HaveValue(And(
				HaveField("Namespace", tenant.namespace), HaveField("Name", "workers-0"))))
			machines[tenant.namespace] = m3m
		}
	}).WithTimeout(60*time.Second).Should(Succeed(), "both machines are given their rendered data")

	// Four distinct Secrets, each referenced only by its own host, each
	// labelled with its own Metal3Data; nothing in the tenants' namespaces.
	referencedBy := map[string]string{}
	for _, tenant := range tenants {
		host := hosts[tenant.namespace+"/worker-0"]
		data := &infrav1.Metal3Data{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: tenant.namespace, Name: "workers-0"}, data)).To(Succeed())
		for _, ref := range []*corev1.SecretReference{host.Spec.MetaData, host.Spec.NetworkData} {
			g.Expect(ref.Namespace).To(Equal(nsPoolA))
			g.Expect(referencedBy).NotTo(HaveKey(ref.Name), "Secret %s is referenced by two hosts", ref.Name)
			referencedBy[ref.Name] = host.Name
			secret := &corev1.Secret{}
			g.Expect(pool.Client.Get(ctx, client.ObjectKey{Namespace: nsPoolA, Name: ref.Name}, secret)).To(Succeed())
			g.Expect(secret.Labels[hostbinding.OwnerUIDLabel]).To(Equal(string(data.UID)))
			g.Expect(secret.OwnerReferences).To(ConsistOf(HaveField("UID", host.UID)))
		}
		md := &corev1.Secret{}
		g.Expect(pool.Client.Get(ctx, client.ObjectKey{Namespace: nsPoolA, Name: host.Spec.MetaData.Name}, md)).To(Succeed())
		g.Expect(string(md.Data["metaData"])).To(ContainSubstring("machine: worker-0"))
		g.Expect(addressIn(string(md.Data["metaData"]), tenant.first, tenant.last)).To(BeTrue(),
			"%s's address comes from its own pool:\n%s", tenant.namespace, md.Data["metaData"])
		nd := &corev1.Secret{}
		g.Expect(pool.Client.Get(ctx, client.ObjectKey{Namespace: nsPoolA, Name: host.Spec.NetworkData.Name}, nd)).To(Succeed())
		services, routeServices := renderedDNS(t, nd.Data["networkData"])
		g.Expect(services).To(Equal(tenant.services), "%s: the host's DNS services:\n%s", tenant.namespace, nd.Data["networkData"])
		g.Expect(routeServices).To(Equal(tenant.services), "%s: the default route's DNS services", tenant.namespace)
		secrets := &corev1.SecretList{}
		g.Expect(mgmt.Client.List(ctx, secrets, client.InNamespace(tenant.namespace), client.HasLabels{hostbinding.OwnerUIDLabel})).To(Succeed())
		g.Expect(secrets.Items).To(BeEmpty(), "nothing is written next to the Metal3 objects")
	}
	g.Expect(referencedBy).To(HaveLen(4))

	// Deleting tenant-a's machine deletes its Secrets and releases its
	// Metal3 IPAM address; tenant-b's Secrets and address stay.
	gone := hosts[nsTenantA+"/worker-0"]
	kept := hosts[nsTenantB+"/worker-0"]
	ipClaim := &ipamv1.IPClaim{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: nsTenantA, Name: "workers-0-pool-a"}, ipClaim)).To(Succeed())
	g.Expect(ipClaim.Status.Address).NotTo(BeNil())
	address := client.ObjectKey{Namespace: nsTenantA, Name: ipClaim.Status.Address.Name}
	g.Expect(mgmt.Client.Delete(ctx, machines[nsTenantA])).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, ref := range []*corev1.SecretReference{gone.Spec.MetaData, gone.Spec.NetworkData, gone.Spec.UserData} {
			err := pool.Client.Get(ctx, client.ObjectKey{Namespace: nsPoolA, Name: ref.Name}, &corev1.Secret{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Secret %s is deleted", ref.Name)
		}
		for _, obj := range []struct {
			key client.ObjectKey
			obj client.Object
		}{
			{client.ObjectKeyFromObject(ipClaim), &ipamv1.IPClaim{}},
			{address, &ipamv1.IPAddress{}},
			{client.ObjectKey{Namespace: nsTenantA, Name: "workers-0"}, &infrav1.Metal3Data{}},
			{client.ObjectKey{Namespace: nsTenantA, Name: "worker-0"}, &infrav1.Metal3DataClaim{}},
			{client.ObjectKeyFromObject(machines[nsTenantA]), &infrav1.Metal3Machine{}},
		} {
			err := mgmt.Client.Get(ctx, obj.key, obj.obj)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s is gone", obj.obj, obj.key)
		}
	}).WithTimeout(60*time.Second).Should(Succeed(), "the machine's Secrets and address are released with it")

	host := &bmov1alpha1.BareMetalHost{}
	g.Expect(pool.Client.Get(ctx, client.ObjectKeyFromObject(&gone), host)).To(Succeed())
	g.Expect(host.Spec.ConsumerRef).To(BeNil(), "the host is free again")
	g.Expect(host.Spec.MetaData).To(BeNil())
	g.Expect(pool.Client.Get(ctx, client.ObjectKeyFromObject(&kept), host)).To(Succeed())
	g.Expect(host.Spec.MetaData).To(Equal(kept.Spec.MetaData))
	for _, ref := range []*corev1.SecretReference{kept.Spec.MetaData, kept.Spec.NetworkData} {
		g.Expect(pool.Client.Get(ctx, client.ObjectKey{Namespace: nsPoolA, Name: ref.Name}, &corev1.Secret{})).To(Succeed(),
			"the other tenant's Secret %s stays", ref.Name)
	}
	claims := &capipamv1.IPAddressClaimList{}
	g.Expect(mgmt.Client.List(ctx, claims, client.InNamespace(nsTenantB))).To(Succeed())
	g.Expect(claims.Items).To(HaveLen(1), "the other tenant keeps its address")
}

// askPoolDNS has template's network data list a fixed DNS server, then the
// DNS servers of the Metal3 pool, for the whole host (services) and on a
// default route through the pool's gateway, as upstream's documentation
// writes it. Only a Metal3 pool can be named: dnsFromIPPool takes a name.
func askPoolDNS(template *infrav1.Metal3DataTemplate, pool ipPool, fixed string) {
	nd := template.Spec.NetworkData
	nd.Services = &infrav1.NetworkDataService{DNS: []infrav1.IPAddress{infrav1.IPAddress(fixed)}, DNSFromIPPool: pool.name}
	nd.Networks.IPv4[0].Routes = []infrav1.NetworkDataRoutev4{{
		Network:  "0.0.0.0",
		Gateway:  infrav1.NetworkGatewayv4{FromPoolRef: infrav1.IPPoolReference{APIGroup: pool.apiGroup, Kind: pool.kind, Name: pool.name}},
		Services: &infrav1.NetworkDataServicev4{DNS: []infrav1.IPv4Address{infrav1.IPv4Address(fixed)}, DNSFromIPPool: pool.name},
	}}
}

// dnsService is a DNS service entry of network_data.json, as decoded.
func dnsService(address string) any {
	return map[string]any{"type": "dns", "address": address}
}

// renderedDNS decodes network data and returns its services and those of
// the first route of its first network, nil where there are none.
func renderedDNS(t *testing.T, networkData []byte) (services, routeServices []any) {
	t.Helper()
	var doc struct {
		Services []any `json:"services"`
		Networks []struct {
			Routes []struct {
				Services []any `json:"services"`
			} `json:"routes"`
		} `json:"networks"`
	}
	if err := json.Unmarshal(networkData, &doc); err != nil {
		t.Fatalf("network data is not JSON: %v\n%s", err, networkData)
	}
	if len(doc.Networks) > 0 && len(doc.Networks[0].Routes) > 0 {
		routeServices = doc.Networks[0].Routes[0].Services
	}
	return doc.Services, routeServices
}

// ipv4 matches dotted-quad addresses in rendered metadata.
var ipv4 = regexp.MustCompile(`\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b`)

// addressIn reports whether text holds an IPv4 address in [first, last].
func addressIn(text, first, last string) bool {
	lo, hi := netip.MustParseAddr(first), netip.MustParseAddr(last)
	for _, match := range ipv4.FindAllString(text, -1) {
		addr, err := netip.ParseAddr(match)
		if err == nil && addr.Compare(lo) >= 0 && addr.Compare(hi) <= 0 {
			return true
		}
	}
	return false
}

// inClusterIPPool is a pool of CAPI's in-cluster IPAM provider. It is built
// unstructured: the provider's Go module is a test binary, not a dependency.
func inClusterIPPool(namespace, name, addresses string, prefix int64, gateway string) *unstructured.Unstructured {
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2",
		"kind":       "InClusterIPPool",
		"metadata":   map[string]any{"namespace": namespace, "name": name},
		"spec": map[string]any{
			"addresses": []any{addresses},
			"prefix":    prefix,
			"gateway":   gateway,
		},
	}}
	return pool
}
