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
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// defaultMTU is used for a link whose mtu is 0: the CRD defaults it to 1500,
// and an MTU of 0 would take the interface down.
const defaultMTU = 1500

// The types below are the OpenStack network_data.json documents, as
// cloud-init's OpenStack and ConfigDrive datasources read them. Structs, not
// maps, keep the keys in a fixed, readable order.

type networkDataDoc struct {
	Links    []any     `json:"links,omitempty"`
	Networks []any     `json:"networks,omitempty"`
	Services []service `json:"services,omitempty"`
}

// ethernetLink's name is not in the OpenStack format, but cloud-init names
// the interface after it, which is what the template's name field asks for.
type ethernetLink struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	MAC  string `json:"ethernet_mac_address"`
	MTU  int    `json:"mtu"`
	Name string `json:"name,omitempty"`
}

type bondLink struct {
	ID             string   `json:"id"`
	Type           string   `json:"type"`
	BondLinks      []string `json:"bond_links"`
	BondMode       string   `json:"bond_mode"`
	XmitHashPolicy string   `json:"bond_xmit_hash_policy,omitempty"`
	MAC            string   `json:"ethernet_mac_address"`
	MTU            int      `json:"mtu"`
	Name           string   `json:"name,omitempty"`
	// parameters follow the fixed keys, sorted by key (see MarshalJSON).
	parameters map[string]json.RawMessage
}

type vlanLink struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	VLANID   int    `json:"vlan_id"`
	VLANLink string `json:"vlan_link"`
	MAC      string `json:"vlan_mac_address"`
	MTU      int    `json:"mtu"`
	Name     string `json:"name,omitempty"`
}

// staticNetwork always has routes, [] when there are none, as OpenStack
// writes it; the dynamic ones only when the template adds some.
type staticNetwork struct {
	ID      string  `json:"id"`
	Type    string  `json:"type"`
	Link    string  `json:"link"`
	Address string  `json:"ip_address"`
	Netmask string  `json:"netmask"`
	Routes  []route `json:"routes"`
}

type dynamicNetwork struct {
	ID     string  `json:"id"`
	Type   string  `json:"type"`
	Link   string  `json:"link"`
	Routes []route `json:"routes,omitempty"`
}

type route struct {
	Network  string    `json:"network"`
	Netmask  string    `json:"netmask"`
	Gateway  string    `json:"gateway"`
	Services []service `json:"services,omitempty"`
}

type service struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

// bondFields is bondLink without its methods, so that MarshalJSON can
// marshal the fixed keys without recursing.
type bondFields bondLink

