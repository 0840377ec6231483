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

package v1beta1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The network data part of a Metal3DataTemplate (OpenStack network_data.json).

// MACAddressSource says where the MAC address of a link comes from. Set
// exactly one of its fields.
type MACAddressSource struct {
	// string is a MAC address written as is.
	// +optional
	String *string `json:"string,omitempty"`

	// fromHostInterface is the name of a BareMetalHost interface whose MAC
	// address is used.
	// +optional
	FromHostInterface *string `json:"fromHostInterface,omitempty"`

	// fromAnnotation reads the MAC address from an annotation.
	// +optional
	FromAnnotation *AnnotationSource `json:"fromAnnotation,omitempty"`
}

// EthernetLinkType is the kind of a physical or virtual ethernet link, as
// understood by the OpenStack network data format.
// +kubebuilder:validation:Enum=bridge;dvs;hw_veb;hyperv;ovs;tap;vhostuser;vif;phy
type EthernetLinkType string

const (
	// EthernetLinkTypeBridge is a Linux bridge.
	EthernetLinkTypeBridge EthernetLinkType = "bridge"
	// EthernetLinkTypeDVS is a distributed virtual switch port.
	EthernetLinkTypeDVS EthernetLinkType = "dvs"
	// EthernetLinkTypeHwVeb is an SR-IOV virtual function.
	EthernetLinkTypeHwVeb EthernetLinkType = "hw_veb"
	// EthernetLinkTypeHyperV is a Hyper-V port.
	EthernetLinkTypeHyperV EthernetLinkType = "hyperv"
	// EthernetLinkTypeOVS is an Open vSwitch port.
	EthernetLinkTypeOVS EthernetLinkType = "ovs"
	// EthernetLinkTypeTap is a tap device.
	EthernetLinkTypeTap EthernetLinkType = "tap"
	// EthernetLinkTypeVhostUser is a vhost-user port.
	EthernetLinkTypeVhostUser EthernetLinkType = "vhostuser"
	// EthernetLinkTypeVIF is a virtual interface.
	EthernetLinkTypeVIF EthernetLinkType = "vif"
	// EthernetLinkTypePhy is a physical NIC, the usual choice on bare metal.
	EthernetLinkTypePhy EthernetLinkType = "phy"
)

// BondMode is the Linux bonding mode of a bond link.
// +kubebuilder:validation:Enum="balance-rr";"active-backup";"balance-xor";"broadcast";"balance-tlb";"balance-alb";"802.3ad"
type BondMode string

const (
	// BondModeBalanceRR sends packets round-robin over the members.
	BondModeBalanceRR BondMode = "balance-rr"
	// BondModeActiveBackup uses one member at a time and fails over.
	BondModeActiveBackup BondMode = "active-backup"
	// BondModeBalanceXOR picks the member by a hash of the packet.
	BondModeBalanceXOR BondMode = "balance-xor"
	// BondModeBroadcast sends every packet on every member.
	BondModeBroadcast BondMode = "broadcast"
	// BondModeBalanceTLB balances outgoing traffic by member load.
	BondModeBalanceTLB BondMode = "balance-tlb"
	// BondModeBalanceALB balances both directions by member load.
	BondModeBalanceALB BondMode = "balance-alb"
	// BondMode8023AD is IEEE 802.3ad link aggregation (LACP).
	BondMode8023AD BondMode = "802.3ad"
)

// BondXmitHashPolicy is the hash that spreads a bond's outgoing traffic over
// its members.
// +kubebuilder:validation:Enum="layer2";"layer3+4";"layer2+3"
type BondXmitHashPolicy string

const (
	// BondXmitHashPolicyLayer2 hashes MAC addresses.
	BondXmitHashPolicyLayer2 BondXmitHashPolicy = "layer2"
	// BondXmitHashPolicyLayer34 hashes IP addresses and ports.
	BondXmitHashPolicyLayer34 BondXmitHashPolicy = "layer3+4"
	// BondXmitHashPolicyLayer23 hashes MAC and IP addresses.
	BondXmitHashPolicyLayer23 BondXmitHashPolicy = "layer2+3"
)

