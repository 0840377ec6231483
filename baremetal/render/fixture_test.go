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

package render

import (
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// The pools of the golden fixture. Several entries name a pool in more than
// one way; the ignored ways point at pools whose values would show in the
// output, so the goldens also check the precedence.
var (
	pool4      = metal3Pool("pool4")
	incluster4 = PoolRef{APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: "incluster4"}
	poolAnnot  = metal3Pool("pool-annot")
	pool6      = metal3Pool("pool6")
	pool6Annot = metal3Pool("pool6-annot")
	dnsPool    = metal3Pool("dns-pool")
)

// fullInput is a template that uses every metaData and networkData field,
// with the objects and addresses it needs.
func fullInput() Input {
	metal3Group := "ipam.metal3.io"
	m3ipam := func(key, name string) infrav1.FromPool {
		return infrav1.FromPool{Key: key, APIGroup: metal3Group, Kind: "IPPool", Name: name}
	}
	m3mAnnotation := func(key string) infrav1.FromPoolAnnotation {
		return infrav1.FromPoolAnnotation{Object: infrav1.DataSourceObjectMetal3Machine, Annotation: key}
	}
	return Input{
		Index:     3,
		Namespace: "metal3",
		Machine: &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{
			Name: "machine-0", Namespace: "metal3",
			Labels:      map[string]string{"cluster.x-k8s.io/cluster-name": "cluster-a"},
			Annotations: map[string]string{"example.com/rack": "r12"},
		}},
		Metal3Machine: &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{
			Name: "m3m-0", Namespace: "metal3",
			Labels: map[string]string{"example.com/role": "worker"},
			Annotations: map[string]string{
				"example.com/mac":  "52:54:00:00:00:99",
				"example.com/pool": "pool-annot",
			},
		}},
		Host: &Host{
			Name: "host-0", Namespace: "metal3",
			Labels:         map[string]string{"example.com/zone": "z1"},
			Annotations:    map[string]string{"example.com/pool6": "pool6-annot"},
			BootMACAddress: "52:54:00:00:00:01",
			Hardware: &bmov1alpha1.HardwareDetails{
				NIC: []bmov1alpha1.NIC{
					{Name: "eth0", MAC: "52:54:00:00:00:01"},
					{Name: "eth1", MAC: "52:54:00:00:00:02"},
					{Name: "eth2", MAC: "52:54:00:00:00:03"},
				},
			},
		},
		Pools: map[PoolRef]PoolAddress{
			pool4:      {Address: "192.168.10.13", Prefix: 24, Gateway: "192.168.10.1", DNSServers: []string{"8.8.8.8", "8.8.4.4"}},
			incluster4: {Address: "10.0.0.5", Prefix: 16, Gateway: "10.0.0.1", DNSServers: []string{"10.0.0.53"}},
			poolAnnot:  {Address: "172.16.0.7", Prefix: 20, Gateway: "172.16.0.1"},
			pool6:      {Address: "2001:db8:1::13", Prefix: 64, Gateway: "2001:db8:1::1", DNSServers: []string{"2001:db8::53"}},
			pool6Annot: {Address: "2001:db8:2::7", Prefix: 48, Gateway: "2001:db8:2::1"},
			dnsPool:    {Address: "192.168.99.3", Prefix: 24, DNSServers: []string{"1.1.1.1", "1.0.0.1"}},
		},
		Template: &infrav1.Metal3DataTemplateSpec{
			ClusterName: "cluster-a",
			MetaData: &infrav1.MetaData{
				Strings: []infrav1.MetaDataString{{Key: "cluster-role", Value: "worker"}},
				ObjectNames: []infrav1.MetaDataObjectName{
					{Key: "name-machine", Object: infrav1.DataSourceObjectMachine},
					{Key: "name-metal3machine", Object: infrav1.DataSourceObjectMetal3Machine},
					{Key: "name-baremetalhost", Object: infrav1.DataSourceObjectBareMetalHost},
				},
				Indexes: []infrav1.MetaDataIndex{
					{Key: "hostname", Offset: ptr.To[int32](10), Step: 2, Prefix: "node-", Suffix: "-a"},
					{Key: "index-default-step"},
				},
				Namespaces: []infrav1.MetaDataNamespace{{Key: "ns"}},
				IPAddressesFromPool: []infrav1.FromPool{
					m3ipam("ip", "pool4"),
					{Key: "ip-incluster", APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: "incluster4"},
				},
				PrefixesFromPool:   []infrav1.FromPool{m3ipam("prefix", "pool4")},
				GatewaysFromPool:   []infrav1.FromPool{m3ipam("gateway", "pool4")},
				DNSServersFromPool: []infrav1.FromPool{m3ipam("dns", "pool4")},
				FromHostInterfaces: []infrav1.MetaDataHostInterface{
					{Key: "mac-eth1", Interface: "eth1"},
					{Key: "mac-boot", FromBootMAC: ptr.To(true)},
				},
				FromLabels: []infrav1.MetaDataFromLabel{
					{Key: "zone", Object: infrav1.DataSourceObjectBareMetalHost, Label: "example.com/zone"},
				},
				FromAnnotations: []infrav1.MetaDataFromAnnotation{
					{Key: "rack", Object: infrav1.DataSourceObjectMachine, Annotation: "example.com/rack"},
				},
			},
			NetworkData: &infrav1.NetworkData{
				Links: &infrav1.NetworkDataLink{
					Ethernets: []infrav1.NetworkDataLinkEthernet{
						{Type: infrav1.EthernetLinkTypePhy, ID: "eth0", Name: "ens1",
							MACAddress: &infrav1.NetworkLinkEthernetMac{FromHostInterface: "eth0"}},
						{Type: infrav1.EthernetLinkTypePhy, ID: "eth1", MTU: 9000,
							MACAddress: &infrav1.NetworkLinkEthernetMac{String: "52:54:00:00:00:02"}},
						{Type: infrav1.EthernetLinkTypePhy, ID: "eth2", MTU: 1500,
							MACAddress: &infrav1.NetworkLinkEthernetMac{
								FromAnnotation: infrav1.NetworkLinkEthernetMacFromAnnotation(m3mAnnotation("example.com/mac")),
							}},
					},
					Bonds: []infrav1.NetworkDataLinkBond{
						{
							BondMode: infrav1.BondMode8023AD, BondXmitHashPolicy: infrav1.BondXmitHashPolicyLayer34,
							ID: "bond0", MTU: 9000, Name: "bond0", BondLinks: []string{"eth1", "eth2"},
							MACAddress: &infrav1.NetworkLinkEthernetMac{String: "52:54:00:00:00:02"},
							// Out of name order: the output is sorted by name.
							Parameters: []infrav1.NetworkDataLinkBondParam{
								{Name: "bond_miimon", Value: apiextensionsv1.JSON{Raw: []byte(`100`)}},
								{Name: "bond_lacp_rate", Value: apiextensionsv1.JSON{Raw: []byte(` "fast" `)}},
							},
						},
						{
							BondMode: infrav1.BondModeActiveBackup, ID: "bond1", BondLinks: []string{"eth0"},
							MACAddress: &infrav1.NetworkLinkEthernetMac{FromHostInterface: "eth0"},
						},
					},
					Vlans: []infrav1.NetworkDataLinkVlan{
						{VlanID: ptr.To[int32](100), VlanLink: "bond0", ID: "vlan100", Name: "bond0.100",
							MACAddress: &infrav1.NetworkLinkEthernetMac{String: "52:54:00:00:00:02"}},
					},
				},
				Networks: &infrav1.NetworkDataNetwork{
					IPv4: []infrav1.NetworkDataIPv4{
						{
							ID: "provisioning", Link: "bond1", IPAddressFromIPPool: "pool4",
							Routes: []infrav1.NetworkDataRoutev4{{
								Network: "0.0.0.0",
								Gateway: infrav1.NetworkGatewayv4{FromIPPool: "pool4"},
								Services: &infrav1.NetworkDataServicev4{
									DNS: []infrav1.IPv4Address{"8.8.8.8"}, DNSFromIPPool: "dns-pool",
								},
							}},
						},
						{
							ID: "ext", Link: "bond0",
							// fromPoolRef wins over the plain name.
							IPAddressFromIPPool: "pool4",
							FromPoolRef: infrav1.IPPoolReference{
								APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: "incluster4",
							},
							Routes: []infrav1.NetworkDataRoutev4{
								{
									Network: "10.20.0.0", Prefix: ptr.To[int32](16),
									// fromPoolRef (no group: Metal3) wins over fromIPPool and string.
									Gateway: infrav1.NetworkGatewayv4{
										FromPoolRef: infrav1.IPPoolReference{Kind: "IPPool", Name: "pool4"},
										FromIPPool:  "pool-annot",
										String:      ptr.To(infrav1.IPv4Address("10.9.9.9")),
									},
								},
								{
									Network: "10.30.0.0", Prefix: ptr.To[int32](24),
									Gateway: infrav1.NetworkGatewayv4{String: ptr.To(infrav1.IPv4Address("10.0.0.254"))},
								},
							},
						},
						{
							ID: "annot", Link: "vlan100",
							// fromPoolAnnotation wins over fromPoolRef.
							FromPoolAnnotation: m3mAnnotation("example.com/pool"),
							FromPoolRef:        infrav1.IPPoolReference{Kind: "InClusterIPPool", Name: "incluster4"},
						},
					},
					IPv4DHCP: []infrav1.NetworkDataIPv4DHCP{
						{ID: "dhcp4", Link: "eth2"},
						{
							ID: "dhcp4-routes", Link: "vlan100",
							Routes: []infrav1.NetworkDataRoutev4{{
								Network: "10.40.0.0", Prefix: ptr.To[int32](24),
								Gateway: infrav1.NetworkGatewayv4{
									FromPoolAnnotation: m3mAnnotation("example.com/pool"),
									String:             ptr.To(infrav1.IPv4Address("9.9.9.9")),
								},
							}},
						},
					},
					IPv6: []infrav1.NetworkDataIPv6{
						{
							ID: "v6", Link: "bond0", IPAddressFromIPPool: "pool6",
							Routes: []infrav1.NetworkDataRoutev6{{
								Network: "::",
								Gateway: infrav1.NetworkGatewayv6{FromIPPool: "pool6"},
								Services: &infrav1.NetworkDataServicev6{
									DNS: []infrav1.IPv6Address{"2001:db8::1:53"}, DNSFromIPPool: "pool6",
								},
							}},
						},
						{
							ID: "v6-annot", Link: "bond1", IPAddressFromIPPool: "pool6",
							FromPoolAnnotation: infrav1.FromPoolAnnotation{
								Object: infrav1.DataSourceObjectBareMetalHost, Annotation: "example.com/pool6",
							},
							Routes: []infrav1.NetworkDataRoutev6{{
								Network: "2001:db8:100::", Prefix: ptr.To[int32](56),
								Gateway: infrav1.NetworkGatewayv6{FromPoolRef: infrav1.IPPoolReference{
									APIGroup: "ipam.metal3.io", Kind: "IPPool", Name: "pool6",
								}},
							}},
						},
					},
					IPv6DHCP: []infrav1.NetworkDataIPv6DHCP{{
						ID: "dhcp6", Link: "eth2",
						Routes: []infrav1.NetworkDataRoutev6{{
							Network: "2001:db8:200::", Prefix: ptr.To[int32](64),
							Gateway: infrav1.NetworkGatewayv6{String: ptr.To(infrav1.IPv6Address("2001:db8:200::1"))},
						}},
					}},
					IPv6SLAAC: []infrav1.NetworkDataIPv6DHCP{{ID: "slaac", Link: "vlan100"}},
				},
				Services: &infrav1.NetworkDataService{
					DNS:           []infrav1.IPAddress{"8.8.8.8", "2001:4860:4860::8888"},
					DNSFromIPPool: "dns-pool",
				},
			},
		},
	}
}
