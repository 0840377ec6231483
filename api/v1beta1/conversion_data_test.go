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
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"
	utilconversion "sigs.k8s.io/cluster-api/util/conversion"
	"sigs.k8s.io/randfill"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// TestDataFuzzyConversion converts 10,000 random objects of each data kind
// v1beta1 → v1beta2 → v1beta1 and v1beta2 → v1beta1 → v1beta2 and wants each
// back as it was. dataFuzzerFuncs lists the v1beta1 spellings that v1beta2
// cannot tell apart and that mean the same thing; nothing else may change.
func TestDataFuzzyConversion(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := infrav1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		input utilconversion.FuzzTestFuncInput
	}{
		{"Metal3DataTemplate", utilconversion.FuzzTestFuncInput{Hub: &infrav1.Metal3DataTemplate{}, Spoke: &Metal3DataTemplate{}}},
		{"Metal3Data", utilconversion.FuzzTestFuncInput{Hub: &infrav1.Metal3Data{}, Spoke: &Metal3Data{}}},
		{"Metal3DataClaim", utilconversion.FuzzTestFuncInput{Hub: &infrav1.Metal3DataClaim{}, Spoke: &Metal3DataClaim{}}},
	} {
		input := tc.input
		input.Scheme = scheme
		input.FuzzerFuncs = []fuzzer.FuzzerFuncs{dataFuzzerFuncs}
		t.Run(tc.name, utilconversion.FuzzTestFunc(input))
	}
}

func dataFuzzerFuncs(_ runtimeserializer.CodecFactory) []interface{} {
	return append([]interface{}{
		dataInt,
		dataJSON,
		spokeMACAddressSource,
		spokeIPPoolReference,
		spokeMetaDataFromIPPool,
		spokeIPv4RouteGateway,
		spokeIPv6RouteGateway,
		spokeIPv4RouteServices,
		spokeIPv6RouteServices,
		spokeIPv4Network,
		spokeIPv6Network,
		spokeNetworkDataServices,
		spokeMetal3DataSpec,
		spokeMetal3DataStatus,
		spokeMetal3DataClaimSpec,
		spokeMetal3DataClaimStatus,
	}, jsonShapedKinds...)
}

// dataInt: every int of the data kinds is an int32 in v1beta2; the
// conversion refuses a larger one (TestDataIntegerOverflow) rather than
// change it.
func dataInt(in *int, c randfill.Continue) {
	*in = int(int32(c.Uint32()))
}

// dataJSON: a bond parameter is a JSON value, which the conversion-data
// annotation stores as the API server does, compact with sorted keys.
func dataJSON(in *apiextensionsv1.JSON, c randfill.Continue) {
	values := []string{"", fmt.Sprint(c.Int31()), `"fast"`, "true", `[1,"a"]`, `{"a":{"b":null},"c":2}`}
	in.Raw = nil
	if v := values[c.Intn(len(values))]; v != "" {
		in.Raw = []byte(v)
	}
}

// spokeMACAddressSource: v1beta2 holds the sources as values, empty meaning
// unset, so an empty string or annotation and none say the same (no MAC
// address, interface or annotation is empty).
func spokeMACAddressSource(in *MACAddressSource, c randfill.Continue) {
	c.FillNoCustom(in)
	in.String = nonEmptyString(in.String)
	in.FromHostInterface = nonEmptyString(in.FromHostInterface)
	in.FromAnnotation = nonEmptyAnnotation(in.FromAnnotation)
}

// spokeIPPoolReference: an empty apiGroup is Metal3 IPAM (the renderer reads
// both alike), and v1beta1 requires kind, its webhook refusing an empty one,
// which v1beta2 reads as IPPool.
func spokeIPPoolReference(in *IPPoolReference, c randfill.Continue) {
	c.FillNoCustom(in)
	in.APIGroup = nonEmptyString(in.APIGroup)
	if in.Kind == "" {
		in.Kind = metal3PoolKind
	}
}

