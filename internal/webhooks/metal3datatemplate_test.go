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

package webhooks

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// validDataTemplate renders metadata with one entry of most kinds, and
// network data with two NICs bonded, a VLAN on the bond and a static IPv4
// network on the VLAN.
func validDataTemplate() *infrav1.Metal3DataTemplate {
	return &infrav1.Metal3DataTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "workload-1-workers-template-v2", Namespace: testNamespace},
		Spec: infrav1.Metal3DataTemplateSpec{
			ClusterName:       "workload-1",
			TemplateReference: "workload-1-workers-template",
			MetaData: &infrav1.MetaData{
				Strings:     []infrav1.MetaDataString{{Key: "environment", Value: "production"}},
				ObjectNames: []infrav1.MetaDataObjectName{{Key: "name", Object: infrav1.DataSourceObjectMachine}},
				Indexes:     []infrav1.MetaDataIndex{{Key: "node-index", Offset: ptr.To[int32](10), Step: 1, Prefix: "worker-"}},
				Namespaces:  []infrav1.MetaDataNamespace{{Key: "namespace"}},
				IPAddressesFromPool: []infrav1.FromPool{
					{Key: "provisioningIP", APIGroup: "ipam.metal3.io", Kind: "IPPool", Name: "provisioning-pool"},
				},
				PrefixesFromPool: []infrav1.FromPool{
					{Key: "provisioningCIDR", APIGroup: "ipam.metal3.io", Kind: "IPPool", Name: "provisioning-pool"},
				},
				FromHostInterfaces: []infrav1.MetaDataHostInterface{{Key: "boot-mac", FromBootMAC: ptr.To(true)}},
				FromLabels: []infrav1.MetaDataFromLabel{
					{Key: "rack", Object: infrav1.DataSourceObjectBareMetalHost, Label: "example.com/rack"},
				},
				FromAnnotations: []infrav1.MetaDataFromAnnotation{
					{Key: "asset-tag", Object: infrav1.DataSourceObjectBareMetalHost, Annotation: "example.com/asset-tag"},
				},
			},
			NetworkData: &infrav1.NetworkData{
				Links: &infrav1.NetworkDataLink{
					Ethernets: []infrav1.NetworkDataLinkEthernet{
						{Type: infrav1.EthernetLinkTypePhy, ID: "enp2s0", MACAddress: &infrav1.NetworkLinkEthernetMac{FromHostInterface: "enp2s0"}},
						{Type: infrav1.EthernetLinkTypePhy, ID: "enp3s0", MACAddress: &infrav1.NetworkLinkEthernetMac{FromHostInterface: "enp3s0"}},
					},
					Bonds: []infrav1.NetworkDataLinkBond{{
						ID: "bond0", BondMode: infrav1.BondMode8023AD, BondXmitHashPolicy: infrav1.BondXmitHashPolicyLayer34,
						MACAddress: &infrav1.NetworkLinkEthernetMac{FromHostInterface: "enp2s0"},
						BondLinks:  []string{"enp2s0", "enp3s0"},
					}},
					Vlans: []infrav1.NetworkDataLinkVlan{{
						ID: "bond0.100", VlanID: ptr.To[int32](100), VlanLink: "bond0",
						MACAddress: &infrav1.NetworkLinkEthernetMac{FromHostInterface: "enp2s0"},
					}},
				},
				Networks: &infrav1.NetworkDataNetwork{
					IPv4: []infrav1.NetworkDataIPv4{{
						ID: "storage", Link: "bond0.100", IPAddressFromIPPool: "storage-pool",
						Routes: []infrav1.NetworkDataRoutev4{{
							Network: "172.20.0.0", Prefix: ptr.To[int32](16),
							Gateway:  infrav1.NetworkGatewayv4{FromIPPool: "storage-pool"},
							Services: &infrav1.NetworkDataServicev4{DNSFromIPPool: "storage-pool"},
						}},
					}},
				},
				Services: &infrav1.NetworkDataService{DNS: []infrav1.IPAddress{"8.8.8.8", "2001:4860:4860::8888"}},
			},
		},
	}
}

func ipv6Network(id, link, pool string) infrav1.NetworkDataIPv6 {
	return infrav1.NetworkDataIPv6{ID: id, Link: link, IPAddressFromIPPool: pool}
}

