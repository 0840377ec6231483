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
	"cmp"
	"maps"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimachineryconversion "k8s.io/apimachinery/pkg/conversion"
	"k8s.io/utils/ptr"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Conversions of a Metal3DataTemplate's network data, whose types v1beta2
// renamed (so conversion-gen pairs none of them), and the restore of what
// v1beta1 cannot say; see conversion_data.go.

// restoreNetworkData takes back the links and networks whose v1beta1
// spelling is the one the stashed ones convert to. Of a bond or network a
// v1beta1 client changed, it still takes back the order of the bond's
// parameters (from the stashed bond of that id) and the routes v1beta1
// spells alike (from the stashed networks nothing else took back).
func restoreNetworkData(stashed, dst *infrav1.NetworkData, src *NetworkData) {
	if l, sl := dst.Links, stashed.Links; l != nil && sl != nil {
		newStash(sl.Ethernets, Convert_v1beta2_NetworkDataLinkEthernet_To_v1beta1_EthernetLink).restore(l.Ethernets, src.Links.Ethernets)
		newStash(sl.Vlans, Convert_v1beta2_NetworkDataLinkVlan_To_v1beta1_VLANLink).restore(l.Vlans, src.Links.VLANs)
		bonds := newStash(sl.Bonds, Convert_v1beta2_NetworkDataLinkBond_To_v1beta1_BondLink)
		done := bonds.restore(l.Bonds, src.Links.Bonds)
		left := bonds.left()
		for i := range l.Bonds {
			j := slices.IndexFunc(left, func(b infrav1.NetworkDataLinkBond) bool { return b.ID == l.Bonds[i].ID })
			if !done[i] && j >= 0 {
				restoreOne(&l.Bonds[i].Parameters, &left[j].Parameters, &src.Links.Bonds[i].Parameters, bondParamsToSpoke)
			}
		}
	}
	n, sn, c := dst.Networks, stashed.Networks, src.Networks
	if n == nil || sn == nil {
		return
	}
	ipv4 := newStash(sn.IPv4, Convert_v1beta2_NetworkDataIPv4_To_v1beta1_IPv4Network)
	ipv4DHCP := newStash(sn.IPv4DHCP, Convert_v1beta2_NetworkDataIPv4DHCP_To_v1beta1_IPv4DynamicNetwork)
	ipv6 := newStash(sn.IPv6, Convert_v1beta2_NetworkDataIPv6_To_v1beta1_IPv6Network)
	ipv6DHCP := newStash(sn.IPv6DHCP, Convert_v1beta2_NetworkDataIPv6DHCP_To_v1beta1_IPv6DynamicNetwork)
	ipv6SLAAC := newStash(sn.IPv6SLAAC, Convert_v1beta2_NetworkDataIPv6DHCP_To_v1beta1_IPv6DynamicNetwork)
	done4, doneDHCP4 := ipv4.restore(n.IPv4, c.IPv4), ipv4DHCP.restore(n.IPv4DHCP, c.IPv4DHCP)
	done6, doneDHCP6, doneSLAAC := ipv6.restore(n.IPv6, c.IPv6), ipv6DHCP.restore(n.IPv6DHCP, c.IPv6DHCP), ipv6SLAAC.restore(n.IPv6SLAAC, c.IPv6SLAAC)

	// The routes of the stashed networks nothing took back, for the networks
	// a v1beta1 client changed.
	var left4 []infrav1.NetworkDataRoutev4
	for _, nw := range ipv4.left() {
		left4 = append(left4, nw.Routes...)
	}
	for _, nw := range ipv4DHCP.left() {
		left4 = append(left4, nw.Routes...)
	}
	var left6 []infrav1.NetworkDataRoutev6
	for _, nw := range ipv6.left() {
		left6 = append(left6, nw.Routes...)
	}
	for _, nw := range slices.Concat(ipv6DHCP.left(), ipv6SLAAC.left()) {
		left6 = append(left6, nw.Routes...)
	}
	routes4 := newStash(left4, Convert_v1beta2_NetworkDataRoutev4_To_v1beta1_IPv4Route)
	routes6 := newStash(left6, Convert_v1beta2_NetworkDataRoutev6_To_v1beta1_IPv6Route)
	for i := range n.IPv4 {
		if !done4[i] {
			routes4.restore(n.IPv4[i].Routes, c.IPv4[i].Routes)
		}
	}
	for i := range n.IPv4DHCP {
		if !doneDHCP4[i] {
			routes4.restore(n.IPv4DHCP[i].Routes, c.IPv4DHCP[i].Routes)
		}
	}
	for i := range n.IPv6 {
		if !done6[i] {
			routes6.restore(n.IPv6[i].Routes, c.IPv6[i].Routes)
		}
	}
	for i := range n.IPv6DHCP {
		if !doneDHCP6[i] {
			routes6.restore(n.IPv6DHCP[i].Routes, c.IPv6DHCP[i].Routes)
		}
	}
	for i := range n.IPv6SLAAC {
		if !doneSLAAC[i] {
			routes6.restore(n.IPv6SLAAC[i].Routes, c.IPv6SLAAC[i].Routes)
		}
	}
}

