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
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimachineryconversion "k8s.io/apimachinery/pkg/conversion"
	"k8s.io/utils/ptr"
	utilconversion "sigs.k8s.io/cluster-api/util/conversion"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Conversions of the data kinds (Metal3DataTemplate, Metal3Data,
// Metal3DataClaim) between v1beta1 and the v1beta2 hub. What both versions
// spell alike is converted by zz_generated.conversion.go; this file and
// conversion_networkdata.go convert the rest.
//
// Nothing is lost either way:
//   - v1beta2 → v1beta1 stores the whole v1beta2 object in the
//     cluster.x-k8s.io/conversion-data annotation, and v1beta1 → v1beta2
//     takes back from it what v1beta1 cannot say (the order of bond
//     parameters and of a template's indexes, an unset offset, prefix,
//     index or vlanID versus 0, fromBootMAC or ready unset versus false, an
//     empty pool apiGroup or kind versus the default v1beta1 spells out, an
//     empty reference versus none), piece by piece, wherever v1beta1 still
//     says the same as the stashed object: what a v1beta1 client changed
//     wins.
//   - Everything v1beta1 can say, v1beta2 can say too, except integers
//     beyond 32 bits, which the conversion refuses rather than alter, and
//     the parts of a reference besides name and namespace (kind, apiVersion,
//     uid…), which nothing reads: the field says what it refers to.
//     conversion_data_test.go lists the v1beta1 spellings that v1beta2
//     cannot tell apart because they mean the same thing (a pointer to ""
//     and no pointer, say).

// The pool a metaData fromPool entry or a fromPoolRef names when v1beta2
// leaves apiGroup or kind empty; v1beta1 requires both to be spelled out.
const (
	metal3IPAMGroup = "ipam.metal3.io"
	metal3PoolKind  = "IPPool"
)

// convertTo converts this Metal3DataTemplate to the hub version.
func (src *Metal3DataTemplate) convertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3DataTemplate)
	if err := Convert_v1beta1_Metal3DataTemplate_To_v1beta2_Metal3DataTemplate(src, dst, nil); err != nil {
		return err
	}
	stashed := &infrav1.Metal3DataTemplate{}
	if ok, err := utilconversion.UnmarshalData(src, stashed); err != nil || !ok {
		return err
	}
	if stashed.Spec.MetaData != nil && dst.Spec.MetaData != nil {
		restoreMetaData(stashed.Spec.MetaData, dst.Spec.MetaData, src.Spec.MetaData)
	}
	if stashed.Spec.NetworkData != nil && dst.Spec.NetworkData != nil {
		restoreNetworkData(stashed.Spec.NetworkData, dst.Spec.NetworkData, src.Spec.NetworkData)
	}
	restoreOne(&dst.Status.Indexes, &stashed.Status.Indexes, &src.Status.Indexes, indexesToSpoke)
	return nil
}

// convertFrom converts from the hub version to this Metal3DataTemplate.
func (dst *Metal3DataTemplate) convertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3DataTemplate)
	if err := Convert_v1beta2_Metal3DataTemplate_To_v1beta1_Metal3DataTemplate(src, dst, nil); err != nil {
		return err
	}
	return nil
}

// convertTo converts this Metal3Data to the hub version.
func (src *Metal3Data) convertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3Data)
	if err := Convert_v1beta1_Metal3Data_To_v1beta2_Metal3Data(src, dst, nil); err != nil {
		return err
	}
	stashed := &infrav1.Metal3Data{}
	if ok, err := utilconversion.UnmarshalData(src, stashed); err != nil || !ok {
		return err
	}
	if stashed.Spec.Index == nil && src.Spec.Index == 0 {
		dst.Spec.Index = nil
	}
	restoreEmptyRef(&dst.Spec.Claim, stashed.Spec.Claim)
	restoreEmptyRef(&dst.Spec.Template, stashed.Spec.Template)
	if stashed.Status.Ready != nil && !*stashed.Status.Ready && !src.Status.Ready {
		dst.Status.Ready = stashed.Status.Ready
	}
	return nil
}