func inClusterPool(name string) infrav1.IPPoolReference {
	return infrav1.IPPoolReference{APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: name}
}

func TestMetal3DataTemplateValidateCreate(t *testing.T) {
	type spec = infrav1.Metal3DataTemplateSpec
	tests := []struct {
		name       string
		mutate     func(*spec)
		wantFields []string
	}{
		{name: "valid", mutate: func(*spec) {}},
		{
			name:   "valid with neither metaData nor networkData",
			mutate: func(s *spec) { s.MetaData, s.NetworkData = nil, nil },
		},
		{
			name: "valid with links listed before the links they refer to",
			mutate: func(s *spec) {
				l := s.NetworkData.Links
				l.Vlans = append(l.Vlans, infrav1.NetworkDataLinkVlan{
					ID: "bond1.200", VlanID: ptr.To[int32](200), VlanLink: "bond1", MACAddress: &infrav1.NetworkLinkEthernetMac{FromHostInterface: "enp4s0"},
				})
				l.Bonds = append(l.Bonds, infrav1.NetworkDataLinkBond{
					ID: "bond1", BondMode: infrav1.BondModeActiveBackup, BondLinks: []string{"enp4s0"},
					MACAddress: &infrav1.NetworkLinkEthernetMac{FromHostInterface: "enp4s0"},
				})
				l.Ethernets = append(l.Ethernets, infrav1.NetworkDataLinkEthernet{
					Type: infrav1.EthernetLinkTypePhy, ID: "enp4s0", MACAddress: &infrav1.NetworkLinkEthernetMac{FromHostInterface: "enp4s0"},
				})
			},
		},
		{
			name: "valid with every kind of network on existing links",
			mutate: func(s *spec) {
				n := s.NetworkData.Networks
				n.IPv4 = append(n.IPv4,
					infrav1.NetworkDataIPv4{ID: "v4-ref", Link: "bond0", FromPoolRef: inClusterPool("pool-a")},
					infrav1.NetworkDataIPv4{ID: "v4-annotation", Link: "enp2s0", FromPoolAnnotation: infrav1.FromPoolAnnotation{
						Object: infrav1.DataSourceObjectBareMetalHost, Annotation: "example.com/pool",
					}})
				n.IPv4DHCP = []infrav1.NetworkDataIPv4DHCP{{ID: "v4-dhcp", Link: "bond0"}}
				n.IPv6 = []infrav1.NetworkDataIPv6{ipv6Network("v6", "bond0", "v6-pool")}
				n.IPv6DHCP = []infrav1.NetworkDataIPv6DHCP{{ID: "v6-dhcp", Link: "bond0"}}
				n.IPv6SLAAC = []infrav1.NetworkDataIPv6DHCP{{ID: "v6-slaac", Link: "bond0"}}
			},
		},
		{
			name: "valid ipv6 with empty ipAddressFromIPPool and fromPoolRef",
			mutate: func(s *spec) {
				n := ipv6Network("v6", "bond0", "")
				n.FromPoolRef = inClusterPool("v6-pool")
				s.NetworkData.Networks.IPv6 = []infrav1.NetworkDataIPv6{n}
			},
		},
		{
			name: "valid MAC address string",
			mutate: func(s *spec) {
				s.NetworkData.Links.Ethernets[0].MACAddress = &infrav1.NetworkLinkEthernetMac{String: "52:54:00:6a:1c:10"}
			},
		},
		{
			// A template several clusters share names none of them.
			name:   "valid without clusterName",
			mutate: func(s *spec) { s.ClusterName = "" },
		},

		// metaData
		{
			name: "duplicate metaData key in one list",
			mutate: func(s *spec) {
				s.MetaData.Strings = append(s.MetaData.Strings, infrav1.MetaDataString{Key: "environment", Value: "staging"})
			},
			wantFields: []string{"spec.metaData.strings[1].key"},
		},
		{
			name: "duplicate metaData key across lists",
			mutate: func(s *spec) {
				s.MetaData.FromLabels[0].Key = "name" // also written by objectNames[0]
			},
			wantFields: []string{"spec.metaData.fromLabels[0].key"},
		},
		{
			name: "duplicate metaData key across IP pool lists",
			mutate: func(s *spec) {
				s.MetaData.PrefixesFromPool[0].Key = "provisioningIP" // also ipAddressesFromPool[0]
			},
			wantFields: []string{"spec.metaData.prefixesFromPool[0].key"},
		},
		{
			name:       "empty metaData key",
			mutate:     func(s *spec) { s.MetaData.Namespaces[0].Key = "" },
			wantFields: []string{"spec.metaData.namespaces[0].key"},
		},
		{
			name:       "index step 0",
			mutate:     func(s *spec) { s.MetaData.Indexes[0].Step = 0 },
			wantFields: []string{"spec.metaData.indexes[0].step"},
		},
		{
			name: "fromHostInterfaces with both interface and fromBootMAC",
			mutate: func(s *spec) {
				s.MetaData.FromHostInterfaces[0] = infrav1.MetaDataHostInterface{Key: "mac", Interface: "enp1s0", FromBootMAC: ptr.To(true)}
			},
			wantFields: []string{"spec.metaData.fromHostInterfaces[0]"},
		},
		{
			name: "fromHostInterfaces with neither interface nor fromBootMAC",
			mutate: func(s *spec) {
				s.MetaData.FromHostInterfaces[0] = infrav1.MetaDataHostInterface{Key: "mac"}
			},
			wantFields: []string{"spec.metaData.fromHostInterfaces[0]"},
		},
		{
			name:       "IP pool with empty name",
			mutate:     func(s *spec) { s.MetaData.IPAddressesFromPool[0].Name = "" },
			wantFields: []string{"spec.metaData.ipAddressesFromPool[0].name"},
		},
		{
			name: "gateway pool with empty name",
			mutate: func(s *spec) {
				s.MetaData.GatewaysFromPool = []infrav1.FromPool{{Key: "gw", APIGroup: "ipam.metal3.io", Kind: "IPPool"}}
			},
			wantFields: []string{"spec.metaData.gatewaysFromPool[0].name"},
		},
		{
			name: "DNS pool without kind and apiGroup",
			mutate: func(s *spec) {
				s.MetaData.DNSServersFromPool = []infrav1.FromPool{{Key: "dns", Name: "provisioning-pool"}}
			},
			wantFields: []string{"spec.metaData.dnsServersFromPool[0].kind", "spec.metaData.dnsServersFromPool[0].apiGroup"},
		},
		{
			name:       "fromLabels without label",
			mutate:     func(s *spec) { s.MetaData.FromLabels[0].Label = "" },
			wantFields: []string{"spec.metaData.fromLabels[0].label"},
		},
		{
			name:       "fromAnnotations without annotation",
			mutate:     func(s *spec) { s.MetaData.FromAnnotations[0].Annotation = "" },
			wantFields: []string{"spec.metaData.fromAnnotations[0].annotation"},
		},

		// links
		{
			name: "duplicate link id between ethernets",
			mutate: func(s *spec) {
				s.NetworkData.Links.Ethernets = append(s.NetworkData.Links.Ethernets, infrav1.NetworkDataLinkEthernet{
					Type: infrav1.EthernetLinkTypePhy, ID: "enp2s0", MACAddress: &infrav1.NetworkLinkEthernetMac{FromHostInterface: "enp4s0"},
				})
			},
			wantFields: []string{"spec.networkData.links.ethernets[2].id"},
		},
		{
			name: "duplicate link id between an ethernet and a VLAN",
			mutate: func(s *spec) {
				s.NetworkData.Links.Vlans[0].ID = "enp3s0"
				s.NetworkData.Networks.IPv4[0].Link = "enp3s0"
			},
			wantFields: []string{"spec.networkData.links.vlans[0].id"},
		},
		{
			name:       "bond member not found",
			mutate:     func(s *spec) { s.NetworkData.Links.Bonds[0].BondLinks[1] = "enp9s0" },
			wantFields: []string{"spec.networkData.links.bonds[0].bondLinks[1]"},
		},
		{
			name:       "bond member is the bond itself",
			mutate:     func(s *spec) { s.NetworkData.Links.Bonds[0].BondLinks[1] = "bond0" },
			wantFields: []string{"spec.networkData.links.bonds[0].bondLinks[1]"},
		},
		{
			name:       "vlanLink not found",
			mutate:     func(s *spec) { s.NetworkData.Links.Vlans[0].VlanLink = "bond1" },
			wantFields: []string{"spec.networkData.links.vlans[0].vlanLink"},
		},
		{
			name: "bad MAC address string",
			mutate: func(s *spec) {
				s.NetworkData.Links.Ethernets[0].MACAddress = &infrav1.NetworkLinkEthernetMac{String: "52:54:00:zz:1c:10"}
			},
			wantFields: []string{"spec.networkData.links.ethernets[0].macAddress.string"},
		},
		{
			name: "MAC address from two sources",
			mutate: func(s *spec) {
				s.NetworkData.Links.Bonds[0].MACAddress.String = "52:54:00:6a:1c:10"
			},
			wantFields: []string{"spec.networkData.links.bonds[0].macAddress"},
		},
		{
			name:       "MAC address from no source",
			mutate:     func(s *spec) { s.NetworkData.Links.Vlans[0].MACAddress = &infrav1.NetworkLinkEthernetMac{} },
			wantFields: []string{"spec.networkData.links.vlans[0].macAddress"},
		},
		{
			name:       "no macAddress",
			mutate:     func(s *spec) { s.NetworkData.Links.Ethernets[1].MACAddress = nil },
			wantFields: []string{"spec.networkData.links.ethernets[1].macAddress"},
		},

		// networks
		{
			name:       "ipv4 network link not found",
			mutate:     func(s *spec) { s.NetworkData.Networks.IPv4[0].Link = "bond0.200" },
			wantFields: []string{"spec.networkData.networks.ipv4[0].link"},
		},
		{
			name: "ipv4DHCP network link not found",
			mutate: func(s *spec) {
				s.NetworkData.Networks.IPv4DHCP = []infrav1.NetworkDataIPv4DHCP{{ID: "dhcp", Link: "eth0"}}
			},
			wantFields: []string{"spec.networkData.networks.ipv4DHCP[0].link"},
		},
		{
			name: "ipv6 network link not found",
			mutate: func(s *spec) {
				s.NetworkData.Networks.IPv6 = []infrav1.NetworkDataIPv6{ipv6Network("v6", "eth0", "v6-pool")}
			},
			wantFields: []string{"spec.networkData.networks.ipv6[0].link"},
		},
		{
			name: "ipv6SLAAC network link not found",
			mutate: func(s *spec) {
				s.NetworkData.Networks.IPv6SLAAC = []infrav1.NetworkDataIPv6DHCP{{ID: "slaac", Link: "eth0"}}
			},
			wantFields: []string{"spec.networkData.networks.ipv6SLAAC[0].link"},
		},
		{
			name: "network on links when there are none",
			mutate: func(s *spec) {
				s.NetworkData.Links = nil
			},
			wantFields: []string{"spec.networkData.networks.ipv4[0].link"},
		},
		{
			name: "duplicate network id",
			mutate: func(s *spec) {
				s.NetworkData.Networks.IPv4DHCP = []infrav1.NetworkDataIPv4DHCP{{ID: "storage", Link: "bond0"}}
			},
			wantFields: []string{"spec.networkData.networks.ipv4DHCP[0].id"},
		},
		{
			name: "duplicate network id between ipv6DHCP and ipv6SLAAC",
			mutate: func(s *spec) {
				s.NetworkData.Networks.IPv6DHCP = []infrav1.NetworkDataIPv6DHCP{{ID: "v6", Link: "bond0"}}
				s.NetworkData.Networks.IPv6SLAAC = []infrav1.NetworkDataIPv6DHCP{{ID: "v6", Link: "bond0"}}
			},
			wantFields: []string{"spec.networkData.networks.ipv6SLAAC[0].id"},
		},
		{
			name:       "ipv4 with no address source",
			mutate:     func(s *spec) { s.NetworkData.Networks.IPv4[0].IPAddressFromIPPool = "" },
			wantFields: []string{"spec.networkData.networks.ipv4[0]"},
		},
		{
			name: "ipv4 fromPoolRef with empty name",
			mutate: func(s *spec) {
				n := &s.NetworkData.Networks.IPv4[0]
				n.IPAddressFromIPPool, n.FromPoolRef = "", inClusterPool("")
			},
			wantFields: []string{"spec.networkData.networks.ipv4[0].fromPoolRef.name"},
		},
		{
			// fromPoolRef is a value: an empty one is no source.
			name: "ipv4 with an empty fromPoolRef only",
			mutate: func(s *spec) {
				n := &s.NetworkData.Networks.IPv4[0]
				n.IPAddressFromIPPool, n.FromPoolRef = "", infrav1.IPPoolReference{}
			},
			wantFields: []string{"spec.networkData.networks.ipv4[0]"},
		},
		{
			name:       "ipv6 with no address source",
			mutate:     func(s *spec) { s.NetworkData.Networks.IPv6 = []infrav1.NetworkDataIPv6{ipv6Network("v6", "bond0", "")} },
			wantFields: []string{"spec.networkData.networks.ipv6[0]"},
		},
		{
			name: "route gateway from no source",
			mutate: func(s *spec) {
				s.NetworkData.Networks.IPv4[0].Routes[0].Gateway = infrav1.NetworkGatewayv4{}
			},
			wantFields: []string{"spec.networkData.networks.ipv4[0].routes[0].gateway"},
		},
		{
			name: "ipv6SLAAC route gateway from no source",
			mutate: func(s *spec) {
				s.NetworkData.Networks.IPv6SLAAC = []infrav1.NetworkDataIPv6DHCP{{ID: "slaac", Link: "bond0", Routes: []infrav1.NetworkDataRoutev6{{
					Network: "2001:db8:300::", Prefix: ptr.To[int32](56),
				}}}}
			},
			wantFields: []string{"spec.networkData.networks.ipv6SLAAC[0].routes[0].gateway"},
		},
		{
			name:   "valid: ipv4 with two address sources (upstream precedence picks one)",
			mutate: func(s *spec) { s.NetworkData.Networks.IPv4[0].FromPoolRef = inClusterPool("storage-pool") },
		},
		{
			name: "valid: route gateway from two sources",
			mutate: func(s *spec) {
				s.NetworkData.Networks.IPv4[0].Routes[0].Gateway.String = ptr.To(infrav1.IPv4Address("172.20.0.1"))
			},
		},
		{
			name: "valid: ipv4DHCP route gateway from two sources",
			mutate: func(s *spec) {
				s.NetworkData.Networks.IPv4DHCP = []infrav1.NetworkDataIPv4DHCP{{ID: "dhcp", Link: "bond0", Routes: []infrav1.NetworkDataRoutev4{{
					Network: "10.0.0.0", Prefix: ptr.To[int32](8),
					Gateway: infrav1.NetworkGatewayv4{FromPoolRef: inClusterPool("a"), FromPoolAnnotation: infrav1.FromPoolAnnotation{
						Object: infrav1.DataSourceObjectMachine, Annotation: "example.com/pool",
					}},
				}}}}
			},
		},
		{
			name: "valid: ipv6 route gateway from two sources",
			mutate: func(s *spec) {
				n := ipv6Network("v6", "bond0", "v6-pool")
				n.Routes = []infrav1.NetworkDataRoutev6{{
					Network: "2001:db8:100::", Prefix: ptr.To[int32](48),
					Gateway: infrav1.NetworkGatewayv6{String: ptr.To(infrav1.IPv6Address("2001:db8:1::1")), FromIPPool: "v6-pool"},
				}}
				s.NetworkData.Networks.IPv6 = []infrav1.NetworkDataIPv6{n}
			},
		},
		{
			name: "several mistakes reported at once",
			mutate: func(s *spec) {
				s.MetaData.Indexes[0].Step = 0
				s.NetworkData.Links.Vlans[0].VlanLink = "bond9"
			},
			wantFields: []string{"spec.metaData.indexes[0].step", "spec.networkData.links.vlans[0].vlanLink"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := validDataTemplate()
			tc.mutate(&tmpl.Spec)
			_, err := (&Metal3DataTemplate{}).ValidateCreate(context.Background(), tmpl)
			expectFieldErrors(t, err, tc.wantFields...)
		})
	}
}

