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
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/utils/ptr"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// networksInput is an Input whose template has only the given IPv4 networks
// and metadata, for small PoolFields cases.
func networksInput(md *infrav1.MetaData, nets ...infrav1.NetworkDataIPv4) Input {
	in := fullInput()
	in.Template = &infrav1.Metal3DataTemplateSpec{
		MetaData:    md,
		NetworkData: &infrav1.NetworkData{Networks: &infrav1.NetworkDataNetwork{IPv4: nets}},
	}
	return in
}

// poolOrder sorts pools for comparison: PoolFields returns a map.
var poolOrder = cmpopts.SortSlices(func(a, b PoolRef) bool { return a.String() < b.String() })

// TestPoolFieldsPools checks which pools PoolFields finds: each pool once,
// through the precedence the package documents.
func TestPoolFieldsPools(t *testing.T) {
	annotation := infrav1.FromPoolAnnotation{Object: infrav1.DataSourceObjectMetal3Machine, Annotation: "example.com/pool"}
	inClusterRef := infrav1.IPPoolReference{APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: "incluster4"}
	tests := []struct {
		name string
		in   Input
		want []PoolRef
	}{
		{
			name: "full template",
			in:   fullInput(),
			want: []PoolRef{incluster4, dnsPool, poolAnnot, pool4, pool6, pool6Annot},
		},
		{
			name: "one pool named four ways is listed once",
			in: networksInput(
				&infrav1.MetaData{
					IPAddressesFromPool: []infrav1.FromPool{{Key: "a", APIGroup: "ipam.metal3.io", Kind: "IPPool", Name: "pool4"}},
					// An empty group is Metal3's, as for fromPoolRef.
					PrefixesFromPool: []infrav1.FromPool{{Key: "b", Kind: "IPPool", Name: "pool4"}},
				},
				infrav1.NetworkDataIPv4{ID: "a", IPAddressFromIPPool: "pool4"},
				infrav1.NetworkDataIPv4{ID: "b", FromPoolRef: infrav1.IPPoolReference{Kind: "IPPool", Name: "pool4"}},
			),
			want: []PoolRef{pool4},
		},
		{
			name: "annotation wins over ref and name",
			in: networksInput(nil, infrav1.NetworkDataIPv4{
				ID: "a", FromPoolAnnotation: annotation, FromPoolRef: inClusterRef, IPAddressFromIPPool: "pool4",
			}),
			want: []PoolRef{poolAnnot},
		},
		{
			name: "ref wins over name",
			in: networksInput(nil, infrav1.NetworkDataIPv4{
				ID: "a", FromPoolRef: inClusterRef, IPAddressFromIPPool: "pool4",
			}),
			want: []PoolRef{incluster4},
		},
		{
			name: "gateway pool wins over string, a string gateway needs no pool",
			in: networksInput(nil, infrav1.NetworkDataIPv4{
				ID: "a", IPAddressFromIPPool: "pool4",
				Routes: []infrav1.NetworkDataRoutev4{
					{Gateway: infrav1.NetworkGatewayv4{FromIPPool: "pool6", String: ptr.To(infrav1.IPv4Address("10.0.0.1"))}},
					{Gateway: infrav1.NetworkGatewayv4{String: ptr.To(infrav1.IPv4Address("10.0.0.1"))}},
					{Gateway: infrav1.NetworkGatewayv4{FromPoolAnnotation: annotation, FromPoolRef: inClusterRef}},
				},
			}),
			want: []PoolRef{poolAnnot, pool4, pool6},
		},
		{
			name: "no template sections",
			in:   Input{Template: &infrav1.Metal3DataTemplateSpec{}},
			want: []PoolRef{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fields, err := PoolFields(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Collect(maps.Keys(fields))
			if diff := cmp.Diff(tt.want, got, poolOrder, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("pools differ (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPoolFieldsErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(in *Input)
		want   []string
	}{
		{"no template", func(in *Input) { in.Template = nil }, []string{"spec: Required value"}},
		{
			"annotation missing", func(in *Input) { delete(in.Metal3Machine.Annotations, "example.com/pool") },
			[]string{
				`spec.networkData.networks.ipv4[2].fromPoolAnnotation.annotation: Not found: "example.com/pool"`,
				`metal3machine "m3m-0" has no such annotation`,
				"spec.networkData.networks.ipv4DHCP[1].routes[0].gateway.fromPoolAnnotation.annotation",
			},
		},
		{
			"annotation empty", func(in *Input) { in.Host.Annotations["example.com/pool6"] = "" },
			[]string{`spec.networkData.networks.ipv6[1].fromPoolAnnotation.annotation: Invalid value: "example.com/pool6"`},
		},
		{
			"annotated object unknown", func(in *Input) { in.Host = nil },
			[]string{`spec.networkData.networks.ipv6[1].fromPoolAnnotation.object: Not found: "baremetalhost"`},
		},
		{
			"network names no pool", func(in *Input) { in.Template.NetworkData.Networks.IPv6[0].IPAddressFromIPPool = "" },
			[]string{"spec.networkData.networks.ipv6[0]: Required value"},
		},
		{
			"route gateway names nothing", func(in *Input) {
				in.Template.NetworkData.Networks.IPv4[1].Routes[1].Gateway = infrav1.NetworkGatewayv4{}
			},
			[]string{"spec.networkData.networks.ipv4[1].routes[1].gateway: Required value: one of fromPoolAnnotation, fromPoolRef, fromIPPool or string"},
		},
		{
			"pool ref without kind", func(in *Input) { in.Template.NetworkData.Networks.IPv4[1].FromPoolRef.Kind = "" },
			[]string{"spec.networkData.networks.ipv4[1].fromPoolRef.kind: Required value"},
		},
		{
			"pool ref without name", func(in *Input) {
				in.Template.NetworkData.Networks.IPv6[1].Routes[0].Gateway.FromPoolRef.Name = ""
			},
			[]string{"spec.networkData.networks.ipv6[1].routes[0].gateway.fromPoolRef.name: Required value"},
		},
		{
			"metadata pool without name", func(in *Input) { in.Template.MetaData.DNSServersFromPool[0].Name = "" },
			[]string{"spec.metaData.dnsServersFromPool[0].name: Required value"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := fullInput()
			tt.mutate(&in)
			got, err := PoolFields(in)
			if err == nil {
				t.Fatalf("no error; pools %v", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestPoolFieldsMatchRendering checks that PoolFields and rendering agree:
// rendering needs every listed pool, and nothing else.
func TestPoolFieldsMatchRendering(t *testing.T) {
	fields, err := PoolFields(fullInput())
	if err != nil {
		t.Fatal(err)
	}
	refs := slices.Collect(maps.Keys(fields))
	render := func(in Input) error {
		if _, err := MetaData(in); err != nil {
			return err
		}
		_, err := NetworkData(in)
		return err
	}

	in := fullInput()
	only := map[PoolRef]PoolAddress{}
	for _, ref := range refs {
		only[ref] = in.Pools[ref]
	}
	in.Pools = only
	if err := render(in); err != nil {
		t.Fatalf("rendering with only the required pools: %v", err)
	}

	for _, ref := range refs {
		in := fullInput()
		delete(in.Pools, ref)
		if err := render(in); err == nil {
			t.Errorf("pool %s is listed as required, but rendering succeeds without it", ref)
		} else if !strings.Contains(err.Error(), "no address has been allocated from pool "+ref.String()) {
			t.Errorf("without pool %s: unexpected error %v", ref, err)
		}
	}
}

// TestPoolFields checks that each pool is reported with the first template
// field naming it, the one a user is pointed at when the pool fails.
func TestPoolFields(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want map[PoolRef]string
	}{
		{
			name: "metadata comes before network data",
			in: networksInput(
				&infrav1.MetaData{PrefixesFromPool: []infrav1.FromPool{{Key: "p", Kind: "IPPool", Name: "pool4"}}},
				infrav1.NetworkDataIPv4{ID: "a", IPAddressFromIPPool: "pool4"},
			),
			want: map[PoolRef]string{pool4: "spec.metaData.prefixesFromPool[0]"},
		},
		{
			name: "network address, route gateway and route DNS",
			in: networksInput(nil,
				infrav1.NetworkDataIPv4{ID: "a", IPAddressFromIPPool: "pool4"},
				infrav1.NetworkDataIPv4{ID: "b", IPAddressFromIPPool: "pool4", Routes: []infrav1.NetworkDataRoutev4{{
					Gateway:  infrav1.NetworkGatewayv4{FromIPPool: "gw4"},
					Services: &infrav1.NetworkDataServicev4{DNSFromIPPool: "dns4"},
				}}},
			),
			want: map[PoolRef]string{
				pool4:              "spec.networkData.networks.ipv4[0]",
				metal3Pool("gw4"):  "spec.networkData.networks.ipv4[1].routes[0].gateway",
				metal3Pool("dns4"): "spec.networkData.networks.ipv4[1].routes[0].services.dnsFromIPPool",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fields, err := PoolFields(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			got := map[PoolRef]string{}
			for ref, path := range fields {
				got[ref] = path.String()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PoolFields (-want +got):\n%s", diff)
			}
		})
	}
}