// EthernetLink is an ethernet interface of the host.
type EthernetLink struct {
	// type of the link; phy for a physical NIC.
	Type EthernetLinkType `json:"type"`

	// id names the link; networks, bonds and VLANs refer to it by this id.
	ID string `json:"id"`

	// mtu of the link in bytes.
	// +kubebuilder:default=1500
	// +kubebuilder:validation:Maximum=9000
	// +optional
	MTU int `json:"mtu,omitempty"`

	// macAddress identifies the interface.
	MACAddress MACAddressSource `json:"macAddress"`

	// name is the interface name to give the link on the host.
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9._-]*$`
	// +optional
	Name string `json:"name,omitempty"`
}

// BondLink is a bond built from other links of the host.
type BondLink struct {
	// bondMode is the bonding mode.
	BondMode BondMode `json:"bondMode"`

	// bondXmitHashPolicy spreads outgoing traffic over the members, for the
	// modes that hash.
	// +optional
	BondXmitHashPolicy BondXmitHashPolicy `json:"bondXmitHashPolicy,omitempty"`

	// id names the link; networks and VLANs refer to it by this id.
	ID string `json:"id"`

	// mtu of the link in bytes.
	// +kubebuilder:default=1500
	// +kubebuilder:validation:Maximum=9000
	// +optional
	MTU int `json:"mtu,omitempty"`

	// macAddress of the bond.
	MACAddress MACAddressSource `json:"macAddress"`

	// name is the interface name to give the bond on the host.
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9._-]*$`
	// +optional
	Name string `json:"name,omitempty"`

	// bondLinks are the ids of the member links.
	// +optional
	BondLinks []string `json:"bondLinks,omitempty"`

	// parameters are further bonding options (e.g. bond_miimon: cloud-init
	// reads keys starting with bond_), passed through
	// to the network data unchanged.
	// +optional
	Parameters map[string]apiextensionsv1.JSON `json:"parameters,omitempty"`
}

