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
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

type renderFunc func(Input) ([]byte, error)

// The goldens were written by hand from the format description, not
// captured from this code: they are the specification. The all-digit MACs
// are quoted in the metadata because YAML 1.1 parsers, cloud-init's PyYAML
// among them, would read 52:54:00:00:00:01 as a base-60 integer.
func TestGolden(t *testing.T) {
	tests := []struct {
		name   string
		render renderFunc
		golden string
		// parse checks the golden is a valid document of its format, so a
		// typo in a hand-written golden cannot be matched by a bug.
		parse func([]byte) error
	}{
		{"metadata", MetaData, "metadata.golden", func(b []byte) error { return yaml.Unmarshal(b, &map[string]any{}) }},
		{"networkdata", NetworkData, "networkdata.golden", func(b []byte) error { return json.Unmarshal(b, &map[string]any{}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", tt.golden))
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.parse(want); err != nil {
				t.Fatalf("golden %s does not parse: %v", tt.golden, err)
			}
			got, err := tt.render(fullInput())
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("output differs from %s (-want +got):\n%s", tt.golden, diff)
			}
		})
	}
}

// TestNoSection checks that a template without a section renders nothing
// for it, so that no empty Secret is written.
func TestNoSection(t *testing.T) {
	in := fullInput()
	in.Template.MetaData = nil
	in.Template.NetworkData = nil
	for name, render := range map[string]renderFunc{"metadata": MetaData, "networkdata": NetworkData} {
		got, err := render(in)
		if err != nil || got != nil {
			t.Errorf("%s: got %q, %v; want nil, nil", name, got, err)
		}
	}
}