func TestMetal3DataTemplateValidateUpdate(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(*infrav1.Metal3DataTemplate)
		wantFields []string
	}{
		{name: "unchanged", mutate: func(*infrav1.Metal3DataTemplate) {}},
		{
			name:   "templateReference changed",
			mutate: func(t *infrav1.Metal3DataTemplate) { t.Spec.TemplateReference = "workload-1-workers" },
		},
		{
			name:   "templateReference removed",
			mutate: func(t *infrav1.Metal3DataTemplate) { t.Spec.TemplateReference = "" },
		},
		{
			name:   "labels changed",
			mutate: func(t *infrav1.Metal3DataTemplate) { t.Labels = map[string]string{"revision": "2"} },
		},
		{
			// Nothing reads it any more; upstream never froze it.
			name:   "clusterName changed",
			mutate: func(t *infrav1.Metal3DataTemplate) { t.Spec.ClusterName = "workload-2" },
		},
		{
			name:   "clusterName cleared, the template shared from now on",
			mutate: func(t *infrav1.Metal3DataTemplate) { t.Spec.ClusterName = "" },
		},
		{
			name: "metaData entry added",
			mutate: func(t *infrav1.Metal3DataTemplate) {
				t.Spec.MetaData.Strings = append(t.Spec.MetaData.Strings, infrav1.MetaDataString{Key: "zone", Value: "east"})
			},
			wantFields: []string{"spec.metaData"},
		},
		{
			name:       "metaData removed",
			mutate:     func(t *infrav1.Metal3DataTemplate) { t.Spec.MetaData = nil },
			wantFields: []string{"spec.metaData"},
		},
		{
			name:       "networkData MTU changed",
			mutate:     func(t *infrav1.Metal3DataTemplate) { t.Spec.NetworkData.Links.Bonds[0].MTU = 9000 },
			wantFields: []string{"spec.networkData"},
		},
		{
			name:       "networkData removed",
			mutate:     func(t *infrav1.Metal3DataTemplate) { t.Spec.NetworkData = nil },
			wantFields: []string{"spec.networkData"},
		},
		{
			name: "change to an invalid spec",
			mutate: func(t *infrav1.Metal3DataTemplate) {
				t.Spec.MetaData.Indexes[0].Step = 0
			},
			wantFields: []string{"spec.metaData", "spec.metaData.indexes[0].step"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldT, newT := validDataTemplate(), validDataTemplate()
			tc.mutate(newT)
			_, err := (&Metal3DataTemplate{}).ValidateUpdate(context.Background(), oldT, newT)
			expectFieldErrors(t, err, tc.wantFields...)
		})
	}
}