// VLANLink is a VLAN on top of another link of the host.
type VLANLink struct {
	// vlanID is the 802.1Q VLAN tag.
	// +kubebuilder:validation:Maximum=4096
	VLANID int `json:"vlanID"`

	// vlanLink is the id of the link that carries the VLAN.
	VLANLink string `json:"vlanLink"`

	// id names the link; networks refer to it by this id.
	ID string `json:"id"`

	// mtu of the link in bytes.
	// +kubebuilder:default=1500
	// +kubebuilder:validation:Maximum=9000
	// +optional
	MTU int `json:"mtu,omitempty"`

	// macAddress of the VLAN interface.
	MACAddress MACAddressSource `json:"macAddress"`

	// name is the interface name to give the VLAN on the host.
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9._-]*$`
	// +optional
	Name string `json:"name,omitempty"`
}

// NetworkDataLinks lists the layer-2 links of the host.
type NetworkDataLinks struct {
	// ethernets are the ethernet interfaces.
	// +optional
	Ethernets []EthernetLink `json:"ethernets,omitempty"`

	// bonds are the bonds.
	// +optional
	Bonds []BondLink `json:"bonds,omitempty"`

	// vlans are the VLAN interfaces.
	// +optional
	VLANs []VLANLink `json:"vlans,omitempty"`
}

// IPv4RouteGateway says where the gateway of an IPv4 route comes from. Set
// at least one field; when several are set, the first of fromPoolAnnotation,
// fromPoolRef, fromIPPool and string is used.
type IPv4RouteGateway struct {
	// string is a gateway address written as is.
	// +optional
	String *IPv4Address `json:"string,omitempty"`

	// fromIPPool is the name of a Metal3 IPPool whose gateway is used.
	// Prefer fromPoolRef.
	// +optional
	FromIPPool *string `json:"fromIPPool,omitempty"`

	// fromPoolRef is a pool whose gateway is used.
	// +optional
	FromPoolRef *IPPoolReference `json:"fromPoolRef,omitempty"`

	// fromPoolAnnotation reads the name of the pool whose gateway is used
	// from an annotation.
	// +optional
	FromPoolAnnotation *AnnotationSource `json:"fromPoolAnnotation,omitempty"`
}

// IPv6RouteGateway says where the gateway of an IPv6 route comes from. Set
// at least one field; when several are set, the first of fromPoolAnnotation,
// fromPoolRef, fromIPPool and string is used.
type IPv6RouteGateway struct {
	// string is a gateway address written as is.
	// +optional
	String *IPv6Address `json:"string,omitempty"`

	// fromIPPool is the name of a Metal3 IPPool whose gateway is used.
	// Prefer fromPoolRef.
	// +optional
	FromIPPool *string `json:"fromIPPool,omitempty"`

	// fromPoolRef is a pool whose gateway is used.
	// +optional
	FromPoolRef *IPPoolReference `json:"fromPoolRef,omitempty"`

	// fromPoolAnnotation reads the name of the pool whose gateway is used
	// from an annotation.
	// +optional
	FromPoolAnnotation *AnnotationSource `json:"fromPoolAnnotation,omitempty"`
}

// IPv4RouteServices are the services reachable through an IPv4 route.
type IPv4RouteServices struct {
	// dns are DNS server addresses.
	// +optional
	DNS []IPv4Address `json:"dns,omitempty"`

	// dnsFromIPPool is the name of a Metal3 IPPool whose DNS servers are used.
	// +optional
	DNSFromIPPool *string `json:"dnsFromIPPool,omitempty"`
}

// IPv6RouteServices are the services reachable through an IPv6 route.
type IPv6RouteServices struct {
	// dns are DNS server addresses.
	// +optional
	DNS []IPv6Address `json:"dns,omitempty"`

	// dnsFromIPPool is the name of a Metal3 IPPool whose DNS servers are used.
	// +optional
	DNSFromIPPool *string `json:"dnsFromIPPool,omitempty"`
}

// IPv4Route is a static IPv4 route of a network.
type IPv4Route struct {
	// network is the destination network address.
	Network IPv4Address `json:"network"`

	// prefix is the length of the destination network prefix.
	// +kubebuilder:validation:Maximum=32
	// +optional
	Prefix int `json:"prefix,omitempty"`

	// gateway is the next hop.
	Gateway IPv4RouteGateway `json:"gateway"`

	// services reachable through the route.
	// +optional
	Services *IPv4RouteServices `json:"services,omitempty"`
}

// IPv6Route is a static IPv6 route of a network.
type IPv6Route struct {
	// network is the destination network address.
	Network IPv6Address `json:"network"`

	// prefix is the length of the destination network prefix.
	// +kubebuilder:validation:Maximum=128
	// +optional
	Prefix int `json:"prefix,omitempty"`

	// gateway is the next hop.
	Gateway IPv6RouteGateway `json:"gateway"`

	// services reachable through the route.
	// +optional
	Services *IPv6RouteServices `json:"services,omitempty"`
}

// IPv4Network is an IPv4 network with a static address allocated from an IP
// pool. Name the pool at least one way; when several are set, the first of
// fromPoolAnnotation, fromPoolRef and ipAddressFromIPPool is used.
type IPv4Network struct {
	// id names the network in the rendered network data.
	ID string `json:"id"`

	// link is the id of the link the network is configured on.
	Link string `json:"link"`

	// ipAddressFromIPPool is the name of the Metal3 IPPool the address is
	// allocated from. Prefer fromPoolRef.
	// +optional
	IPAddressFromIPPool *string `json:"ipAddressFromIPPool,omitempty"`

	// fromPoolRef is the pool the address is allocated from.
	// +optional
	FromPoolRef *IPPoolReference `json:"fromPoolRef,omitempty"`

	// fromPoolAnnotation reads the name of the pool the address is allocated
	// from from an annotation.
	// +optional
	FromPoolAnnotation *AnnotationSource `json:"fromPoolAnnotation,omitempty"`

	// routes are static routes of the network.
	// +optional
	Routes []IPv4Route `json:"routes,omitempty"`
}

// IPv6Network is an IPv6 network with a static address allocated from an IP
// pool. Name the pool at least one way; when several are set, the first of
// fromPoolAnnotation, fromPoolRef and ipAddressFromIPPool is used.
type IPv6Network struct {
	// id names the network in the rendered network data.
	ID string `json:"id"`

	// link is the id of the link the network is configured on.
	Link string `json:"link"`

	// ipAddressFromIPPool is the name of the Metal3 IPPool the address is
	// allocated from. It is required for compatibility with existing
	// manifests, even when fromPoolRef or fromPoolAnnotation is set.
	IPAddressFromIPPool string `json:"ipAddressFromIPPool"`

	// fromPoolRef is the pool the address is allocated from.
	// +optional
	FromPoolRef *IPPoolReference `json:"fromPoolRef,omitempty"`

	// fromPoolAnnotation reads the name of the pool the address is allocated
	// from from an annotation.
	// +optional
	FromPoolAnnotation *AnnotationSource `json:"fromPoolAnnotation,omitempty"`

	// routes are static routes of the network.
	// +optional
	Routes []IPv6Route `json:"routes,omitempty"`
}

// IPv4DynamicNetwork is an IPv4 network whose address the host obtains by
// DHCP.
type IPv4DynamicNetwork struct {
	// id names the network in the rendered network data.
	ID string `json:"id"`

	// link is the id of the link the network is configured on.
	Link string `json:"link"`

	// routes are static routes added to the network.
	// +optional
	Routes []IPv4Route `json:"routes,omitempty"`
}

// IPv6DynamicNetwork is an IPv6 network whose address the host obtains by
// DHCPv6 or SLAAC.
type IPv6DynamicNetwork struct {
	// id names the network in the rendered network data.
	ID string `json:"id"`

	// link is the id of the link the network is configured on.
	Link string `json:"link"`

	// routes are static routes added to the network.
	// +optional
	Routes []IPv6Route `json:"routes,omitempty"`
}

// NetworkDataNetworks lists the layer-3 networks of the host.
type NetworkDataNetworks struct {
	// ipv4 are networks with a static IPv4 address.
	// +optional
	IPv4 []IPv4Network `json:"ipv4,omitempty"`

	// ipv4DHCP are networks configured by DHCP.
	// +optional
	IPv4DHCP []IPv4DynamicNetwork `json:"ipv4DHCP,omitempty"`

	// ipv6 are networks with a static IPv6 address.
	// +optional
	IPv6 []IPv6Network `json:"ipv6,omitempty"`

	// ipv6DHCP are networks configured by DHCPv6.
	// +optional
	IPv6DHCP []IPv6DynamicNetwork `json:"ipv6DHCP,omitempty"`

	// ipv6SLAAC are networks configured by stateless address
	// autoconfiguration.
	// +optional
	IPv6SLAAC []IPv6DynamicNetwork `json:"ipv6SLAAC,omitempty"`
}

// NetworkDataServices are the services the host uses on every network.
type NetworkDataServices struct {
	// dns are DNS server addresses, IPv4 or IPv6.
	// +optional
	DNS []IPAddress `json:"dns,omitempty"`

	// dnsFromIPPool is the name of a Metal3 IPPool whose DNS servers are used.
	// +optional
	DNSFromIPPool *string `json:"dnsFromIPPool,omitempty"`
}

// NetworkData describes the network configuration rendered for each machine,
// in the OpenStack network data format that cloud-init and Ironic understand.
type NetworkData struct {
	// links are the layer-2 interfaces.
	// +optional
	Links *NetworkDataLinks `json:"links,omitempty"`

	// networks are the layer-3 configurations of the links.
	// +optional
	Networks *NetworkDataNetworks `json:"networks,omitempty"`

	// services are host-wide services such as DNS.
	// +optional
	Services *NetworkDataServices `json:"services,omitempty"`
}
