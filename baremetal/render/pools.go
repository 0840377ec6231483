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
	"k8s.io/apimachinery/pkg/util/validation/field"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// poolSource gathers the ways one template entry can name its pool, so that
// PoolFields and rendering apply the same precedence (see the package
// documentation).
type poolSource struct {
	// annotation and ref are unset when zero, as in the API.
	annotation infrav1.FromPoolAnnotation
	ref        infrav1.IPPoolReference
	// nameField is the JSON name of the plain-name field, for errors.
	nameField string
	name      string
}

// resolve returns the pool the entry at path uses, and false when the entry
// names no pool at all (a route gateway given as a string).
func (s poolSource) resolve(in *Input, path *field.Path) (PoolRef, *field.Path, bool, *field.Error) {
	switch {
	case s.annotation != infrav1.FromPoolAnnotation{}:
		p := path.Child("fromPoolAnnotation")
		name, ferr := in.annotation(p, s.annotation.Object, s.annotation.Annotation)
		if ferr != nil {
			return PoolRef{}, p, false, ferr
		}
		if name == "" {
			return PoolRef{}, p, false, field.Invalid(p.Child("annotation"), s.annotation.Annotation,
				"the annotation is empty, it must hold the name of an IPPool")
		}
		return metal3Pool(name), p, true, nil
	case s.ref != infrav1.IPPoolReference{}:
		p := path.Child("fromPoolRef")
		group := Metal3IPAMGroup
		// The core group has no pool kinds, so an empty group can only
		// mean the historical default, Metal3 IPAM.
		if s.ref.APIGroup != "" {
			group = s.ref.APIGroup
		}
		ref, ferr := checkRef(p, PoolRef{APIGroup: group, Kind: s.ref.Kind, Name: s.ref.Name})
		return ref, p, ferr == nil, ferr
	case s.name != "":
		return metal3Pool(s.name), path.Child(s.nameField), true, nil
	}
	return PoolRef{}, path, false, nil
}

// missing is the error of an entry that names no pool though it must.
func (s poolSource) missing(path *field.Path) *field.Error {
	if s.nameField == "fromIPPool" {
		return field.Required(path, "one of fromPoolAnnotation, fromPoolRef, fromIPPool or string")
	}
	return field.Required(path, "one of fromPoolAnnotation, fromPoolRef or "+s.nameField)
}

// checkRef rejects a pool reference without kind or name: it could match no
// pool, and the schema requires both.
func checkRef(path *field.Path, ref PoolRef) (PoolRef, *field.Error) {
	if ref.Kind == "" {
		return ref, field.Required(path.Child("kind"), "kind of the IP pool")
	}
	if ref.Name == "" {
		return ref, field.Required(path.Child("name"), "name of the IP pool")
	}
	return ref, nil
}

// metaDataPool is the pool of a metaData *FromPool entry, which always
// names it by group, kind and name.
func metaDataPool(path *field.Path, e infrav1.FromPool) (PoolRef, *field.Error) {
	group := e.APIGroup
	if group == "" {
		group = Metal3IPAMGroup
	}
	return checkRef(path, PoolRef{APIGroup: group, Kind: e.Kind, Name: e.Name})
}

// metaDataPoolLists pairs each metaData *FromPool list with its JSON name,
// in the order the schema lists them, so walks visit them the same way.
func metaDataPoolLists(md *infrav1.MetaData) []struct {
	name    string
	entries []infrav1.FromPool
} {
	return []struct {
		name    string
		entries []infrav1.FromPool
	}{
		{"ipAddressesFromPool", md.IPAddressesFromPool},
		{"prefixesFromPool", md.PrefixesFromPool},
		{"gatewaysFromPool", md.GatewaysFromPool},
		{"dnsServersFromPool", md.DNSServersFromPool},
	}
}

// ipv4GatewaySource and ipv6GatewaySource give a route gateway's pool.
func ipv4GatewaySource(g infrav1.NetworkGatewayv4) poolSource {
	return poolSource{annotation: g.FromPoolAnnotation, ref: g.FromPoolRef, nameField: "fromIPPool", name: g.FromIPPool}
}

func ipv6GatewaySource(g infrav1.NetworkGatewayv6) poolSource {
	return poolSource{annotation: g.FromPoolAnnotation, ref: g.FromPoolRef, nameField: "fromIPPool", name: g.FromIPPool}
}

// poolSet collects pools once each, with the first template field naming
// each, and the errors met on the way.
type poolSet struct {
	in   *Input
	seen map[PoolRef]*field.Path
	errs field.ErrorList
}

