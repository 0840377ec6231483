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
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// family is an IP version; the OpenStack format writes the netmasks of both
// as addresses (255.255.255.0, ffff:ffff:ffff:ffff::).
type family int

const (
	ipv4 family = 4
	ipv6 family = 6
)

func (f family) bits() int {
	if f == ipv4 {
		return 32
	}
	return 128
}

func (f family) String() string {
	return fmt.Sprintf("IPv%d", int(f))
}

// parseAddr parses an address of the given family. path and detail say which
// field or pool it came from.
func parseAddr(path *field.Path, s string, f family, source string) (netip.Addr, *field.Error) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, field.Invalid(path, s, source+" is not an IP address")
	}
	if (f == ipv4) != a.Is4() {
		return netip.Addr{}, field.Invalid(path, s, source+" is not an "+f.String()+" address")
	}
	return a, nil
}

// netmask writes a prefix length as a mask in address form.
func netmask(path *field.Path, prefix int, f family) (string, *field.Error) {
	if prefix < 0 || prefix > f.bits() {
		return "", field.Invalid(path, prefix, fmt.Sprintf("an %s prefix length is 0 to %d", f, f.bits()))
	}
	mask := make([]byte, f.bits()/8)
	for i := range prefix {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(mask)
	return a.String(), nil
}

// routeSpec is a NetworkDataRoutev4 or v6, so that both render alike.
type routeSpec struct {
	network  string
	prefix   int
	gwString *string
	gwPool   poolSource
	dns      []string
	dnsPool  string
}

func ipv4Routes(routes []infrav1.NetworkDataRoutev4) []routeSpec {
	out := make([]routeSpec, 0, len(routes))
	for _, r := range routes {
		s := routeSpec{network: string(r.Network), prefix: int(ptr.Deref(r.Prefix, 0)), gwPool: ipv4GatewaySource(r.Gateway)}
		if r.Gateway.String != nil {
			s.gwString = (*string)(r.Gateway.String)
		}
		if r.Services != nil {
			s.dns, s.dnsPool = ipStrings(r.Services.DNS), r.Services.DNSFromIPPool
		}
		out = append(out, s)
	}
	return out
}

func ipv6Routes(routes []infrav1.NetworkDataRoutev6) []routeSpec {
	out := make([]routeSpec, 0, len(routes))
	for _, r := range routes {
		s := routeSpec{network: string(r.Network), prefix: int(ptr.Deref(r.Prefix, 0)), gwPool: ipv6GatewaySource(r.Gateway)}
		if r.Gateway.String != nil {
			s.gwString = (*string)(r.Gateway.String)
		}
		if r.Services != nil {
			s.dns, s.dnsPool = ipStrings(r.Services.DNS), r.Services.DNSFromIPPool
		}
		out = append(out, s)
	}
	return out
}

// ipStrings converts the API's address types to strings.
func ipStrings[T ~string](addrs []T) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = string(a)
	}
	return out
}

func (n *networkData) routes(path *field.Path, specs []routeSpec, f family) []route {
	out := []route{}
	for i, r := range specs {
		p := path.Index(i)
		network, ferr := parseAddr(p.Child("network"), r.network, f, "the network")
		if n.fail(ferr) {
			continue
		}
		mask, ferr := netmask(p.Child("prefix"), r.prefix, f)
		if n.fail(ferr) {
			continue
		}
		gw, ferr := n.gateway(p.Child("gateway"), r, f)
		if n.fail(ferr) {
			continue
		}
		out = append(out, route{
			Network: network.String(), Netmask: mask, Gateway: gw,
			Services: n.dns(p.Child("services"), r.dns, r.dnsPool),
		})
	}
	return out
}