// Convert_v1beta1_NetworkDataLinks_To_v1beta2_NetworkDataLink converts the
// link lists.
func Convert_v1beta1_NetworkDataLinks_To_v1beta2_NetworkDataLink(in *NetworkDataLinks, out *infrav1.NetworkDataLink, s apimachineryconversion.Scope) error {
	var err error
	if out.Ethernets, err = convertList(in.Ethernets, Convert_v1beta1_EthernetLink_To_v1beta2_NetworkDataLinkEthernet, s); err != nil {
		return err
	}
	if out.Bonds, err = convertList(in.Bonds, Convert_v1beta1_BondLink_To_v1beta2_NetworkDataLinkBond, s); err != nil {
		return err
	}
	out.Vlans, err = convertList(in.VLANs, Convert_v1beta1_VLANLink_To_v1beta2_NetworkDataLinkVlan, s)
	return err
}

// Convert_v1beta2_NetworkDataLink_To_v1beta1_NetworkDataLinks converts the
// link lists.
func Convert_v1beta2_NetworkDataLink_To_v1beta1_NetworkDataLinks(in *infrav1.NetworkDataLink, out *NetworkDataLinks, s apimachineryconversion.Scope) error {
	var err error
	if out.Ethernets, err = convertList(in.Ethernets, Convert_v1beta2_NetworkDataLinkEthernet_To_v1beta1_EthernetLink, s); err != nil {
		return err
	}
	if out.Bonds, err = convertList(in.Bonds, Convert_v1beta2_NetworkDataLinkBond_To_v1beta1_BondLink, s); err != nil {
		return err
	}
	out.VLANs, err = convertList(in.Vlans, Convert_v1beta2_NetworkDataLinkVlan_To_v1beta1_VLANLink, s)
	return err
}

// Convert_v1beta1_EthernetLink_To_v1beta2_NetworkDataLinkEthernet converts
// an ethernet link.
func Convert_v1beta1_EthernetLink_To_v1beta2_NetworkDataLinkEthernet(in *EthernetLink, out *infrav1.NetworkDataLinkEthernet, s apimachineryconversion.Scope) error {
	mtu, err := toInt32("mtu", in.MTU)
	if err != nil {
		return err
	}
	*out = infrav1.NetworkDataLinkEthernet{Type: string(in.Type), ID: in.ID, Name: in.Name, MTU: mtu}
	out.MACAddress, err = macToHub(&in.MACAddress, s)
	return err
}

// Convert_v1beta2_NetworkDataLinkEthernet_To_v1beta1_EthernetLink converts
// an ethernet link.
func Convert_v1beta2_NetworkDataLinkEthernet_To_v1beta1_EthernetLink(in *infrav1.NetworkDataLinkEthernet, out *EthernetLink, s apimachineryconversion.Scope) error {
	*out = EthernetLink{Type: EthernetLinkType(in.Type), ID: in.ID, Name: in.Name, MTU: int(in.MTU)}
	return macToSpoke(in.MACAddress, &out.MACAddress, s)
}