// MarshalJSON writes the fixed keys, then the template's bond parameters in
// key order, so the output is stable whatever parameters a user adds.
func (b bondLink) MarshalJSON() ([]byte, error) {
	fixed, err := json.Marshal(bondFields(b))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Write(fixed[:len(fixed)-1])
	for _, k := range slices.Sorted(maps.Keys(b.parameters)) {
		key, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		buf.WriteByte(',')
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(b.parameters[k])
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// bondFixedKeys are the keys a bond parameter may not replace: a duplicate
// JSON key would be read differently by different parsers.
var bondFixedKeys = map[string]bool{
	"id": true, "type": true, "bond_links": true, "bond_mode": true, "bond_xmit_hash_policy": true,
	"ethernet_mac_address": true, "mtu": true, "name": true,
}

// networkData accumulates the rendered document and the errors of one
// rendering, so that one pass reports every broken entry.
type networkData struct {
	in   *Input
	doc  networkDataDoc
	errs field.ErrorList
	// linkIDs are the ids of the links rendered so far, to check that
	// bonds, VLANs and networks refer to existing links.
	linkIDs map[string]bool
}

func (n *networkData) fail(ferr *field.Error) bool {
	if ferr == nil {
		return false
	}
	n.errs = append(n.errs, ferr)
	return true
}

// NetworkData renders the template's networkData as an OpenStack
// network_data.json document: links, then networks, then services, each in
// template order (ethernets, bonds, VLANs; ipv4, ipv4DHCP, ipv6, ipv6DHCP,
// ipv6SLAAC). It returns nil when the template has no networkData, since then
// no network data Secret is to be written.
func NetworkData(in Input) ([]byte, error) {
	if err := checkTemplate(&in); err != nil {
		return nil, err
	}
	nd := in.Template.NetworkData
	if nd == nil {
		return nil, nil
	}
	n := &networkData{in: &in, linkIDs: map[string]bool{}}
	path := templatePath.Child("networkData")
	if nd.Links != nil {
		n.links(path.Child("links"), nd.Links)
	}
	if nd.Networks != nil {
		n.networks(path.Child("networks"), nd.Networks)
	}
	if nd.Services != nil {
		n.doc.Services = n.dns(path.Child("services"), ipStrings(nd.Services.DNS), nd.Services.DNSFromIPPool)
	}
	if len(n.errs) > 0 {
		return nil, n.errs.ToAggregate()
	}

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Addresses and names need no HTML escaping; keep the document as a
	// human would write it.
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(n.doc); err != nil {
		return nil, fmt.Errorf("marshal network data: %w", err)
	}
	return buf.Bytes(), nil
}

// mac returns a link's MAC address. The API asks for exactly one source;
// guessing which of several the user meant would hide a mistake. A source
// is unset when zero, and a nil src sets none.
func (n *networkData) mac(path *field.Path, src *infrav1.NetworkLinkEthernetMac) (string, *field.Error) {
	if src == nil {
		src = &infrav1.NetworkLinkEthernetMac{}
	}
	set := 0
	for _, isSet := range []bool{
		src.String != "", src.FromHostInterface != "", src.FromAnnotation != infrav1.NetworkLinkEthernetMacFromAnnotation{},
	} {
		if isSet {
			set++
		}
	}
	if set != 1 {
		return "", field.Invalid(path, set, "set exactly one of string, fromHostInterface and fromAnnotation")
	}
	switch {
	case src.String != "":
		return src.String, nil
	case src.FromHostInterface != "":
		return n.in.hostMAC(path.Child("fromHostInterface"), src.FromHostInterface)
	default:
		a := src.FromAnnotation
		p := path.Child("fromAnnotation")
		mac, ferr := n.in.annotation(p, a.Object, a.Annotation)
		if ferr == nil && mac == "" {
			// An empty MAC would make cloud-init match no interface, and
			// silently leave the link unconfigured.
			ferr = field.Invalid(p.Child("annotation"), a.Annotation, "the annotation is empty, it must hold a MAC address")
		}
		return mac, ferr
	}
}

// linkID records a link's id, rejecting an empty or repeated one: networks
// refer to links by id, so it must name exactly one.
func (n *networkData) linkID(path *field.Path, id string) {
	switch {
	case id == "":
		n.fail(field.Required(path, "link id"))
	case n.linkIDs[id]:
		n.fail(field.Duplicate(path, id))
	default:
		n.linkIDs[id] = true
	}
}

// linkRef checks that a link id refers to a link of the template.
func (n *networkData) linkRef(path *field.Path, id string) {
	if !n.linkIDs[id] {
		n.fail(notFound(path, id, "no link of the template has this id"))
	}
}

func mtu(v int32) int {
	if v == 0 {
		return defaultMTU
	}
	return int(v)
}

func (n *networkData) links(path *field.Path, links *infrav1.NetworkDataLink) {
	// Ids first, so that a bond may list a VLAN and a VLAN sit on a bond
	// whatever their order in the template.
	for i, e := range links.Ethernets {
		n.linkID(path.Child("ethernets").Index(i).Child("id"), e.ID)
	}
	for i, b := range links.Bonds {
		n.linkID(path.Child("bonds").Index(i).Child("id"), b.ID)
	}
	for i, v := range links.Vlans {
		n.linkID(path.Child("vlans").Index(i).Child("id"), v.ID)
	}

	for i, e := range links.Ethernets {
		p := path.Child("ethernets").Index(i)
		mac, ferr := n.mac(p.Child("macAddress"), e.MACAddress)
		if n.fail(ferr) {
			continue
		}
		n.doc.Links = append(n.doc.Links, ethernetLink{
			ID: e.ID, Type: e.Type, MAC: mac, MTU: mtu(e.MTU), Name: e.Name,
		})
	}
	for i, b := range links.Bonds {
		p := path.Child("bonds").Index(i)
		for j, member := range b.BondLinks {
			n.linkRef(p.Child("bondLinks").Index(j), member)
		}
		params := n.bondParameters(p.Child("parameters"), b.Parameters)
		mac, ferr := n.mac(p.Child("macAddress"), b.MACAddress)
		if n.fail(ferr) {
			continue
		}
		n.doc.Links = append(n.doc.Links, bondLink{
			ID: b.ID, Type: "bond", BondLinks: append([]string{}, b.BondLinks...),
			BondMode: b.BondMode, XmitHashPolicy: b.BondXmitHashPolicy,
			MAC: mac, MTU: mtu(b.MTU), Name: b.Name, parameters: params,
		})
	}
	for i, v := range links.Vlans {
		p := path.Child("vlans").Index(i)
		n.linkRef(p.Child("vlanLink"), v.VlanLink)
		mac, ferr := n.mac(p.Child("macAddress"), v.MACAddress)
		if n.fail(ferr) {
			continue
		}
		n.doc.Links = append(n.doc.Links, vlanLink{
			ID: v.ID, Type: "vlan", VLANID: int(ptr.Deref(v.VlanID, 0)), VLANLink: v.VlanLink,
			MAC: mac, MTU: mtu(v.MTU), Name: v.Name,
		})
	}
}

// bondParameters checks a bond's parameters and compacts their values,
// visiting them by name so that errors come in a stable order.
func (n *networkData) bondParameters(path *field.Path, params []infrav1.NetworkDataLinkBondParam) map[string]json.RawMessage {
	byName := make([]int, len(params))
	for i := range byName {
		byName[i] = i
	}
	slices.SortStableFunc(byName, func(a, b int) int { return strings.Compare(params[a].Name, params[b].Name) })

	out := map[string]json.RawMessage{}
	seen := map[string]bool{}
	for _, i := range byName {
		name, raw := params[i].Name, params[i].Value.Raw
		p := path.Index(i)
		switch {
		case bondFixedKeys[name]:
			n.fail(field.Forbidden(p.Child("name"), "is written from the bond's own fields"))
			continue
		case seen[name]:
			// The schema keys the list by name; a repeat would silently
			// replace the first value.
			n.fail(field.Duplicate(p.Child("name"), name))
			continue
		}
		seen[name] = true
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			n.fail(field.Invalid(p.Child("value"), string(raw), "not valid JSON: "+err.Error()))
			continue
		}
		out[name] = compact.Bytes()
	}
	return out
}