// gateway resolves a route's gateway by the package's precedence: a pool
// named any way first, then the fixed string.
func (n *networkData) gateway(path *field.Path, r routeSpec, f family) (string, *field.Error) {
	ref, p, ok, ferr := r.gwPool.resolve(n.in, path)
	if ferr != nil {
		return "", ferr
	}
	if !ok {
		if r.gwString == nil {
			return "", r.gwPool.missing(path)
		}
		a, ferr := parseAddr(path.Child("string"), *r.gwString, f, "the gateway")
		if ferr != nil {
			return "", ferr
		}
		return a.String(), nil
	}
	addr, ferr := n.in.address(p, ref)
	if ferr != nil {
		return "", ferr
	}
	if addr.Gateway == "" {
		return "", field.Invalid(p, ref.Name, fmt.Sprintf("pool %s gave no gateway", ref))
	}
	a, ferr := parseAddr(p, addr.Gateway, f, fmt.Sprintf("the gateway of pool %s", ref))
	if ferr != nil {
		return "", ferr
	}
	return a.String(), nil
}

// dns lists DNS services: the fixed addresses, then the pool's servers.
func (n *networkData) dns(path *field.Path, fixed []string, pool string) []service {
	var out []service
	for _, a := range fixed {
		out = append(out, service{Type: "dns", Address: a})
	}
	if pool != "" {
		addr, ferr := n.in.address(path.Child("dnsFromIPPool"), metal3Pool(pool))
		if n.fail(ferr) {
			return out
		}
		for _, a := range addr.DNSServers {
			out = append(out, service{Type: "dns", Address: a})
		}
	}
	return out
}

// staticNetwork renders a network whose address comes from a pool.
func (n *networkData) staticNetwork(path *field.Path, id, link string, src poolSource, routes []routeSpec, f family) {
	n.linkRef(path.Child("link"), link)
	rendered := n.routes(path.Child("routes"), routes, f)
	ref, p, ok, ferr := src.resolve(n.in, path)
	if n.fail(ferr) {
		return
	}
	if !ok {
		n.fail(src.missing(path))
		return
	}
	addr, ferr := n.in.address(p, ref)
	if n.fail(ferr) {
		return
	}
	ip, ferr := parseAddr(p, addr.Address, f, fmt.Sprintf("the address from pool %s", ref))
	if n.fail(ferr) {
		return
	}
	mask, ferr := netmask(p, addr.Prefix, f)
	if n.fail(ferr) {
		return
	}
	typ := "ipv4"
	if f == ipv6 {
		typ = "ipv6"
	}
	n.doc.Networks = append(n.doc.Networks, staticNetwork{
		ID: id, Type: typ, Link: link, Address: ip.String(), Netmask: mask, Routes: rendered,
	})
}

// dynamicNetwork renders a network the host configures itself.
func (n *networkData) dynamicNetwork(path *field.Path, id, link, typ string, routes []routeSpec, f family) {
	n.linkRef(path.Child("link"), link)
	n.doc.Networks = append(n.doc.Networks, dynamicNetwork{
		ID: id, Type: typ, Link: link, Routes: n.routes(path.Child("routes"), routes, f),
	})
}

func (n *networkData) networks(path *field.Path, nets *infrav1.NetworkDataNetwork) {
	for i, e := range nets.IPv4 {
		n.staticNetwork(path.Child("ipv4").Index(i), e.ID, e.Link,
			poolSource{annotation: e.FromPoolAnnotation, ref: e.FromPoolRef,
				nameField: "ipAddressFromIPPool", name: e.IPAddressFromIPPool},
			ipv4Routes(e.Routes), ipv4)
	}
	for i, e := range nets.IPv4DHCP {
		n.dynamicNetwork(path.Child("ipv4DHCP").Index(i), e.ID, e.Link, "ipv4_dhcp", ipv4Routes(e.Routes), ipv4)
	}
	for i, e := range nets.IPv6 {
		n.staticNetwork(path.Child("ipv6").Index(i), e.ID, e.Link,
			poolSource{annotation: e.FromPoolAnnotation, ref: e.FromPoolRef,
				nameField: "ipAddressFromIPPool", name: e.IPAddressFromIPPool},
			ipv6Routes(e.Routes), ipv6)
	}
	for i, e := range nets.IPv6DHCP {
		n.dynamicNetwork(path.Child("ipv6DHCP").Index(i), e.ID, e.Link, "ipv6_dhcp", ipv6Routes(e.Routes), ipv6)
	}
	for i, e := range nets.IPv6SLAAC {
		n.dynamicNetwork(path.Child("ipv6SLAAC").Index(i), e.ID, e.Link, "ipv6_slaac", ipv6Routes(e.Routes), ipv6)
	}
}