// Convert_v1beta1_BondLink_To_v1beta2_NetworkDataLinkBond turns the
// parameters map into v1beta2's list, sorted by name.
func Convert_v1beta1_BondLink_To_v1beta2_NetworkDataLinkBond(in *BondLink, out *infrav1.NetworkDataLinkBond, s apimachineryconversion.Scope) error {
	mtu, err := toInt32("mtu", in.MTU)
	if err != nil {
		return err
	}
	*out = infrav1.NetworkDataLinkBond{
		BondMode:           string(in.BondMode),
		BondXmitHashPolicy: string(in.BondXmitHashPolicy),
		ID:                 in.ID,
		Name:               in.Name,
		MTU:                mtu,
		BondLinks:          in.BondLinks,
	}
	if in.Parameters != nil {
		out.Parameters = make([]infrav1.NetworkDataLinkBondParam, 0, len(in.Parameters))
		for _, name := range slices.Sorted(maps.Keys(in.Parameters)) {
			out.Parameters = append(out.Parameters, infrav1.NetworkDataLinkBondParam{Name: name, Value: in.Parameters[name]})
		}
	}
	out.MACAddress, err = macToHub(&in.MACAddress, s)
	return err
}

// Convert_v1beta2_NetworkDataLinkBond_To_v1beta1_BondLink turns the
// parameters list into v1beta1's map.
func Convert_v1beta2_NetworkDataLinkBond_To_v1beta1_BondLink(in *infrav1.NetworkDataLinkBond, out *BondLink, s apimachineryconversion.Scope) error {
	*out = BondLink{
		BondMode:           BondMode(in.BondMode),
		BondXmitHashPolicy: BondXmitHashPolicy(in.BondXmitHashPolicy),
		ID:                 in.ID,
		Name:               in.Name,
		MTU:                int(in.MTU),
		BondLinks:          in.BondLinks,
	}
	if err := bondParamsToSpoke(&in.Parameters, &out.Parameters, s); err != nil {
		return err
	}
	return macToSpoke(in.MACAddress, &out.MACAddress, s)
}

// bondParamsToSpoke turns a bond's parameter list into v1beta1's map: of a
// name listed twice the last value wins.
func bondParamsToSpoke(in *[]infrav1.NetworkDataLinkBondParam, out *map[string]apiextensionsv1.JSON, _ apimachineryconversion.Scope) error {
	if *in == nil {
		*out = nil
		return nil
	}
	*out = make(map[string]apiextensionsv1.JSON, len(*in))
	for _, p := range *in {
		(*out)[p.Name] = p.Value
	}
	return nil
}

// Convert_v1beta1_VLANLink_To_v1beta2_NetworkDataLinkVlan converts a VLAN
// link; its vlanID, required, is always set.
func Convert_v1beta1_VLANLink_To_v1beta2_NetworkDataLinkVlan(in *VLANLink, out *infrav1.NetworkDataLinkVlan, s apimachineryconversion.Scope) error {
	mtu, err := toInt32("mtu", in.MTU)
	if err != nil {
		return err
	}
	vlanID, err := toInt32("vlanID", in.VLANID)
	if err != nil {
		return err
	}
	*out = infrav1.NetworkDataLinkVlan{VlanID: &vlanID, VlanLink: in.VLANLink, ID: in.ID, Name: in.Name, MTU: mtu}
	out.MACAddress, err = macToHub(&in.MACAddress, s)
	return err
}

// Convert_v1beta2_NetworkDataLinkVlan_To_v1beta1_VLANLink converts a VLAN
// link, reading an unset vlanID as 0.
func Convert_v1beta2_NetworkDataLinkVlan_To_v1beta1_VLANLink(in *infrav1.NetworkDataLinkVlan, out *VLANLink, s apimachineryconversion.Scope) error {
	*out = VLANLink{VLANID: int(ptr.Deref(in.VlanID, 0)), VLANLink: in.VlanLink, ID: in.ID, Name: in.Name, MTU: int(in.MTU)}
	return macToSpoke(in.MACAddress, &out.MACAddress, s)
}

