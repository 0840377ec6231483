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
)

// The layer-3 part of a Metal3DataTemplate's network data: networks, their
// routes and the routes' gateways and services.

// NetworkGatewayv4 says where the gateway of an IPv4 route comes from. Set at
// least one field; when several are set, the first of fromPoolAnnotation,
// fromPoolRef, fromIPPool and string is used.
type NetworkGatewayv4 struct {
	// string is a gateway address written as is.
	// +optional
	String *ipamv1.IPAddressv4Str `json:"string,omitempty"`

	// fromIPPool is the name of a Metal3 IPPool whose gateway is used.
	// Prefer fromPoolRef.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	FromIPPool string `json:"fromIPPool,omitempty"`

	// fromPoolRef is a pool whose gateway is used.
	// +optional
	FromPoolRef IPPoolReference `json:"fromPoolRef,omitempty,omitzero"`

	// fromPoolAnnotation reads the name of the pool whose gateway is used
	// from an annotation.
	// +optional
	FromPoolAnnotation FromPoolAnnotation `json:"fromPoolAnnotation,omitempty,omitzero"`
}

// NetworkGatewayv6 says where the gateway of an IPv6 route comes from. Set at
// least one field; when several are set, the first of fromPoolAnnotation,
// fromPoolRef, fromIPPool and string is used.
type NetworkGatewayv6 struct {
	// string is a gateway address written as is.
	// +optional
	String *ipamv1.IPAddressv6Str `json:"string,omitempty"`

	// fromIPPool is the name of a Metal3 IPPool whose gateway is used.
	// Prefer fromPoolRef.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	FromIPPool string `json:"fromIPPool,omitempty"`

	// fromPoolRef is a pool whose gateway is used.
	// +optional
	FromPoolRef IPPoolReference `json:"fromPoolRef,omitempty,omitzero"`

	// fromPoolAnnotation reads the name of the pool whose gateway is used
	// from an annotation.
	// +optional
	FromPoolAnnotation FromPoolAnnotation `json:"fromPoolAnnotation,omitempty,omitzero"`
}

// NetworkDataServicev4 are the services reachable through an IPv4 route.
type NetworkDataServicev4 struct {
	// dns are DNS server addresses.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	DNS []ipamv1.IPAddressv4Str `json:"dns,omitempty"`

	// dnsFromIPPool is the name of a Metal3 IPPool whose DNS servers are used.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	DNSFromIPPool string `json:"dnsFromIPPool,omitempty"`
}

// NetworkDataServicev6 are the services reachable through an IPv6 route.
type NetworkDataServicev6 struct {
	// dns are DNS server addresses.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	DNS []ipamv1.IPAddressv6Str `json:"dns,omitempty"`

	// dnsFromIPPool is the name of a Metal3 IPPool whose DNS servers are used.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	DNSFromIPPool string `json:"dnsFromIPPool,omitempty"`
}

// NetworkDataRoutev4 is a static IPv4 route of a network.
type NetworkDataRoutev4 struct {
	// network is the destination network address.
	// +required
	Network ipamv1.IPAddressv4Str `json:"network,omitempty"`

	// prefix is the length of the destination network prefix.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=32
	// +optional
	Prefix *int32 `json:"prefix,omitempty"`

	// gateway is the next hop.
	// +required
	Gateway NetworkGatewayv4 `json:"gateway,omitempty,omitzero"`

	// services reachable through the route.
	// +optional
	Services *NetworkDataServicev4 `json:"services,omitempty"`
}

// NetworkDataRoutev6 is a static IPv6 route of a network.
type NetworkDataRoutev6 struct {
	// network is the destination network address.
	// +required
	Network ipamv1.IPAddressv6Str `json:"network,omitempty"`

	// prefix is the length of the destination network prefix.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=128
	// +optional
	Prefix *int32 `json:"prefix,omitempty"`

	// gateway is the next hop.
	// +required
	Gateway NetworkGatewayv6 `json:"gateway,omitempty,omitzero"`

	// services reachable through the route.
	// +optional
	Services *NetworkDataServicev6 `json:"services,omitempty"`
}