// convertFrom converts from the hub version to this Metal3Data.
func (dst *Metal3Data) convertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3Data)
	if err := Convert_v1beta2_Metal3Data_To_v1beta1_Metal3Data(src, dst, nil); err != nil {
		return err
	}
	return nil
}

// convertTo converts this Metal3DataClaim to the hub version.
func (src *Metal3DataClaim) convertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3DataClaim)
	if err := Convert_v1beta1_Metal3DataClaim_To_v1beta2_Metal3DataClaim(src, dst, nil); err != nil {
		return err
	}
	stashed := &infrav1.Metal3DataClaim{}
	if ok, err := utilconversion.UnmarshalData(src, stashed); err != nil || !ok {
		return err
	}
	restoreEmptyRef(&dst.Spec.Template, stashed.Spec.Template)
	return nil
}

// convertFrom converts from the hub version to this Metal3DataClaim.
func (dst *Metal3DataClaim) convertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3DataClaim)
	if err := Convert_v1beta2_Metal3DataClaim_To_v1beta1_Metal3DataClaim(src, dst, nil); err != nil {
		return err
	}
	return nil
}

// restoreEmptyRef takes back an empty reference where v1beta1, whose
// references are values, has none: an empty one converts to no reference.
// Any other reference converts both ways unchanged.
func restoreEmptyRef(dst **infrav1.Metal3ObjectRef, stashed *infrav1.Metal3ObjectRef) {
	if *dst == nil && stashed != nil && *stashed == (infrav1.Metal3ObjectRef{}) {
		*dst = stashed
	}
}

// restoreMetaData takes back the entries whose v1beta1 spelling is the one
// the stashed entries convert to.
func restoreMetaData(stashed, dst *infrav1.MetaData, src *MetaData) {
	newStash(stashed.Indexes, Convert_v1beta2_MetaDataIndex_To_v1beta1_MetaDataIndex).restore(dst.Indexes, src.Indexes)
	for _, pools := range []struct {
		stashed, dst []infrav1.FromPool
		src          []MetaDataFromIPPool
	}{
		{stashed.IPAddressesFromPool, dst.IPAddressesFromPool, src.IPAddressesFromIPPool},
		{stashed.PrefixesFromPool, dst.PrefixesFromPool, src.PrefixesFromIPPool},
		{stashed.GatewaysFromPool, dst.GatewaysFromPool, src.GatewaysFromIPPool},
		{stashed.DNSServersFromPool, dst.DNSServersFromPool, src.DNSServersFromIPPool},
	} {
		newStash(pools.stashed, Convert_v1beta2_FromPool_To_v1beta1_MetaDataFromIPPool).restore(pools.dst, pools.src)
	}
	newStash(stashed.FromHostInterfaces, Convert_v1beta2_MetaDataHostInterface_To_v1beta1_MetaDataFromHostInterface).
		restore(dst.FromHostInterfaces, src.FromHostInterfaces)
}

// stash holds values that a ConvertFrom stashed, each with its v1beta1
// conversion, to hand each back once to a value that v1beta1 still spells
// the same way.
type stash[H, S any] struct {
	hub   []H
	spoke []*S // nil where the conversion failed
	taken []bool
}

func newStash[H, S any](hub []H, toSpoke func(*H, *S, apimachineryconversion.Scope) error) *stash[H, S] {
	st := &stash[H, S]{hub: hub, spoke: make([]*S, len(hub)), taken: make([]bool, len(hub))}
	for i := range hub {
		var s S
		if toSpoke(&hub[i], &s, nil) == nil {
			st.spoke[i] = &s
		}
	}
	return st
}