// macToHub converts a link's MAC address source, a value in v1beta1, to
// v1beta2's optional one: an empty source is none.
func macToHub(in *MACAddressSource, s apimachineryconversion.Scope) (*infrav1.NetworkLinkEthernetMac, error) {
	if *in == (MACAddressSource{}) {
		return nil, nil
	}
	out := &infrav1.NetworkLinkEthernetMac{}
	return out, Convert_v1beta1_MACAddressSource_To_v1beta2_NetworkLinkEthernetMac(in, out, s)
}

func macToSpoke(in *infrav1.NetworkLinkEthernetMac, out *MACAddressSource, s apimachineryconversion.Scope) error {
	*out = MACAddressSource{}
	if in == nil {
		return nil
	}
	return Convert_v1beta2_NetworkLinkEthernetMac_To_v1beta1_MACAddressSource(in, out, s)
}

// Convert_v1beta1_MACAddressSource_To_v1beta2_NetworkLinkEthernetMac
// converts v1beta1's optional strings and annotation to v1beta2's values,
// empty meaning unset.
func Convert_v1beta1_MACAddressSource_To_v1beta2_NetworkLinkEthernetMac(in *MACAddressSource, out *infrav1.NetworkLinkEthernetMac, _ apimachineryconversion.Scope) error {
	*out = infrav1.NetworkLinkEthernetMac{String: ptr.Deref(in.String, ""), FromHostInterface: ptr.Deref(in.FromHostInterface, "")}
	if a := in.FromAnnotation; a != nil {
		out.FromAnnotation = infrav1.NetworkLinkEthernetMacFromAnnotation{Object: string(a.Object), Annotation: a.Annotation}
	}
	return nil
}

// Convert_v1beta2_NetworkLinkEthernetMac_To_v1beta1_MACAddressSource leaves
// out what v1beta2 leaves empty.
func Convert_v1beta2_NetworkLinkEthernetMac_To_v1beta1_MACAddressSource(in *infrav1.NetworkLinkEthernetMac, out *MACAddressSource, _ apimachineryconversion.Scope) error {
	*out = MACAddressSource{String: stringOrNil(in.String), FromHostInterface: stringOrNil(in.FromHostInterface)}
	if a := in.FromAnnotation; a != (infrav1.NetworkLinkEthernetMacFromAnnotation{}) {
		out.FromAnnotation = &AnnotationSource{Object: DataSourceObject(a.Object), Annotation: a.Annotation}
	}
	return nil
}

// Convert_v1beta2_IPPoolReference_To_v1beta1_IPPoolReference spells out the
// kind v1beta2 may leave empty (meaning IPPool): v1beta1 requires it. An
// empty apiGroup means Metal3 IPAM in both, so it stays unset.
func Convert_v1beta2_IPPoolReference_To_v1beta1_IPPoolReference(in *infrav1.IPPoolReference, out *IPPoolReference, _ apimachineryconversion.Scope) error {
	*out = IPPoolReference{APIGroup: stringOrNil(in.APIGroup), Kind: cmp.Or(in.Kind, metal3PoolKind), Name: in.Name}
	return nil
}

// poolToHub converts v1beta1's optional pool reference and annotation to
// v1beta2's values, empty meaning unset.
func poolToHub(ref *IPPoolReference, annotation *AnnotationSource, outRef *infrav1.IPPoolReference, outAnnotation *infrav1.FromPoolAnnotation, s apimachineryconversion.Scope) error {
	*outRef, *outAnnotation = infrav1.IPPoolReference{}, infrav1.FromPoolAnnotation{}
	if annotation != nil {
		*outAnnotation = infrav1.FromPoolAnnotation{Object: string(annotation.Object), Annotation: annotation.Annotation}
	}
	if ref == nil {
		return nil
	}
	return Convert_v1beta1_IPPoolReference_To_v1beta2_IPPoolReference(ref, outRef, s)
}