// NetworkDataIPv4 is an IPv4 network with a static address allocated from an
// IP pool. Name the pool at least one way; when several are set, the first of
// fromPoolAnnotation, fromPoolRef and ipAddressFromIPPool is used.
type NetworkDataIPv4 struct {
	// id names the network in the rendered network data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ID string `json:"id,omitempty"`

	// link is the id of the link the network is configured on.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Link string `json:"link,omitempty"`

	// ipAddressFromIPPool is the name of the Metal3 IPPool the address is
	// allocated from. Prefer fromPoolRef.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	IPAddressFromIPPool string `json:"ipAddressFromIPPool,omitempty"`

	// fromPoolRef is the pool the address is allocated from.
	// +optional
	FromPoolRef IPPoolReference `json:"fromPoolRef,omitempty,omitzero"`

	// fromPoolAnnotation reads the name of the pool the address is allocated
	// from from an annotation.
	// +optional
	FromPoolAnnotation FromPoolAnnotation `json:"fromPoolAnnotation,omitempty,omitzero"`

	// routes are static routes of the network. Destination networks are
	// unique.
	// +optional
	// +listType=map
	// +listMapKey=network
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	Routes []NetworkDataRoutev4 `json:"routes,omitempty"`
}

// NetworkDataIPv6 is an IPv6 network with a static address allocated from an
// IP pool. Name the pool at least one way; when several are set, the first of
// fromPoolAnnotation, fromPoolRef and ipAddressFromIPPool is used.
type NetworkDataIPv6 struct {
	// id names the network in the rendered network data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ID string `json:"id,omitempty"`

	// link is the id of the link the network is configured on.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Link string `json:"link,omitempty"`

	// ipAddressFromIPPool is the name of the Metal3 IPPool the address is
	// allocated from. Prefer fromPoolRef.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	IPAddressFromIPPool string `json:"ipAddressFromIPPool,omitempty"`

	// fromPoolRef is the pool the address is allocated from.
	// +optional
	FromPoolRef IPPoolReference `json:"fromPoolRef,omitempty,omitzero"`

	// fromPoolAnnotation reads the name of the pool the address is allocated
	// from from an annotation.
	// +optional
	FromPoolAnnotation FromPoolAnnotation `json:"fromPoolAnnotation,omitempty,omitzero"`

	// routes are static routes of the network. Destination networks are
	// unique.
	// +optional
	// +listType=map
	// +listMapKey=network
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	Routes []NetworkDataRoutev6 `json:"routes,omitempty"`
}

// NetworkDataIPv4DHCP is an IPv4 network whose address the host obtains by
// DHCP.
type NetworkDataIPv4DHCP struct {
	// id names the network in the rendered network data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ID string `json:"id,omitempty"`

	// link is the id of the link the network is configured on.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Link string `json:"link,omitempty"`

	// routes are static routes added to the network. Destination networks
	// are unique.
	// +optional
	// +listType=map
	// +listMapKey=network
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	Routes []NetworkDataRoutev4 `json:"routes,omitempty"`
}

// NetworkDataIPv6DHCP is an IPv6 network whose address the host obtains by
// DHCPv6 or SLAAC.
type NetworkDataIPv6DHCP struct {
	// id names the network in the rendered network data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ID string `json:"id,omitempty"`

	// link is the id of the link the network is configured on.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Link string `json:"link,omitempty"`

	// routes are static routes added to the network. Destination networks
	// are unique.
	// +optional
	// +listType=map
	// +listMapKey=network
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	Routes []NetworkDataRoutev6 `json:"routes,omitempty"`
}

// NetworkDataNetwork lists the layer-3 networks of the host. Within each
// list, ids are unique.
type NetworkDataNetwork struct {
	// ipv4 are networks with a static IPv4 address.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	IPv4 []NetworkDataIPv4 `json:"ipv4,omitempty"`

	// ipv6 are networks with a static IPv6 address.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	IPv6 []NetworkDataIPv6 `json:"ipv6,omitempty"`

	// ipv4DHCP are networks configured by DHCP.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	IPv4DHCP []NetworkDataIPv4DHCP `json:"ipv4DHCP,omitempty"`

	// ipv6DHCP are networks configured by DHCPv6.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	IPv6DHCP []NetworkDataIPv6DHCP `json:"ipv6DHCP,omitempty"`

	// ipv6SLAAC are networks configured by stateless address
	// autoconfiguration.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	IPv6SLAAC []NetworkDataIPv6DHCP `json:"ipv6SLAAC,omitempty"`
}