// spokeMetaDataFromIPPool: v1beta1 requires apiGroup and kind, its webhook
// refusing empty ones, which v1beta2 reads as Metal3's IPPool.
func spokeMetaDataFromIPPool(in *MetaDataFromIPPool, c randfill.Continue) {
	c.FillNoCustom(in)
	if in.APIGroup == "" {
		in.APIGroup = metal3IPAMGroup
	}
	if in.Kind == "" {
		in.Kind = metal3PoolKind
	}
}

// spokeIPv4RouteGateway and the functions below: v1beta2 holds pool names
// and pool annotations as values, empty meaning unset; an empty pool name
// names no pool, and the schema refuses an annotation without object.
func spokeIPv4RouteGateway(in *IPv4RouteGateway, c randfill.Continue) {
	c.FillNoCustom(in)
	in.FromIPPool = nonEmptyString(in.FromIPPool)
	in.FromPoolAnnotation = nonEmptyAnnotation(in.FromPoolAnnotation)
}

func spokeIPv6RouteGateway(in *IPv6RouteGateway, c randfill.Continue) {
	c.FillNoCustom(in)
	in.FromIPPool = nonEmptyString(in.FromIPPool)
	in.FromPoolAnnotation = nonEmptyAnnotation(in.FromPoolAnnotation)
}

func spokeIPv4RouteServices(in *IPv4RouteServices, c randfill.Continue) {
	c.FillNoCustom(in)
	in.DNSFromIPPool = nonEmptyString(in.DNSFromIPPool)
}

func spokeIPv6RouteServices(in *IPv6RouteServices, c randfill.Continue) {
	c.FillNoCustom(in)
	in.DNSFromIPPool = nonEmptyString(in.DNSFromIPPool)
}

func spokeIPv4Network(in *IPv4Network, c randfill.Continue) {
	c.FillNoCustom(in)
	in.IPAddressFromIPPool = nonEmptyString(in.IPAddressFromIPPool)
	in.FromPoolAnnotation = nonEmptyAnnotation(in.FromPoolAnnotation)
}

func spokeIPv6Network(in *IPv6Network, c randfill.Continue) {
	c.FillNoCustom(in)
	in.FromPoolAnnotation = nonEmptyAnnotation(in.FromPoolAnnotation)
}

func spokeNetworkDataServices(in *NetworkDataServices, c randfill.Continue) {
	c.FillNoCustom(in)
	in.DNSFromIPPool = nonEmptyString(in.DNSFromIPPool)
}

// spokeMetal3DataSpec and the functions below: of a reference the provider
// reads name and namespace only, the kind being the field's; v1beta2 holds
// an error message as a value, empty meaning none.
func spokeMetal3DataSpec(in *Metal3DataSpec, c randfill.Continue) {
	c.FillNoCustom(in)
	in.Claim = corev1.ObjectReference{Name: in.Claim.Name, Namespace: in.Claim.Namespace}
	in.Template = corev1.ObjectReference{Name: in.Template.Name, Namespace: in.Template.Namespace}
}

func spokeMetal3DataStatus(in *Metal3DataStatus, c randfill.Continue) {
	c.FillNoCustom(in)
	in.ErrorMessage = nonEmptyString(in.ErrorMessage)
}

func spokeMetal3DataClaimSpec(in *Metal3DataClaimSpec, c randfill.Continue) {
	c.FillNoCustom(in)
	in.Template = corev1.ObjectReference{Name: in.Template.Name, Namespace: in.Template.Namespace}
}

func spokeMetal3DataClaimStatus(in *Metal3DataClaimStatus, c randfill.Continue) {
	c.FillNoCustom(in)
	in.ErrorMessage = nonEmptyString(in.ErrorMessage)
	if in.RenderedData != nil {
		in.RenderedData = &corev1.ObjectReference{Name: in.RenderedData.Name, Namespace: in.RenderedData.Namespace}
	}
}