// poolToSpoke converts back, leaving out what v1beta2 leaves empty.
func poolToSpoke(ref *infrav1.IPPoolReference, annotation *infrav1.FromPoolAnnotation, outRef **IPPoolReference, outAnnotation **AnnotationSource, s apimachineryconversion.Scope) error {
	*outRef, *outAnnotation = nil, nil
	if *annotation != (infrav1.FromPoolAnnotation{}) {
		*outAnnotation = &AnnotationSource{Object: DataSourceObject(annotation.Object), Annotation: annotation.Annotation}
	}
	if *ref == (infrav1.IPPoolReference{}) {
		return nil
	}
	*outRef = &IPPoolReference{}
	return Convert_v1beta2_IPPoolReference_To_v1beta1_IPPoolReference(ref, *outRef, s)
}

// Convert_v1beta1_NetworkDataNetworks_To_v1beta2_NetworkDataNetwork converts
// the network lists.
func Convert_v1beta1_NetworkDataNetworks_To_v1beta2_NetworkDataNetwork(in *NetworkDataNetworks, out *infrav1.NetworkDataNetwork, s apimachineryconversion.Scope) error {
	var err error
	if out.IPv4, err = convertList(in.IPv4, Convert_v1beta1_IPv4Network_To_v1beta2_NetworkDataIPv4, s); err != nil {
		return err
	}
	if out.IPv4DHCP, err = convertList(in.IPv4DHCP, Convert_v1beta1_IPv4DynamicNetwork_To_v1beta2_NetworkDataIPv4DHCP, s); err != nil {
		return err
	}
	if out.IPv6, err = convertList(in.IPv6, Convert_v1beta1_IPv6Network_To_v1beta2_NetworkDataIPv6, s); err != nil {
		return err
	}
	if out.IPv6DHCP, err = convertList(in.IPv6DHCP, Convert_v1beta1_IPv6DynamicNetwork_To_v1beta2_NetworkDataIPv6DHCP, s); err != nil {
		return err
	}
	out.IPv6SLAAC, err = convertList(in.IPv6SLAAC, Convert_v1beta1_IPv6DynamicNetwork_To_v1beta2_NetworkDataIPv6DHCP, s)
	return err
}

// Convert_v1beta2_NetworkDataNetwork_To_v1beta1_NetworkDataNetworks converts
// the network lists.
func Convert_v1beta2_NetworkDataNetwork_To_v1beta1_NetworkDataNetworks(in *infrav1.NetworkDataNetwork, out *NetworkDataNetworks, s apimachineryconversion.Scope) error {
	var err error
	if out.IPv4, err = convertList(in.IPv4, Convert_v1beta2_NetworkDataIPv4_To_v1beta1_IPv4Network, s); err != nil {
		return err
	}
	if out.IPv4DHCP, err = convertList(in.IPv4DHCP, Convert_v1beta2_NetworkDataIPv4DHCP_To_v1beta1_IPv4DynamicNetwork, s); err != nil {
		return err
	}
	if out.IPv6, err = convertList(in.IPv6, Convert_v1beta2_NetworkDataIPv6_To_v1beta1_IPv6Network, s); err != nil {
		return err
	}
	if out.IPv6DHCP, err = convertList(in.IPv6DHCP, Convert_v1beta2_NetworkDataIPv6DHCP_To_v1beta1_IPv6DynamicNetwork, s); err != nil {
		return err
	}
	out.IPv6SLAAC, err = convertList(in.IPv6SLAAC, Convert_v1beta2_NetworkDataIPv6DHCP_To_v1beta1_IPv6DynamicNetwork, s)
	return err
}

// Convert_v1beta1_IPv4Network_To_v1beta2_NetworkDataIPv4 converts a static
// IPv4 network.
func Convert_v1beta1_IPv4Network_To_v1beta2_NetworkDataIPv4(in *IPv4Network, out *infrav1.NetworkDataIPv4, s apimachineryconversion.Scope) error {
	*out = infrav1.NetworkDataIPv4{ID: in.ID, Link: in.Link, IPAddressFromIPPool: ptr.Deref(in.IPAddressFromIPPool, "")}
	if err := poolToHub(in.FromPoolRef, in.FromPoolAnnotation, &out.FromPoolRef, &out.FromPoolAnnotation, s); err != nil {
		return err
	}
	var err error
	out.Routes, err = convertList(in.Routes, Convert_v1beta1_IPv4Route_To_v1beta2_NetworkDataRoutev4, s)
	return err
}