// TestMetal3DataTemplateClusterNameWarning: setting the deprecated
// spec.clusterName, on create or update, draws upstream's deprecation
// warning and nothing else; a template without it draws none.
func TestMetal3DataTemplateClusterNameWarning(t *testing.T) {
	withName := validDataTemplate
	shared := func() *infrav1.Metal3DataTemplate {
		tmpl := validDataTemplate()
		tmpl.Spec.ClusterName = ""
		return tmpl
	}
	deprecated := admission.Warnings{"spec.clusterName is deprecated and will be removed in a future release. It is no longer used by the controllers."}
	tests := []struct {
		name     string
		old      *infrav1.Metal3DataTemplate // nil: a create
		new      *infrav1.Metal3DataTemplate
		warnings admission.Warnings
	}{
		{name: "create with clusterName", new: withName(), warnings: deprecated},
		{name: "create without clusterName", new: shared()},
		{name: "update keeping clusterName", old: withName(), new: withName(), warnings: deprecated},
		{name: "update setting clusterName", old: shared(), new: withName(), warnings: deprecated},
		{name: "update clearing clusterName", old: withName(), new: shared()},
		{name: "update without clusterName", old: shared(), new: shared()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var (
				warnings admission.Warnings
				err      error
			)
			if tc.old == nil {
				warnings, err = (&Metal3DataTemplate{}).ValidateCreate(context.Background(), tc.new)
			} else {
				warnings, err = (&Metal3DataTemplate{}).ValidateUpdate(context.Background(), tc.old, tc.new)
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(warnings).To(Equal(tc.warnings))
		})
	}
}