func nonEmptyString(s *string) *string {
	if s != nil && *s == "" {
		return nil
	}
	return s
}

func nonEmptyAnnotation(a *AnnotationSource) *AnnotationSource {
	if a != nil && *a == (AnnotationSource{}) {
		return nil
	}
	return a
}

// bondTemplate is a v1beta1 template whose network data has one bond with
// the given parameters, besides an ethernet link of each MAC source.
func bondTemplate(params map[string]apiextensionsv1.JSON) *Metal3DataTemplate {
	return &Metal3DataTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "workers", Namespace: "metal3"},
		Spec: Metal3DataTemplateSpec{
			ClusterName: "c1",
			NetworkData: &NetworkData{Links: &NetworkDataLinks{
				Ethernets: []EthernetLink{
					{Type: EthernetLinkTypePhy, ID: "nic1", MTU: 1500, MACAddress: MACAddressSource{FromHostInterface: ptr.To("eth0")}},
					{Type: EthernetLinkTypePhy, ID: "nic2", MACAddress: MACAddressSource{String: ptr.To("00:11:22:33:44:55")}},
					{Type: EthernetLinkTypePhy, ID: "nic3", MACAddress: MACAddressSource{
						FromAnnotation: &AnnotationSource{Object: DataSourceObjectBareMetalHost, Annotation: "example.com/mac"},
					}},
				},
				Bonds: []BondLink{{
					BondMode: BondMode8023AD, ID: "bond0", BondLinks: []string{"nic1", "nic2"},
					MACAddress: MACAddressSource{FromHostInterface: ptr.To("eth0")}, Parameters: params,
				}},
				VLANs: []VLANLink{{VLANID: 0, VLANLink: "bond0", ID: "vlan0", MACAddress: MACAddressSource{FromHostInterface: ptr.To("eth0")}}},
			}},
		},
	}
}

func jsonValue(raw string) apiextensionsv1.JSON { return apiextensionsv1.JSON{Raw: []byte(raw)} }