// Convert_v1beta2_NetworkDataIPv4_To_v1beta1_IPv4Network converts a static
// IPv4 network.
func Convert_v1beta2_NetworkDataIPv4_To_v1beta1_IPv4Network(in *infrav1.NetworkDataIPv4, out *IPv4Network, s apimachineryconversion.Scope) error {
	*out = IPv4Network{ID: in.ID, Link: in.Link, IPAddressFromIPPool: stringOrNil(in.IPAddressFromIPPool)}
	if err := poolToSpoke(&in.FromPoolRef, &in.FromPoolAnnotation, &out.FromPoolRef, &out.FromPoolAnnotation, s); err != nil {
		return err
	}
	var err error
	out.Routes, err = convertList(in.Routes, Convert_v1beta2_NetworkDataRoutev4_To_v1beta1_IPv4Route, s)
	return err
}

// Convert_v1beta1_IPv6Network_To_v1beta2_NetworkDataIPv6 converts a static
// IPv6 network.
func Convert_v1beta1_IPv6Network_To_v1beta2_NetworkDataIPv6(in *IPv6Network, out *infrav1.NetworkDataIPv6, s apimachineryconversion.Scope) error {
	*out = infrav1.NetworkDataIPv6{ID: in.ID, Link: in.Link, IPAddressFromIPPool: in.IPAddressFromIPPool}
	if err := poolToHub(in.FromPoolRef, in.FromPoolAnnotation, &out.FromPoolRef, &out.FromPoolAnnotation, s); err != nil {
		return err
	}
	var err error
	out.Routes, err = convertList(in.Routes, Convert_v1beta1_IPv6Route_To_v1beta2_NetworkDataRoutev6, s)
	return err
}

// Convert_v1beta2_NetworkDataIPv6_To_v1beta1_IPv6Network converts a static
// IPv6 network.
func Convert_v1beta2_NetworkDataIPv6_To_v1beta1_IPv6Network(in *infrav1.NetworkDataIPv6, out *IPv6Network, s apimachineryconversion.Scope) error {
	*out = IPv6Network{ID: in.ID, Link: in.Link, IPAddressFromIPPool: in.IPAddressFromIPPool}
	if err := poolToSpoke(&in.FromPoolRef, &in.FromPoolAnnotation, &out.FromPoolRef, &out.FromPoolAnnotation, s); err != nil {
		return err
	}
	var err error
	out.Routes, err = convertList(in.Routes, Convert_v1beta2_NetworkDataRoutev6_To_v1beta1_IPv6Route, s)
	return err
}

// Convert_v1beta1_IPv4DynamicNetwork_To_v1beta2_NetworkDataIPv4DHCP converts
// a DHCP network.
func Convert_v1beta1_IPv4DynamicNetwork_To_v1beta2_NetworkDataIPv4DHCP(in *IPv4DynamicNetwork, out *infrav1.NetworkDataIPv4DHCP, s apimachineryconversion.Scope) error {
	routes, err := convertList(in.Routes, Convert_v1beta1_IPv4Route_To_v1beta2_NetworkDataRoutev4, s)
	*out = infrav1.NetworkDataIPv4DHCP{ID: in.ID, Link: in.Link, Routes: routes}
	return err
}

// Convert_v1beta2_NetworkDataIPv4DHCP_To_v1beta1_IPv4DynamicNetwork converts
// a DHCP network.
func Convert_v1beta2_NetworkDataIPv4DHCP_To_v1beta1_IPv4DynamicNetwork(in *infrav1.NetworkDataIPv4DHCP, out *IPv4DynamicNetwork, s apimachineryconversion.Scope) error {
	routes, err := convertList(in.Routes, Convert_v1beta2_NetworkDataRoutev4_To_v1beta1_IPv4Route, s)
	*out = IPv4DynamicNetwork{ID: in.ID, Link: in.Link, Routes: routes}
	return err
}