func (s *poolSet) add(path *field.Path, ref PoolRef) {
	if _, ok := s.seen[ref]; !ok {
		s.seen[ref] = path
	}
}

// source adds the pool a source resolves to. required says the entry must
// name a pool: a network's address does, a route gateway may be a string.
func (s *poolSet) source(path *field.Path, src poolSource, required bool) {
	ref, _, ok, ferr := src.resolve(s.in, path)
	switch {
	case ferr != nil:
		s.errs = append(s.errs, ferr)
	case ok:
		s.add(path, ref)
	case required:
		s.errs = append(s.errs, src.missing(path))
	}
}

func (s *poolSet) ipv4Routes(path *field.Path, routes []infrav1.NetworkDataRoutev4) {
	for i, r := range routes {
		p := path.Index(i)
		s.source(p.Child("gateway"), ipv4GatewaySource(r.Gateway), r.Gateway.String == nil)
		if r.Services != nil && r.Services.DNSFromIPPool != "" {
			s.add(p.Child("services", "dnsFromIPPool"), metal3Pool(r.Services.DNSFromIPPool))
		}
	}
}

func (s *poolSet) ipv6Routes(path *field.Path, routes []infrav1.NetworkDataRoutev6) {
	for i, r := range routes {
		p := path.Index(i)
		s.source(p.Child("gateway"), ipv6GatewaySource(r.Gateway), r.Gateway.String == nil)
		if r.Services != nil && r.Services.DNSFromIPPool != "" {
			s.add(p.Child("services", "dnsFromIPPool"), metal3Pool(r.Services.DNSFromIPPool))
		}
	}
}

// PoolFields maps every pool the template takes an address, a gateway or DNS
// servers from to the first template field naming it: the field a user
// fixes when the pool cannot give an address. A pool named by annotation is
// resolved through the annotation, so the objects the annotations are on
// must be in the Input; Pools is not read.
func PoolFields(in Input) (map[PoolRef]*field.Path, error) {
	if err := checkTemplate(&in); err != nil {
		return nil, err
	}
	s := &poolSet{in: &in, seen: map[PoolRef]*field.Path{}}
	if md := in.Template.MetaData; md != nil {
		mdPath := templatePath.Child("metaData")
		for _, list := range metaDataPoolLists(md) {
			for i, e := range list.entries {
				p := mdPath.Child(list.name).Index(i)
				ref, ferr := metaDataPool(p, e)
				if ferr != nil {
					s.errs = append(s.errs, ferr)
					continue
				}
				s.add(p, ref)
			}
		}
	}
	if nd := in.Template.NetworkData; nd != nil {
		ndPath := templatePath.Child("networkData")
		if nets := nd.Networks; nets != nil {
			netPath := ndPath.Child("networks")
			for i, n := range nets.IPv4 {
				p := netPath.Child("ipv4").Index(i)
				s.source(p, poolSource{annotation: n.FromPoolAnnotation, ref: n.FromPoolRef,
					nameField: "ipAddressFromIPPool", name: n.IPAddressFromIPPool}, true)
				s.ipv4Routes(p.Child("routes"), n.Routes)
			}
			for i, n := range nets.IPv4DHCP {
				s.ipv4Routes(netPath.Child("ipv4DHCP").Index(i).Child("routes"), n.Routes)
			}
			for i, n := range nets.IPv6 {
				p := netPath.Child("ipv6").Index(i)
				s.source(p, poolSource{annotation: n.FromPoolAnnotation, ref: n.FromPoolRef,
					nameField: "ipAddressFromIPPool", name: n.IPAddressFromIPPool}, true)
				s.ipv6Routes(p.Child("routes"), n.Routes)
			}
			for i, n := range nets.IPv6DHCP {
				s.ipv6Routes(netPath.Child("ipv6DHCP").Index(i).Child("routes"), n.Routes)
			}
			for i, n := range nets.IPv6SLAAC {
				s.ipv6Routes(netPath.Child("ipv6SLAAC").Index(i).Child("routes"), n.Routes)
			}
		}
		if nd.Services != nil && nd.Services.DNSFromIPPool != "" {
			s.add(ndPath.Child("services", "dnsFromIPPool"), metal3Pool(nd.Services.DNSFromIPPool))
		}
	}
	if len(s.errs) > 0 {
		return nil, s.errs.ToAggregate()
	}
	return s.seen, nil
}