// TestRenderErrors checks that each kind of rendering failure names the
// template field to fix and says what is missing.
func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name   string
		render renderFunc
		mutate func(in *Input)
		want   []string
	}{
		{"no template", MetaData, func(in *Input) { in.Template = nil }, []string{"spec: Required value"}},
		{
			"unknown interface", MetaData,
			func(in *Input) { in.Template.MetaData.FromHostInterfaces[0].Interface = "eth9" },
			[]string{`spec.metaData.fromHostInterfaces[0].interface: Not found: "eth9"`, "no such interface"},
		},
		{
			"host not inspected", MetaData,
			func(in *Input) { in.Host.Hardware = nil },
			[]string{"spec.metaData.fromHostInterfaces[0].interface", "no hardware details"},
		},
		{
			"interface not named", MetaData,
			func(in *Input) { in.Template.MetaData.FromHostInterfaces[0].Interface = "" },
			[]string{"spec.metaData.fromHostInterfaces[0].interface: Required value"},
		},
		{
			"no boot MAC", MetaData,
			func(in *Input) { in.Host.BootMACAddress = "" },
			[]string{"spec.metaData.fromHostInterfaces[1].fromBootMAC", "no bootMACAddress"},
		},
		{
			"no host", MetaData,
			func(in *Input) { in.Host = nil },
			[]string{
				`spec.metaData.objectNames[2].object: Not found: "baremetalhost"`,
				"spec.metaData.fromHostInterfaces[0].interface", "spec.metaData.fromHostInterfaces[1].fromBootMAC",
				"spec.metaData.fromLabels[0].object",
			},
		},
		{
			"no machine", MetaData,
			func(in *Input) { in.Machine = nil },
			[]string{"spec.metaData.objectNames[0].object", "spec.metaData.fromAnnotations[0].object", "not known"},
		},
		{
			"missing label", MetaData,
			func(in *Input) { in.Template.MetaData.FromLabels[0].Label = "nope" },
			[]string{`spec.metaData.fromLabels[0].label: Not found: "nope"`, `baremetalhost "host-0" has no such label`},
		},
		{
			"missing annotation", MetaData,
			func(in *Input) { in.Template.MetaData.FromAnnotations[0].Annotation = "nope" },
			[]string{`spec.metaData.fromAnnotations[0].annotation: Not found: "nope"`, `machine "machine-0" has no such annotation`},
		},
		{
			"pool not allocated", MetaData,
			func(in *Input) { delete(in.Pools, incluster4) },
			[]string{"spec.metaData.ipAddressesFromPool[1].name", "no address has been allocated from pool ipam.cluster.x-k8s.io/InClusterIPPool/incluster4"},
		},
		{
			"pool without gateway", MetaData,
			func(in *Input) { in.Pools[pool4] = PoolAddress{Address: "192.168.10.13", Prefix: 24} },
			[]string{"spec.metaData.gatewaysFromPool[0].name", "gave no gateway"},
		},
		{
			"duplicate key", MetaData,
			func(in *Input) { in.Template.MetaData.Strings[0].Key = "ns" },
			[]string{`spec.metaData.namespaces[0].key: Duplicate value: "ns"`, "already written by spec.metaData.strings[0].key"},
		},
		{
			"pool kind missing", MetaData,
			func(in *Input) { in.Template.MetaData.PrefixesFromPool[0].Kind = "" },
			[]string{"spec.metaData.prefixesFromPool[0].kind: Required value"},
		},
		{
			"unknown host interface MAC", NetworkData,
			func(in *Input) { in.Template.NetworkData.Links.Ethernets[0].MACAddress.FromHostInterface = "eth9" },
			[]string{`spec.networkData.links.ethernets[0].macAddress.fromHostInterface: Not found: "eth9"`},
		},
		{
			"missing MAC annotation", NetworkData,
			func(in *Input) { delete(in.Metal3Machine.Annotations, "example.com/mac") },
			[]string{`spec.networkData.links.ethernets[2].macAddress.fromAnnotation.annotation: Not found: "example.com/mac"`},
		},
		{
			"empty MAC annotation", NetworkData,
			func(in *Input) { in.Metal3Machine.Annotations["example.com/mac"] = "" },
			[]string{`spec.networkData.links.ethernets[2].macAddress.fromAnnotation.annotation: Invalid value: "example.com/mac"`},
		},
		{
			"two MAC sources", NetworkData,
			func(in *Input) { in.Template.NetworkData.Links.Vlans[0].MACAddress.FromHostInterface = "eth0" },
			[]string{"spec.networkData.links.vlans[0].macAddress: Invalid value: 2", "exactly one"},
		},
		{
			"no MAC source", NetworkData,
			func(in *Input) { in.Template.NetworkData.Links.Bonds[1].MACAddress = &infrav1.NetworkLinkEthernetMac{} },
			[]string{"spec.networkData.links.bonds[1].macAddress: Invalid value: 0"},
		},
		{
			"nil MAC source", NetworkData,
			func(in *Input) { in.Template.NetworkData.Links.Ethernets[1].MACAddress = nil },
			[]string{"spec.networkData.links.ethernets[1].macAddress: Invalid value: 0"},
		},
		{
			"bond parameter overrides a fixed key", NetworkData,
			func(in *Input) {
				b := &in.Template.NetworkData.Links.Bonds[0]
				b.Parameters = append(b.Parameters,
					infrav1.NetworkDataLinkBondParam{Name: "mtu", Value: apiextensionsv1.JSON{Raw: []byte("1")}})
			},
			[]string{"spec.networkData.links.bonds[0].parameters[2].name: Forbidden"},
		},
		{
			"bond parameter repeated", NetworkData,
			func(in *Input) {
				b := &in.Template.NetworkData.Links.Bonds[0]
				b.Parameters = append(b.Parameters,
					infrav1.NetworkDataLinkBondParam{Name: "bond_miimon", Value: apiextensionsv1.JSON{Raw: []byte("200")}})
			},
			[]string{`spec.networkData.links.bonds[0].parameters[2].name: Duplicate value: "bond_miimon"`},
		},
		{
			"bond parameter not JSON", NetworkData,
			func(in *Input) {
				in.Template.NetworkData.Links.Bonds[0].Parameters[1].Value = apiextensionsv1.JSON{Raw: []byte("fast")}
			},
			[]string{`spec.networkData.links.bonds[0].parameters[1].value: Invalid value: "fast"`, "not valid JSON"},
		},
		{
			"unknown link", NetworkData,
			func(in *Input) {
				in.Template.NetworkData.Networks.IPv4[0].Link = "eth9"
				in.Template.NetworkData.Links.Vlans[0].VlanLink = "bond9"
				in.Template.NetworkData.Links.Bonds[0].BondLinks[1] = "eth8"
			},
			[]string{
				`spec.networkData.networks.ipv4[0].link: Not found: "eth9"`,
				`spec.networkData.links.vlans[0].vlanLink: Not found: "bond9"`,
				`spec.networkData.links.bonds[0].bondLinks[1]: Not found: "eth8"`,
			},
		},
		{
			"duplicate link id", NetworkData,
			func(in *Input) { in.Template.NetworkData.Links.Vlans[0].ID = "eth1" },
			[]string{`spec.networkData.links.vlans[0].id: Duplicate value: "eth1"`},
		},
		{
			"network pool not allocated", NetworkData,
			func(in *Input) { delete(in.Pools, incluster4) },
			[]string{"spec.networkData.networks.ipv4[1].fromPoolRef", "no address has been allocated"},
		},
		{
			"network pool annotation missing", NetworkData,
			func(in *Input) { delete(in.Metal3Machine.Annotations, "example.com/pool") },
			[]string{
				`spec.networkData.networks.ipv4[2].fromPoolAnnotation.annotation: Not found: "example.com/pool"`,
				"spec.networkData.networks.ipv4DHCP[1].routes[0].gateway.fromPoolAnnotation.annotation",
			},
		},
		{
			"network names no pool", NetworkData,
			func(in *Input) { in.Template.NetworkData.Networks.IPv4[0].IPAddressFromIPPool = "" },
			[]string{"spec.networkData.networks.ipv4[0]: Required value: one of fromPoolAnnotation, fromPoolRef or ipAddressFromIPPool"},
		},
		{
			"route names no gateway", NetworkData,
			func(in *Input) { in.Template.NetworkData.Networks.IPv6DHCP[0].Routes[0].Gateway.String = nil },
			[]string{"spec.networkData.networks.ipv6DHCP[0].routes[0].gateway: Required value"},
		},
		{
			"route gateway pool has no gateway", NetworkData,
			func(in *Input) { in.Pools[pool4] = PoolAddress{Address: "192.168.10.13", Prefix: 24} },
			[]string{
				"spec.networkData.networks.ipv4[0].routes[0].gateway.fromIPPool", "gave no gateway",
				"spec.networkData.networks.ipv4[1].routes[0].gateway.fromPoolRef",
			},
		},
		{
			"DNS pool not allocated", NetworkData,
			func(in *Input) { delete(in.Pools, dnsPool) },
			[]string{
				"spec.networkData.networks.ipv4[0].routes[0].services.dnsFromIPPool",
				`spec.networkData.services.dnsFromIPPool: Not found: "dns-pool"`,
			},
		},
		{
			"address of the wrong family", NetworkData,
			func(in *Input) {
				in.Pools[pool6] = PoolAddress{Address: "10.1.1.1", Prefix: 64, Gateway: "2001:db8:1::1"}
			},
			[]string{`spec.networkData.networks.ipv6[0].ipAddressFromIPPool: Invalid value: "10.1.1.1"`, "not an IPv6 address"},
		},
		{
			"prefix out of range", NetworkData,
			func(in *Input) {
				in.Pools[pool4] = PoolAddress{Address: "192.168.10.13", Prefix: 33, Gateway: "192.168.10.1"}
			},
			[]string{"spec.networkData.networks.ipv4[0].ipAddressFromIPPool: Invalid value: 33"},
		},
		{
			"no host for MACs", NetworkData,
			func(in *Input) { in.Host = nil },
			[]string{"spec.networkData.links.ethernets[0].macAddress.fromHostInterface", "not known"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := fullInput()
			tt.mutate(&in)
			got, err := tt.render(in)
			if err == nil {
				t.Fatalf("no error; rendered:\n%s", got)
			}
			if got != nil {
				t.Errorf("got output %q along with the error", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestIndexStep(t *testing.T) {
	tests := []struct {
		name  string
		entry infrav1.MetaDataIndex
		index int
		want  string
	}{
		{"step 0 means 1", infrav1.MetaDataIndex{Key: "k"}, 4, "k: \"4\"\n"},
		{"offset and step", infrav1.MetaDataIndex{Key: "k", Offset: ptr.To[int32](100), Step: 10, Prefix: "n"}, 4, "k: n140\n"},
		{"negative offset", infrav1.MetaDataIndex{Key: "k", Offset: ptr.To[int32](-1), Step: 1, Suffix: "x"}, 0, "k: -1x\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Index: tt.index, Template: &infrav1.Metal3DataTemplateSpec{
				MetaData: &infrav1.MetaData{Indexes: []infrav1.MetaDataIndex{tt.entry}},
			}}
			got, err := MetaData(in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNetmask(t *testing.T) {
	tests := []struct {
		prefix  int
		f       family
		want    string
		wantErr bool
	}{
		{0, ipv4, "0.0.0.0", false},
		{8, ipv4, "255.0.0.0", false},
		{20, ipv4, "255.255.240.0", false},
		{24, ipv4, "255.255.255.0", false},
		{32, ipv4, "255.255.255.255", false},
		{33, ipv4, "", true},
		{-1, ipv4, "", true},
		{0, ipv6, "::", false},
		{48, ipv6, "ffff:ffff:ffff::", false},
		{56, ipv6, "ffff:ffff:ffff:ff00::", false},
		{64, ipv6, "ffff:ffff:ffff:ffff::", false},
		{127, ipv6, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", false},
		{128, ipv6, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},
		{129, ipv6, "", true},
	}
	for _, tt := range tests {
		got, ferr := netmask(field.NewPath("p"), tt.prefix, tt.f)
		if (ferr != nil) != tt.wantErr || got != tt.want {
			t.Errorf("netmask(%d, %s) = %q, %v; want %q, error %v", tt.prefix, tt.f, got, ferr, tt.want, tt.wantErr)
		}
	}
}