// Convert_v1beta1_IPv6DynamicNetwork_To_v1beta2_NetworkDataIPv6DHCP converts
// a DHCPv6 or SLAAC network.
func Convert_v1beta1_IPv6DynamicNetwork_To_v1beta2_NetworkDataIPv6DHCP(in *IPv6DynamicNetwork, out *infrav1.NetworkDataIPv6DHCP, s apimachineryconversion.Scope) error {
	routes, err := convertList(in.Routes, Convert_v1beta1_IPv6Route_To_v1beta2_NetworkDataRoutev6, s)
	*out = infrav1.NetworkDataIPv6DHCP{ID: in.ID, Link: in.Link, Routes: routes}
	return err
}

// Convert_v1beta2_NetworkDataIPv6DHCP_To_v1beta1_IPv6DynamicNetwork converts
// a DHCPv6 or SLAAC network.
func Convert_v1beta2_NetworkDataIPv6DHCP_To_v1beta1_IPv6DynamicNetwork(in *infrav1.NetworkDataIPv6DHCP, out *IPv6DynamicNetwork, s apimachineryconversion.Scope) error {
	routes, err := convertList(in.Routes, Convert_v1beta2_NetworkDataRoutev6_To_v1beta1_IPv6Route, s)
	*out = IPv6DynamicNetwork{ID: in.ID, Link: in.Link, Routes: routes}
	return err
}

// Convert_v1beta1_IPv4Route_To_v1beta2_NetworkDataRoutev4 converts a route;
// a prefix of 0 is v1beta2's unset one.
func Convert_v1beta1_IPv4Route_To_v1beta2_NetworkDataRoutev4(in *IPv4Route, out *infrav1.NetworkDataRoutev4, s apimachineryconversion.Scope) error {
	*out = infrav1.NetworkDataRoutev4{Network: infrav1.IPv4Address(in.Network)}
	if in.Prefix != 0 {
		prefix, err := toInt32("prefix", in.Prefix)
		if err != nil {
			return err
		}
		out.Prefix = &prefix
	}
	g, og := &in.Gateway, &out.Gateway
	og.FromIPPool = ptr.Deref(g.FromIPPool, "")
	if g.String != nil {
		og.String = new(infrav1.IPv4Address(*g.String))
	}
	if err := poolToHub(g.FromPoolRef, g.FromPoolAnnotation, &og.FromPoolRef, &og.FromPoolAnnotation, s); err != nil {
		return err
	}
	if in.Services != nil {
		out.Services = &infrav1.NetworkDataServicev4{
			DNS:           convertStrings[IPv4Address, infrav1.IPv4Address](in.Services.DNS),
			DNSFromIPPool: ptr.Deref(in.Services.DNSFromIPPool, ""),
		}
	}
	return nil
}

// Convert_v1beta2_NetworkDataRoutev4_To_v1beta1_IPv4Route converts a route,
// reading an unset prefix as 0.
func Convert_v1beta2_NetworkDataRoutev4_To_v1beta1_IPv4Route(in *infrav1.NetworkDataRoutev4, out *IPv4Route, s apimachineryconversion.Scope) error {
	*out = IPv4Route{Network: IPv4Address(in.Network), Prefix: int(ptr.Deref(in.Prefix, 0))}
	g, og := &in.Gateway, &out.Gateway
	og.FromIPPool = stringOrNil(g.FromIPPool)
	if g.String != nil {
		og.String = new(IPv4Address(*g.String))
	}
	if err := poolToSpoke(&g.FromPoolRef, &g.FromPoolAnnotation, &og.FromPoolRef, &og.FromPoolAnnotation, s); err != nil {
		return err
	}
	if in.Services != nil {
		out.Services = &IPv4RouteServices{
			DNS:           convertStrings[infrav1.IPv4Address, IPv4Address](in.Services.DNS),
			DNSFromIPPool: stringOrNil(in.Services.DNSFromIPPool),
		}
	}
	return nil
}