// restore replaces each dst[i], converted from current[i], by a stashed
// value that converts to current[i], looking first at the same position (a
// list nobody reordered lines up). It reports which values it replaced.
func (st *stash[H, S]) restore(dst []H, current []S) []bool {
	done := make([]bool, len(dst))
	if len(dst) != len(current) {
		return done
	}
	n := len(st.hub)
	for i := range dst {
		for k := range n {
			j := (i + k) % n
			if !st.taken[j] && st.spoke[j] != nil && sameSpoke.DeepEqual(st.spoke[j], &current[i]) {
				dst[i], st.taken[j], done[i] = st.hub[j], true, true
				break
			}
		}
	}
	return done
}

// left returns the stashed values nothing took back.
func (st *stash[H, S]) left() []H {
	var left []H
	for j, taken := range st.taken {
		if !taken {
			left = append(left, st.hub[j])
		}
	}
	return left
}

// restoreOne replaces *dst, converted from *current, by *stashed if that
// converts to *current.
func restoreOne[H, S any](dst, stashed *H, current *S, toSpoke func(*H, *S, apimachineryconversion.Scope) error) bool {
	var back S
	if toSpoke(stashed, &back, nil) != nil || !sameSpoke.DeepEqual(&back, current) {
		return false
	}
	*dst = *stashed
	return true
}

// sameSpoke compares v1beta1 values the way the API server stores them: a
// nil list or map is an empty one, and a JSON value is what it encodes,
// however spelled.
var sameSpoke = apimachineryconversion.EqualitiesOrDie(func(a, b apiextensionsv1.JSON) bool {
	if bytes.Equal(a.Raw, b.Raw) {
		return true
	}
	var va, vb any
	return json.Unmarshal(a.Raw, &va) == nil && json.Unmarshal(b.Raw, &vb) == nil && reflect.DeepEqual(va, vb)
})

// toInt32 converts a v1beta1 integer to v1beta2's 32 bits, refusing one that
// does not fit rather than change it.
func toInt32(field string, v int) (int32, error) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, fmt.Errorf("%s: %d does not fit in 32 bits, as v1beta2 requires", field, v)
	}
	return int32(v), nil
}

// stringOrNil is v1beta1's optional string for v1beta2's plain one: empty is
// unset in both.
func stringOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return new(s)
}