// TestDataTemplateToHub pins what v1beta2 makes of the v1beta1 spellings
// that changed shape.
func TestDataTemplateToHub(t *testing.T) {
	src := bondTemplate(map[string]apiextensionsv1.JSON{"bond_miimon": jsonValue("100"), "bond_downdelay": jsonValue("200")})
	src.Spec.MetaData = &MetaData{
		Indexes:               []MetaDataIndex{{Key: "host", Step: 1, Prefix: "node-"}},
		IPAddressesFromIPPool: []MetaDataFromIPPool{{Key: "ip", APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: "pool4"}},
		FromHostInterfaces:    []MetaDataFromHostInterface{{Key: "boot", FromBootMAC: true}, {Key: "eth", Interface: "eth1"}},
	}
	src.Spec.NetworkData.Networks = &NetworkDataNetworks{IPv4: []IPv4Network{{
		ID: "net4", Link: "vlan0", FromPoolRef: &IPPoolReference{Kind: "IPPool", Name: "pool4"},
		Routes: []IPv4Route{{Network: "0.0.0.0", Gateway: IPv4RouteGateway{FromIPPool: ptr.To("pool4")}}},
	}}}
	src.Status.Indexes = map[string]int{"m-b": 1, "m-a": 0, "m-c": 2}

	dst := &infrav1.Metal3DataTemplate{}
	if err := src.ConvertTo(dst); err != nil {
		t.Fatal(err)
	}
	want := infrav1.Metal3DataTemplateSpec{
		ClusterName: "c1",
		MetaData: &infrav1.MetaData{
			// An offset of 0 is unset.
			Indexes:             []infrav1.MetaDataIndex{{Key: "host", Step: 1, Prefix: "node-"}},
			IPAddressesFromPool: []infrav1.FromPool{{Key: "ip", APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: "pool4"}},
			FromHostInterfaces:  []infrav1.MetaDataHostInterface{{Key: "boot", FromBootMAC: ptr.To(true)}, {Key: "eth", Interface: "eth1"}},
		},
		NetworkData: &infrav1.NetworkData{
			Links: &infrav1.NetworkDataLink{
				Ethernets: []infrav1.NetworkDataLinkEthernet{
					{Type: "phy", ID: "nic1", MTU: 1500, MACAddress: &infrav1.NetworkLinkEthernetMac{FromHostInterface: "eth0"}},
					{Type: "phy", ID: "nic2", MACAddress: &infrav1.NetworkLinkEthernetMac{String: "00:11:22:33:44:55"}},
					{Type: "phy", ID: "nic3", MACAddress: &infrav1.NetworkLinkEthernetMac{
						FromAnnotation: infrav1.NetworkLinkEthernetMacFromAnnotation{Object: "baremetalhost", Annotation: "example.com/mac"},
					}},
				},
				// The parameters map becomes a list sorted by name.
				Bonds: []infrav1.NetworkDataLinkBond{{
					BondMode: "802.3ad", ID: "bond0", BondLinks: []string{"nic1", "nic2"},
					MACAddress: &infrav1.NetworkLinkEthernetMac{FromHostInterface: "eth0"},
					Parameters: []infrav1.NetworkDataLinkBondParam{
						{Name: "bond_downdelay", Value: jsonValue("200")},
						{Name: "bond_miimon", Value: jsonValue("100")},
					},
				}},
				// vlanID is required, so 0 is set.
				Vlans: []infrav1.NetworkDataLinkVlan{{VlanID: ptr.To[int32](0), VlanLink: "bond0", ID: "vlan0", MACAddress: &infrav1.NetworkLinkEthernetMac{FromHostInterface: "eth0"}}},
			},
			Networks: &infrav1.NetworkDataNetwork{IPv4: []infrav1.NetworkDataIPv4{{
				ID: "net4", Link: "vlan0", FromPoolRef: infrav1.IPPoolReference{Kind: "IPPool", Name: "pool4"},
				// A prefix of 0 is unset.
				Routes: []infrav1.NetworkDataRoutev4{{Network: "0.0.0.0", Gateway: infrav1.NetworkGatewayv4{FromIPPool: "pool4"}}},
			}}},
		},
	}
	if diff := cmp.Diff(want, dst.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	// The indexes map becomes a list sorted by index.
	wantIndexes := []infrav1.IndexEntry{{Name: "m-a", Index: ptr.To[int32](0)}, {Name: "m-b", Index: ptr.To[int32](1)}, {Name: "m-c", Index: ptr.To[int32](2)}}
	if diff := cmp.Diff(wantIndexes, dst.Status.Indexes); diff != "" {
		t.Errorf("status.indexes (-want +got):\n%s", diff)
	}
}

// TestDataTemplateFromHub pins the defaults v1beta1 spells out where v1beta2
// leaves a pool's apiGroup or kind empty, and that v1beta2 gets its own
// spelling back, unless a v1beta1 client changed the entry.
func TestDataTemplateFromHub(t *testing.T) {
	hub := &infrav1.Metal3DataTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "workers", Namespace: "metal3"},
		Spec: infrav1.Metal3DataTemplateSpec{
			MetaData: &infrav1.MetaData{IPAddressesFromPool: []infrav1.FromPool{{Key: "ip", Name: "pool4"}, {Key: "gw", Name: "pool6"}}},
			NetworkData: &infrav1.NetworkData{Networks: &infrav1.NetworkDataNetwork{IPv4: []infrav1.NetworkDataIPv4{{
				ID: "net4", Link: "nic1", FromPoolRef: infrav1.IPPoolReference{Name: "pool4"},
				Routes: []infrav1.NetworkDataRoutev4{{
					Network: "0.0.0.0", Prefix: ptr.To[int32](0), Gateway: infrav1.NetworkGatewayv4{FromPoolRef: infrav1.IPPoolReference{Name: "gw4"}},
				}},
			}}}},
		},
	}
	spoke := &Metal3DataTemplate{}
	if err := spoke.ConvertFrom(hub.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	wantPools := []MetaDataFromIPPool{
		{Key: "ip", APIGroup: "ipam.metal3.io", Kind: "IPPool", Name: "pool4"},
		{Key: "gw", APIGroup: "ipam.metal3.io", Kind: "IPPool", Name: "pool6"},
	}
	if diff := cmp.Diff(wantPools, spoke.Spec.MetaData.IPAddressesFromIPPool); diff != "" {
		t.Errorf("metaData.ipAddressesFromIPPool (-want +got):\n%s", diff)
	}
	// An empty apiGroup is no apiGroup in v1beta1 too: Metal3 IPAM.
	wantRef := &IPPoolReference{Kind: "IPPool", Name: "pool4"}
	if diff := cmp.Diff(wantRef, spoke.Spec.NetworkData.Networks.IPv4[0].FromPoolRef); diff != "" {
		t.Errorf("networks.ipv4[0].fromPoolRef (-want +got):\n%s", diff)
	}

	// A v1beta1 client changes the second pool and the network's link: the
	// first pool is v1beta2's again, and so is the network's route.
	spoke.Spec.MetaData.IPAddressesFromIPPool[1].Name = "pool6b"
	spoke.Spec.NetworkData.Networks.IPv4[0].Link = "nic2"
	back := &infrav1.Metal3DataTemplate{}
	if err := spoke.ConvertTo(back); err != nil {
		t.Fatal(err)
	}
	want := []infrav1.FromPool{{Key: "ip", Name: "pool4"}, {Key: "gw", APIGroup: "ipam.metal3.io", Kind: "IPPool", Name: "pool6b"}}
	if diff := cmp.Diff(want, back.Spec.MetaData.IPAddressesFromPool); diff != "" {
		t.Errorf("metaData.ipAddressesFromPool (-want +got):\n%s", diff)
	}
	wantNetwork := hub.Spec.NetworkData.Networks.IPv4[0]
	wantNetwork.Link = "nic2"
	wantNetwork.FromPoolRef.Kind = "IPPool"
	if diff := cmp.Diff(wantNetwork, back.Spec.NetworkData.Networks.IPv4[0]); diff != "" {
		t.Errorf("networks.ipv4[0] (-want +got):\n%s", diff)
	}
	if _, ok := back.Annotations[utilconversion.DataAnnotation]; ok {
		t.Errorf("the conversion-data annotation is left on v1beta2")
	}
}