// Convert_v1beta1_IPv6Route_To_v1beta2_NetworkDataRoutev6 converts a route;
// a prefix of 0 is v1beta2's unset one.
func Convert_v1beta1_IPv6Route_To_v1beta2_NetworkDataRoutev6(in *IPv6Route, out *infrav1.NetworkDataRoutev6, s apimachineryconversion.Scope) error {
	*out = infrav1.NetworkDataRoutev6{Network: infrav1.IPv6Address(in.Network)}
	if in.Prefix != 0 {
		prefix, err := toInt32("prefix", in.Prefix)
		if err != nil {
			return err
		}
		out.Prefix = &prefix
	}
	g, og := &in.Gateway, &out.Gateway
	og.FromIPPool = ptr.Deref(g.FromIPPool, "")
	if g.String != nil {
		og.String = new(infrav1.IPv6Address(*g.String))
	}
	if err := poolToHub(g.FromPoolRef, g.FromPoolAnnotation, &og.FromPoolRef, &og.FromPoolAnnotation, s); err != nil {
		return err
	}
	if in.Services != nil {
		out.Services = &infrav1.NetworkDataServicev6{
			DNS:           convertStrings[IPv6Address, infrav1.IPv6Address](in.Services.DNS),
			DNSFromIPPool: ptr.Deref(in.Services.DNSFromIPPool, ""),
		}
	}
	return nil
}

// Convert_v1beta2_NetworkDataRoutev6_To_v1beta1_IPv6Route converts a route,
// reading an unset prefix as 0.
func Convert_v1beta2_NetworkDataRoutev6_To_v1beta1_IPv6Route(in *infrav1.NetworkDataRoutev6, out *IPv6Route, s apimachineryconversion.Scope) error {
	*out = IPv6Route{Network: IPv6Address(in.Network), Prefix: int(ptr.Deref(in.Prefix, 0))}
	g, og := &in.Gateway, &out.Gateway
	og.FromIPPool = stringOrNil(g.FromIPPool)
	if g.String != nil {
		og.String = new(IPv6Address(*g.String))
	}
	if err := poolToSpoke(&g.FromPoolRef, &g.FromPoolAnnotation, &og.FromPoolRef, &og.FromPoolAnnotation, s); err != nil {
		return err
	}
	if in.Services != nil {
		out.Services = &IPv6RouteServices{
			DNS:           convertStrings[infrav1.IPv6Address, IPv6Address](in.Services.DNS),
			DNSFromIPPool: stringOrNil(in.Services.DNSFromIPPool),
		}
	}
	return nil
}

// Convert_v1beta1_NetworkDataServices_To_v1beta2_NetworkDataService converts
// the host-wide services.
func Convert_v1beta1_NetworkDataServices_To_v1beta2_NetworkDataService(in *NetworkDataServices, out *infrav1.NetworkDataService, _ apimachineryconversion.Scope) error {
	*out = infrav1.NetworkDataService{
		DNS:           convertStrings[IPAddress, infrav1.IPAddress](in.DNS),
		DNSFromIPPool: ptr.Deref(in.DNSFromIPPool, ""),
	}
	return nil
}

// Convert_v1beta2_NetworkDataService_To_v1beta1_NetworkDataServices converts
// the host-wide services.
func Convert_v1beta2_NetworkDataService_To_v1beta1_NetworkDataServices(in *infrav1.NetworkDataService, out *NetworkDataServices, _ apimachineryconversion.Scope) error {
	*out = NetworkDataServices{
		DNS:           convertStrings[infrav1.IPAddress, IPAddress](in.DNS),
		DNSFromIPPool: stringOrNil(in.DNSFromIPPool),
	}
	return nil
}

// convertStrings converts a list of addresses between the versions' string
// types, keeping nil and empty apart.
func convertStrings[A, B ~string](in []A) []B {
	if in == nil {
		return nil
	}
	out := make([]B, len(in))
	for i, v := range in {
		out[i] = B(v)
	}
	return out
}
