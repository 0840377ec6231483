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

package v1beta2

import (
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The network data part of a Metal3DataTemplate (OpenStack network_data.json):
// the top-level NetworkData, its links and its services. Its networks, routes
// and gateways are in metal3datatemplate_networks_types.go.

// EthernetLinkType is the kind of a physical or virtual ethernet link, as
// understood by the OpenStack network data format. The field that holds it
// is a plain string, limited by an enum marker to the values below; the alias
// keeps the name and constants of v1beta1.
type EthernetLinkType = string

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

// BondMode is the Linux bonding mode of a bond link. The field that holds it
// is a plain string, limited by an enum marker to the values below; the alias
// keeps the name and constants of v1beta1.
type BondMode = string

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
// its members. The field that holds it is a plain string, limited by an enum
// marker to the values below; the alias keeps the name and constants of
// v1beta1.
type BondXmitHashPolicy = string

const (
	// BondXmitHashPolicyLayer2 hashes MAC addresses.
	BondXmitHashPolicyLayer2 BondXmitHashPolicy = "layer2"
	// BondXmitHashPolicyLayer34 hashes IP addresses and ports.
	BondXmitHashPolicyLayer34 BondXmitHashPolicy = "layer3+4"
	// BondXmitHashPolicyLayer23 hashes MAC and IP addresses.
	BondXmitHashPolicyLayer23 BondXmitHashPolicy = "layer2+3"
)

// NetworkLinkEthernetMacFromAnnotation reads a MAC address from an annotation
// of one of the machine's objects.
type NetworkLinkEthernetMacFromAnnotation struct {
	// object whose annotation is read.
	// +required
	// +kubebuilder:validation:Enum=machine;metal3machine;baremetalhost
	Object string `json:"object,omitempty"`

	// annotation is the key of the annotation to read.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Annotation string `json:"annotation,omitempty"`
}

// NetworkLinkEthernetMac says where the MAC address of a link comes from. Set
// exactly one of its fields.
type NetworkLinkEthernetMac struct {
	// string is a MAC address written as is.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	String string `json:"string,omitempty"`

	// fromHostInterface is the name of a BareMetalHost interface, as found
	// by inspection, whose MAC address is used.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	FromHostInterface string `json:"fromHostInterface,omitempty"`

	// fromAnnotation reads the MAC address from an annotation.
	// +optional
	FromAnnotation NetworkLinkEthernetMacFromAnnotation `json:"fromAnnotation,omitempty,omitzero"`
}

// NetworkDataLinkEthernet is an ethernet interface of the host.
type NetworkDataLinkEthernet struct {
	// type of the link; phy for a physical NIC.
	// +required
	// +kubebuilder:validation:Enum=bridge;dvs;hw_veb;hyperv;ovs;tap;vhostuser;vif;phy
	Type string `json:"type,omitempty"`

	// id names the link; networks, bonds and VLANs refer to it by this id.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ID string `json:"id,omitempty"`

	// name is the interface name to give the link on the host: cloud-init
	// renames the interface with the link's MAC address to it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9._-]*$`
	// +optional
	Name string `json:"name,omitempty"`

	// mtu of the link in bytes.
	// +kubebuilder:default=1500
	// +kubebuilder:validation:Maximum=9000
	// +kubebuilder:validation:Minimum=1280
	// +optional
	MTU int32 `json:"mtu,omitempty"`

	// macAddress identifies the interface.
	// +required
	MACAddress *NetworkLinkEthernetMac `json:"macAddress,omitempty"`
}

// NetworkDataLinkBond is a bond built from other links of the host.
type NetworkDataLinkBond struct {
	// bondMode is the bonding mode.
	// +required
	// +kubebuilder:validation:Enum="balance-rr";"active-backup";"balance-xor";"broadcast";"balance-tlb";"balance-alb";"802.3ad"
	BondMode string `json:"bondMode,omitempty"`

	// bondXmitHashPolicy spreads outgoing traffic over the members, for the
	// modes that hash (balance-xor and 802.3ad).
	// +kubebuilder:validation:Enum="layer2";"layer3+4";"layer2+3"
	// +optional
	BondXmitHashPolicy string `json:"bondXmitHashPolicy,omitempty"`

	// id names the link; networks and VLANs refer to it by this id.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ID string `json:"id,omitempty"`

	// name is the interface name to give the bond on the host.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9._-]*$`
	// +optional
	Name string `json:"name,omitempty"`

	// mtu of the link in bytes.
	// +kubebuilder:default=1500
	// +kubebuilder:validation:Maximum=9000
	// +kubebuilder:validation:Minimum=1280
	// +optional
	MTU int32 `json:"mtu,omitempty"`

	// macAddress of the bond.
	// +required
	MACAddress *NetworkLinkEthernetMac `json:"macAddress,omitempty"`

	// parameters are further bonding options, passed through to the network
	// data unchanged. Names are unique.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	Parameters []NetworkDataLinkBondParam `json:"parameters,omitempty"`

	// bondLinks are the ids of the member links.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=512
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	BondLinks []string `json:"bondLinks,omitempty"`
}

// NetworkDataLinkBondParam is one further bonding option of a bond.
type NetworkDataLinkBondParam struct {
	// name of the option.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Name string `json:"name,omitempty"`

	// value of the option, any JSON value (e.g. 100 for miimon), written as
	// is.
	// +optional
	Value apiextensionsv1.JSON `json:"value,omitempty"`
}

// NetworkDataLinkVlan is a VLAN on top of another link of the host.
type NetworkDataLinkVlan struct {
	// vlanID is the 802.1Q VLAN tag.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4096
	// +required
	VlanID *int32 `json:"vlanID,omitempty"`

	// id names the link; networks refer to it by this id.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ID string `json:"id,omitempty"`

	// name is the interface name to give the VLAN on the host.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9._-]*$`
	// +optional
	Name string `json:"name,omitempty"`

	// mtu of the link in bytes.
	// +kubebuilder:default=1500
	// +kubebuilder:validation:Maximum=9000
	// +kubebuilder:validation:Minimum=1280
	// +optional
	MTU int32 `json:"mtu,omitempty"`

	// macAddress of the VLAN interface.
	// +required
	MACAddress *NetworkLinkEthernetMac `json:"macAddress,omitempty"`

	// vlanLink is the id of the link that carries the VLAN.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	VlanLink string `json:"vlanLink,omitempty"`
}

// NetworkDataLink lists the layer-2 links of the host. Within each list, ids
// (VLAN ids for vlans) are unique.
type NetworkDataLink struct {
	// ethernets are the ethernet interfaces.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Ethernets []NetworkDataLinkEthernet `json:"ethernets,omitempty"`

	// bonds are the bonds.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	Bonds []NetworkDataLinkBond `json:"bonds,omitempty"`

	// vlans are the VLAN interfaces.
	// +optional
	// +listType=map
	// +listMapKey=vlanID
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	Vlans []NetworkDataLinkVlan `json:"vlans,omitempty"`
}

// NetworkDataService are the services the host uses on every network.
type NetworkDataService struct {
	// dns are DNS server addresses, IPv4 or IPv6.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	DNS []ipamv1.IPAddressStr `json:"dns,omitempty"`

	// dnsFromIPPool is the name of a Metal3 IPPool whose DNS servers are used.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	DNSFromIPPool string `json:"dnsFromIPPool,omitempty"`
}

// NetworkData describes the network configuration rendered for each machine,
// in the OpenStack network data format that cloud-init and Ironic understand.
type NetworkData struct {
	// links are the layer-2 interfaces.
	// +optional
	Links *NetworkDataLink `json:"links,omitempty"`

	// networks are the layer-3 configurations of the links.
	// +optional
	Networks *NetworkDataNetwork `json:"networks,omitempty"`

	// services are host-wide services such as DNS.
	// +optional
	Services *NetworkDataService `json:"services,omitempty"`
}