// TestDataListOrderThroughV1beta1 pins that the order of a bond's
// parameters and of a template's indexes, which v1beta1's maps cannot hold,
// comes back from v1beta1 as long as it says the same, and that otherwise
// what the v1beta1 client wrote wins, sorted.
func TestDataListOrderThroughV1beta1(t *testing.T) {
	hub := &infrav1.Metal3DataTemplate{}
	if err := bondTemplate(nil).ConvertTo(hub); err != nil {
		t.Fatal(err)
	}
	bond := &hub.Spec.NetworkData.Links.Bonds[0]
	bond.Parameters = []infrav1.NetworkDataLinkBondParam{{Name: "bond_miimon", Value: jsonValue("100")}, {Name: "bond_downdelay", Value: jsonValue("200")}}
	hub.Status.Indexes = []infrav1.IndexEntry{{Name: "m-b", Index: ptr.To[int32](1)}, {Name: "m-a", Index: ptr.To[int32](0)}}

	for _, tc := range []struct {
		name        string
		edit        func(*Metal3DataTemplate)
		wantParams  []string
		wantIndexes []string
	}{
		{
			name:        "unchanged",
			edit:        func(*Metal3DataTemplate) {},
			wantParams:  []string{"bond_miimon", "bond_downdelay"},
			wantIndexes: []string{"m-b", "m-a"},
		},
		{
			name: "the bond's MTU changed",
			edit: func(tmpl *Metal3DataTemplate) {
				tmpl.Spec.NetworkData.Links.Bonds[0].MTU = 9000
			},
			wantParams:  []string{"bond_miimon", "bond_downdelay"},
			wantIndexes: []string{"m-b", "m-a"},
		},
		{
			name: "a parameter and an index added",
			edit: func(tmpl *Metal3DataTemplate) {
				tmpl.Spec.NetworkData.Links.Bonds[0].Parameters["bond_updelay"] = jsonValue("300")
				tmpl.Status.Indexes["m-c"] = 2
			},
			wantParams:  []string{"bond_downdelay", "bond_miimon", "bond_updelay"},
			wantIndexes: []string{"m-a", "m-b", "m-c"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spoke := &Metal3DataTemplate{}
			if err := spoke.ConvertFrom(hub.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			tc.edit(spoke)
			back := &infrav1.Metal3DataTemplate{}
			if err := spoke.ConvertTo(back); err != nil {
				t.Fatal(err)
			}
			var params, indexes []string
			for _, p := range back.Spec.NetworkData.Links.Bonds[0].Parameters {
				params = append(params, p.Name)
			}
			for _, e := range back.Status.Indexes {
				indexes = append(indexes, e.Name)
			}
			if diff := cmp.Diff(tc.wantParams, params); diff != "" {
				t.Errorf("bond parameters (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantIndexes, indexes); diff != "" {
				t.Errorf("indexes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDataReferencesToHub pins what v1beta2 makes of a Metal3Data's and a
// claim's references and index.
func TestDataReferencesToHub(t *testing.T) {
	data := &Metal3Data{Spec: Metal3DataSpec{
		Index: 0,
		Claim: corev1.ObjectReference{APIVersion: GroupVersion.String(), Kind: "Metal3DataClaim", Name: "m1", Namespace: "metal3", UID: "1234"},
	}}
	hubData := &infrav1.Metal3Data{}
	if err := data.ConvertTo(hubData); err != nil {
		t.Fatal(err)
	}
	// Index 0 is the first machine's, so it is set; an empty reference is none.
	wantData := infrav1.Metal3DataSpec{Index: ptr.To[int32](0), Claim: &infrav1.Metal3ObjectRef{Name: "m1", Namespace: "metal3"}}
	if diff := cmp.Diff(wantData, hubData.Spec); diff != "" {
		t.Errorf("Metal3Data spec (-want +got):\n%s", diff)
	}

	claim := &Metal3DataClaim{Spec: Metal3DataClaimSpec{Template: corev1.ObjectReference{Kind: "Metal3DataTemplate", Name: "workers"}}}
	hubClaim := &infrav1.Metal3DataClaim{}
	if err := claim.ConvertTo(hubClaim); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&infrav1.Metal3ObjectRef{Name: "workers"}, hubClaim.Spec.Template); diff != "" {
		t.Errorf("Metal3DataClaim spec.template (-want +got):\n%s", diff)
	}
}

// TestDataIntegerOverflow pins that an integer v1beta2's 32 bits cannot hold
// fails the conversion, naming the field, instead of being altered.
func TestDataIntegerOverflow(t *testing.T) {
	template := bondTemplate(nil)
	template.Spec.NetworkData.Links.Ethernets[0].MTU = 1 << 40
	err := template.ConvertTo(&infrav1.Metal3DataTemplate{})
	if err == nil || !strings.Contains(err.Error(), "mtu") {
		t.Errorf("got %v, want an error about the mtu", err)
	}
	data := &Metal3Data{Spec: Metal3DataSpec{Index: -1 << 40}}
	if err := data.ConvertTo(&infrav1.Metal3Data{}); err == nil || !strings.Contains(err.Error(), "index") {
		t.Errorf("got %v, want an error about the index", err)
	}
}