// convertList converts each element of a list, keeping nil and empty apart.
func convertList[A, B any](in []A, convert func(*A, *B, apimachineryconversion.Scope) error, s apimachineryconversion.Scope) ([]B, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]B, len(in))
	for i := range in {
		if err := convert(&in[i], &out[i], s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Convert_v1beta1_MetaData_To_v1beta2_MetaData converts the *FromIPPool
// lists to v1beta2's *FromPool ones.
func Convert_v1beta1_MetaData_To_v1beta2_MetaData(in *MetaData, out *infrav1.MetaData, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta1_MetaData_To_v1beta2_MetaData(in, out, s); err != nil {
		return err
	}
	for _, pools := range []struct {
		in  []MetaDataFromIPPool
		out *[]infrav1.FromPool
	}{
		{in.IPAddressesFromIPPool, &out.IPAddressesFromPool},
		{in.PrefixesFromIPPool, &out.PrefixesFromPool},
		{in.GatewaysFromIPPool, &out.GatewaysFromPool},
		{in.DNSServersFromIPPool, &out.DNSServersFromPool},
	} {
		converted, err := convertList(pools.in, Convert_v1beta1_MetaDataFromIPPool_To_v1beta2_FromPool, s)
		if err != nil {
			return err
		}
		*pools.out = converted
	}
	return nil
}

// Convert_v1beta2_MetaData_To_v1beta1_MetaData converts the *FromPool lists
// to v1beta1's *FromIPPool ones.
func Convert_v1beta2_MetaData_To_v1beta1_MetaData(in *infrav1.MetaData, out *MetaData, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta2_MetaData_To_v1beta1_MetaData(in, out, s); err != nil {
		return err
	}
	for _, pools := range []struct {
		in  []infrav1.FromPool
		out *[]MetaDataFromIPPool
	}{
		{in.IPAddressesFromPool, &out.IPAddressesFromIPPool},
		{in.PrefixesFromPool, &out.PrefixesFromIPPool},
		{in.GatewaysFromPool, &out.GatewaysFromIPPool},
		{in.DNSServersFromPool, &out.DNSServersFromIPPool},
	} {
		converted, err := convertList(pools.in, Convert_v1beta2_FromPool_To_v1beta1_MetaDataFromIPPool, s)
		if err != nil {
			return err
		}
		*pools.out = converted
	}
	return nil
}

// Convert_v1beta1_MetaDataFromIPPool_To_v1beta2_FromPool copies the pool as
// named.
func Convert_v1beta1_MetaDataFromIPPool_To_v1beta2_FromPool(in *MetaDataFromIPPool, out *infrav1.FromPool, _ apimachineryconversion.Scope) error {
	*out = infrav1.FromPool{Key: in.Key, Name: in.Name, APIGroup: in.APIGroup, Kind: in.Kind}
	return nil
}

// Convert_v1beta2_FromPool_To_v1beta1_MetaDataFromIPPool spells out the
// apiGroup and kind that v1beta2 may leave empty (meaning Metal3's IPPool):
// v1beta1 requires both.
func Convert_v1beta2_FromPool_To_v1beta1_MetaDataFromIPPool(in *infrav1.FromPool, out *MetaDataFromIPPool, _ apimachineryconversion.Scope) error {
	*out = MetaDataFromIPPool{
		Key:      in.Key,
		Name:     in.Name,
		APIGroup: cmp.Or(in.APIGroup, metal3IPAMGroup),
		Kind:     cmp.Or(in.Kind, metal3PoolKind),
	}
	return nil
}

// Convert_v1beta1_MetaDataIndex_To_v1beta2_MetaDataIndex converts offset and
// step to 32 bits; an offset of 0 is v1beta2's unset one.
func Convert_v1beta1_MetaDataIndex_To_v1beta2_MetaDataIndex(in *MetaDataIndex, out *infrav1.MetaDataIndex, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta1_MetaDataIndex_To_v1beta2_MetaDataIndex(in, out, s); err != nil {
		return err
	}
	step, err := toInt32("step", in.Step)
	if err != nil {
		return err
	}
	out.Step = step
	out.Offset = nil
	if in.Offset != 0 {
		offset, err := toInt32("offset", in.Offset)
		if err != nil {
			return err
		}
		out.Offset = &offset
	}
	return nil
}

// Convert_v1beta2_MetaDataIndex_To_v1beta1_MetaDataIndex reads an unset
// offset as 0.
func Convert_v1beta2_MetaDataIndex_To_v1beta1_MetaDataIndex(in *infrav1.MetaDataIndex, out *MetaDataIndex, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta2_MetaDataIndex_To_v1beta1_MetaDataIndex(in, out, s); err != nil {
		return err
	}
	out.Offset = int(ptr.Deref(in.Offset, 0))
	return nil
}

// Convert_v1beta1_MetaDataFromHostInterface_To_v1beta2_MetaDataHostInterface
// converts fromBootMAC false to unset.
func Convert_v1beta1_MetaDataFromHostInterface_To_v1beta2_MetaDataHostInterface(in *MetaDataFromHostInterface, out *infrav1.MetaDataHostInterface, _ apimachineryconversion.Scope) error {
	*out = infrav1.MetaDataHostInterface{Key: in.Key, Interface: in.Interface}
	if in.FromBootMAC {
		out.FromBootMAC = new(true)
	}
	return nil
}

// Convert_v1beta2_MetaDataHostInterface_To_v1beta1_MetaDataFromHostInterface
// reads an unset fromBootMAC as false.
func Convert_v1beta2_MetaDataHostInterface_To_v1beta1_MetaDataFromHostInterface(in *infrav1.MetaDataHostInterface, out *MetaDataFromHostInterface, _ apimachineryconversion.Scope) error {
	*out = MetaDataFromHostInterface{Key: in.Key, Interface: in.Interface, FromBootMAC: ptr.Deref(in.FromBootMAC, false)}
	return nil
}

// Convert_v1beta1_Metal3DataTemplateStatus_To_v1beta2_Metal3DataTemplateStatus
// turns the indexes map into v1beta2's list, sorted by index (then name).
func Convert_v1beta1_Metal3DataTemplateStatus_To_v1beta2_Metal3DataTemplateStatus(in *Metal3DataTemplateStatus, out *infrav1.Metal3DataTemplateStatus, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta1_Metal3DataTemplateStatus_To_v1beta2_Metal3DataTemplateStatus(in, out, s); err != nil {
		return err
	}
	out.Indexes = nil
	if in.Indexes == nil {
		return nil
	}
	out.Indexes = make([]infrav1.IndexEntry, 0, len(in.Indexes))
	for name, index := range in.Indexes {
		i, err := toInt32("indexes["+name+"]", index)
		if err != nil {
			return err
		}
		out.Indexes = append(out.Indexes, infrav1.IndexEntry{Name: name, Index: &i})
	}
	slices.SortFunc(out.Indexes, func(a, b infrav1.IndexEntry) int {
		return cmp.Or(cmp.Compare(*a.Index, *b.Index), strings.Compare(a.Name, b.Name))
	})
	return nil
}

// Convert_v1beta2_Metal3DataTemplateStatus_To_v1beta1_Metal3DataTemplateStatus
// turns the indexes list into v1beta1's map.
func Convert_v1beta2_Metal3DataTemplateStatus_To_v1beta1_Metal3DataTemplateStatus(in *infrav1.Metal3DataTemplateStatus, out *Metal3DataTemplateStatus, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta2_Metal3DataTemplateStatus_To_v1beta1_Metal3DataTemplateStatus(in, out, s); err != nil {
		return err
	}
	return indexesToSpoke(&in.Indexes, &out.Indexes, s)
}

// indexesToSpoke turns a template's index list into v1beta1's map: a claim
// listed twice keeps its last index, an entry without an index has 0.
func indexesToSpoke(in *[]infrav1.IndexEntry, out *map[string]int, _ apimachineryconversion.Scope) error {
	if *in == nil {
		*out = nil
		return nil
	}
	*out = make(map[string]int, len(*in))
	for _, e := range *in {
		(*out)[e.Name] = int(ptr.Deref(e.Index, 0))
	}
	return nil
}

// Convert_v1beta1_Metal3DataSpec_To_v1beta2_Metal3DataSpec always sets the
// index (0 is the first machine's) and keeps name and namespace of the
// claim and template, an empty reference being none.
func Convert_v1beta1_Metal3DataSpec_To_v1beta2_Metal3DataSpec(in *Metal3DataSpec, out *infrav1.Metal3DataSpec, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta1_Metal3DataSpec_To_v1beta2_Metal3DataSpec(in, out, s); err != nil {
		return err
	}
	index, err := toInt32("index", in.Index)
	if err != nil {
		return err
	}
	out.Index = &index
	if out.Claim, err = refToHub(&in.Claim, s); err != nil {
		return err
	}
	out.Template, err = refToHub(&in.Template, s)
	return err
}

// Convert_v1beta2_Metal3DataSpec_To_v1beta1_Metal3DataSpec reads an unset
// index as 0 and no reference as an empty one.
func Convert_v1beta2_Metal3DataSpec_To_v1beta1_Metal3DataSpec(in *infrav1.Metal3DataSpec, out *Metal3DataSpec, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta2_Metal3DataSpec_To_v1beta1_Metal3DataSpec(in, out, s); err != nil {
		return err
	}
	out.Index = int(ptr.Deref(in.Index, 0))
	if err := refToSpoke(in.Claim, &out.Claim, s); err != nil {
		return err
	}
	return refToSpoke(in.Template, &out.Template, s)
}

// Convert_v1beta1_Metal3DataClaimSpec_To_v1beta2_Metal3DataClaimSpec keeps
// name and namespace of the template, an empty reference being none.
func Convert_v1beta1_Metal3DataClaimSpec_To_v1beta2_Metal3DataClaimSpec(in *Metal3DataClaimSpec, out *infrav1.Metal3DataClaimSpec, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta1_Metal3DataClaimSpec_To_v1beta2_Metal3DataClaimSpec(in, out, s); err != nil {
		return err
	}
	var err error
	out.Template, err = refToHub(&in.Template, s)
	return err
}

// Convert_v1beta2_Metal3DataClaimSpec_To_v1beta1_Metal3DataClaimSpec reads
// no template as an empty reference.
func Convert_v1beta2_Metal3DataClaimSpec_To_v1beta1_Metal3DataClaimSpec(in *infrav1.Metal3DataClaimSpec, out *Metal3DataClaimSpec, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta2_Metal3DataClaimSpec_To_v1beta1_Metal3DataClaimSpec(in, out, s); err != nil {
		return err
	}
	return refToSpoke(in.Template, &out.Template, s)
}

// refToHub converts a v1beta1 reference, a value, to v1beta2's optional
// one: without name and namespace it is none.
func refToHub(in *corev1.ObjectReference, s apimachineryconversion.Scope) (*infrav1.Metal3ObjectRef, error) {
	if in.Name == "" && in.Namespace == "" {
		return nil, nil
	}
	out := &infrav1.Metal3ObjectRef{}
	return out, Convert_v1_ObjectReference_To_v1beta2_Metal3ObjectRef(in, out, s)
}

func refToSpoke(in *infrav1.Metal3ObjectRef, out *corev1.ObjectReference, s apimachineryconversion.Scope) error {
	*out = corev1.ObjectReference{}
	if in == nil {
		return nil
	}
	return Convert_v1beta2_Metal3ObjectRef_To_v1_ObjectReference(in, out, s)
}

// Convert_v1beta1_Metal3DataStatus_To_v1beta2_Metal3DataStatus converts
// ready false to unset.
func Convert_v1beta1_Metal3DataStatus_To_v1beta2_Metal3DataStatus(in *Metal3DataStatus, out *infrav1.Metal3DataStatus, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta1_Metal3DataStatus_To_v1beta2_Metal3DataStatus(in, out, s); err != nil {
		return err
	}
	out.Ready = nil
	if in.Ready {
		out.Ready = new(true)
	}
	return nil
}

// Convert_v1beta2_Metal3DataStatus_To_v1beta1_Metal3DataStatus leaves out an
// empty error message.
func Convert_v1beta2_Metal3DataStatus_To_v1beta1_Metal3DataStatus(in *infrav1.Metal3DataStatus, out *Metal3DataStatus, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta2_Metal3DataStatus_To_v1beta1_Metal3DataStatus(in, out, s); err != nil {
		return err
	}
	out.ErrorMessage = stringOrNil(in.ErrorMessage)
	return nil
}

// Convert_v1beta2_Metal3DataClaimStatus_To_v1beta1_Metal3DataClaimStatus
// leaves out an empty error message.
func Convert_v1beta2_Metal3DataClaimStatus_To_v1beta1_Metal3DataClaimStatus(in *infrav1.Metal3DataClaimStatus, out *Metal3DataClaimStatus, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta2_Metal3DataClaimStatus_To_v1beta1_Metal3DataClaimStatus(in, out, s); err != nil {
		return err
	}
	out.ErrorMessage = stringOrNil(in.ErrorMessage)
	return nil
}
