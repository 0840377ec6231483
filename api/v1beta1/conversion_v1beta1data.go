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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"reflect"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	utilconversion "sigs.k8s.io/cluster-api/util/conversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// What v1beta1 says that v1beta2 cannot: a reference's kind, apiVersion or
// uid (v1beta2 references hold a name and namespace), noCloudProvider, a
// pointer to "" where v1beta2 has a string, an int beyond v1beta2's range…
// Objects are stored in v1beta2, so without care a v1beta1 user would read
// back less than they wrote. ConvertTo therefore records, on the v1beta2
// object, each part (spec, status) of the v1beta1 object that converting
// back would not reproduce, with a fingerprint of that part of the v1beta2
// object; ConvertFrom gives the recorded part back while the v1beta2 part
// is still the one it was recorded against. Once the v1beta2 part changes
// (a controller writes status, a v1beta2 client edits the spec), v1beta2 is
// the truth and the record is dropped for that part.
//
// The other direction (v1beta2 → v1beta1 → v1beta2) keeps the v1beta2
// object in Cluster API's cluster.x-k8s.io/conversion-data annotation,
// written by the exported ConvertFrom (Metal3ClusterIdentity's two versions
// are the same and need none). convertFrom only converts: keepV1beta1
// calls it for its comparison, which needs no copy of the hub.

// V1beta1DataAnnotation holds, on a v1beta2 object, the parts of the
// v1beta1 object it was written as that v1beta2 cannot hold.
const V1beta1DataAnnotation = "infrastructure.cluster.x-k8s.io/v1beta1-conversion-data"

// spokeRecord is one recorded part: the v1beta1 value and the fingerprint
// of the v1beta2 value it was converted to.
type spokeRecord struct {
	V1beta1 json.RawMessage `json:"v1beta1"`
	Hub     string          `json:"hub"`
}

// spoke is a v1beta1 object with the conversion its exported ConvertFrom
// wraps.
type spoke interface {
	client.Object
	convertFrom(hub conversion.Hub) error
}

// hubObject is a v1beta2 object.
type hubObject interface {
	client.Object
	conversion.Hub
}

// keepV1beta1 records on hub the parts of src (just converted into hub)
// that converting hub back into scratch does not reproduce.
func keepV1beta1(src spoke, hub hubObject, scratch spoke) error {
	annotations := maps.Clone(hub.GetAnnotations())
	delete(annotations, V1beta1DataAnnotation)
	defer func() {
		if len(annotations) == 0 {
			annotations = nil
		}
		hub.SetAnnotations(annotations)
	}()
	back := hub.DeepCopyObject().(hubObject)
	back.SetAnnotations(nil)
	if err := scratch.convertFrom(back); err != nil {
		return err
	}
	records := map[string]spokeRecord{}
	for _, name := range partNames(src) {
		want, got := partOf(src, name), partOf(scratch, name)
		if apiequality.Semantic.DeepEqual(want, got) {
			continue
		}
		raw, err := json.Marshal(want)
		if err != nil {
			return err
		}
		fingerprint, err := fingerprintOf(partOf(hub, name))
		if err != nil {
			return err
		}
		records[name] = spokeRecord{V1beta1: raw, Hub: fingerprint}
	}
	if len(records) == 0 {
		return nil
	}
	data, err := json.Marshal(records)
	if err != nil {
		return err
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[V1beta1DataAnnotation] = string(data)
	return nil
}

// restoreV1beta1 gives dst (just converted from hub) back the recorded
// parts of the v1beta1 object hub was written as, where hub still holds
// what they were converted to, and removes the record from dst.
func restoreV1beta1(hub hubObject, dst spoke) error {
	value, ok := hub.GetAnnotations()[V1beta1DataAnnotation]
	if !ok {
		return nil
	}
	annotations := maps.Clone(dst.GetAnnotations())
	delete(annotations, V1beta1DataAnnotation)
	if len(annotations) == 0 {
		annotations = nil
	}
	dst.SetAnnotations(annotations)
	records := map[string]spokeRecord{}
	if err := json.Unmarshal([]byte(value), &records); err != nil {
		// Not ours to fail on: a record nobody can read restores nothing.
		return nil //nolint:nilerr // see above
	}
	restored := map[string]json.RawMessage{}
	for name, record := range records {
		fingerprint, err := fingerprintOf(partOf(hub, name))
		if err != nil {
			return err
		}
		if fingerprint == record.Hub {
			restored[name] = record.V1beta1
		}
	}
	if len(restored) == 0 {
		return nil
	}
	// Decode the recorded parts into a fresh object (fields absent from a
	// record are absent from the result; JSON keeps int64s exact), then
	// move those parts alone into dst: its metadata stays as converted.
	data, err := json.Marshal(restored)
	if err != nil {
		return err
	}
	fresh := reflect.New(reflect.TypeOf(dst).Elem())
	if err := json.Unmarshal(data, fresh.Interface()); err != nil {
		return nil //nolint:nilerr // a record that no longer decodes restores nothing
	}
	target := reflect.ValueOf(dst).Elem()
	for i := range target.NumField() {
		name, _, _ := strings.Cut(target.Type().Field(i).Tag.Get("json"), ",")
		if _, ok := restored[name]; ok {
			target.Field(i).Set(fresh.Elem().Field(i))
		}
	}
	return nil
}

// partNames are the JSON names of obj's top-level fields other than its
// type and metadata: spec and status.
func partNames(obj runtime.Object) []string {
	var names []string
	t := reflect.TypeOf(obj).Elem()
	for i := range t.NumField() {
		field := t.Field(i)
		if field.Anonymous {
			continue // TypeMeta
		}
		name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
		if name != "metadata" && name != "" {
			names = append(names, name)
		}
	}
	return names
}

// partOf is obj's top-level field of that JSON name, nil if it has none.
func partOf(obj runtime.Object, name string) any {
	v := reflect.ValueOf(obj).Elem()
	for i := range v.NumField() {
		if n, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ","); n == name {
			return v.Field(i).Interface()
		}
	}
	return nil
}

func fingerprintOf(part any) (string, error) {
	data, err := json.Marshal(part)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// ConvertTo converts this Metal3Cluster to the hub version, v1beta2.
func (src *Metal3Cluster) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3Cluster)
	if err := src.convertTo(dst); err != nil {
		return err
	}
	return keepV1beta1(src, dst, &Metal3Cluster{})
}

// ConvertFrom converts the hub version, v1beta2, to this Metal3Cluster.
func (dst *Metal3Cluster) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3Cluster)
	if err := dst.convertFrom(src); err != nil {
		return err
	}
	if err := utilconversion.MarshalData(src, dst); err != nil {
		return err
	}
	return restoreV1beta1(src, dst)
}

// ConvertTo converts this Metal3ClusterTemplate to the hub version, v1beta2.
func (src *Metal3ClusterTemplate) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3ClusterTemplate)
	if err := src.convertTo(dst); err != nil {
		return err
	}
	return keepV1beta1(src, dst, &Metal3ClusterTemplate{})
}

// ConvertFrom converts the hub version, v1beta2, to this Metal3ClusterTemplate.
func (dst *Metal3ClusterTemplate) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3ClusterTemplate)
	if err := dst.convertFrom(src); err != nil {
		return err
	}
	if err := utilconversion.MarshalData(src, dst); err != nil {
		return err
	}
	return restoreV1beta1(src, dst)
}

// ConvertTo converts this Metal3ClusterIdentity to the hub version, v1beta2.
func (src *Metal3ClusterIdentity) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3ClusterIdentity)
	if err := src.convertTo(dst); err != nil {
		return err
	}
	return keepV1beta1(src, dst, &Metal3ClusterIdentity{})
}

// ConvertFrom converts the hub version, v1beta2, to this Metal3ClusterIdentity.
func (dst *Metal3ClusterIdentity) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3ClusterIdentity)
	if err := dst.convertFrom(src); err != nil {
		return err
	}
	return restoreV1beta1(src, dst)
}

// ConvertTo converts this Metal3Machine to the hub version, v1beta2.
func (src *Metal3Machine) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3Machine)
	if err := src.convertTo(dst); err != nil {
		return err
	}
	return keepV1beta1(src, dst, &Metal3Machine{})
}

// ConvertFrom converts the hub version, v1beta2, to this Metal3Machine.
func (dst *Metal3Machine) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3Machine)
	if err := dst.convertFrom(src); err != nil {
		return err
	}
	if err := utilconversion.MarshalData(src, dst); err != nil {
		return err
	}
	return restoreV1beta1(src, dst)
}

// ConvertTo converts this Metal3MachineTemplate to the hub version, v1beta2.
func (src *Metal3MachineTemplate) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3MachineTemplate)
	if err := src.convertTo(dst); err != nil {
		return err
	}
	return keepV1beta1(src, dst, &Metal3MachineTemplate{})
}

// ConvertFrom converts the hub version, v1beta2, to this Metal3MachineTemplate.
func (dst *Metal3MachineTemplate) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3MachineTemplate)
	if err := dst.convertFrom(src); err != nil {
		return err
	}
	if err := utilconversion.MarshalData(src, dst); err != nil {
		return err
	}
	return restoreV1beta1(src, dst)
}

// ConvertTo converts this Metal3DataTemplate to the hub version, v1beta2.
func (src *Metal3DataTemplate) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3DataTemplate)
	if err := src.convertTo(dst); err != nil {
		return err
	}
	return keepV1beta1(src, dst, &Metal3DataTemplate{})
}

// ConvertFrom converts the hub version, v1beta2, to this Metal3DataTemplate.
func (dst *Metal3DataTemplate) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3DataTemplate)
	if err := dst.convertFrom(src); err != nil {
		return err
	}
	if err := utilconversion.MarshalData(src, dst); err != nil {
		return err
	}
	return restoreV1beta1(src, dst)
}

// ConvertTo converts this Metal3Data to the hub version, v1beta2.
func (src *Metal3Data) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3Data)
	if err := src.convertTo(dst); err != nil {
		return err
	}
	return keepV1beta1(src, dst, &Metal3Data{})
}

// ConvertFrom converts the hub version, v1beta2, to this Metal3Data.
func (dst *Metal3Data) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3Data)
	if err := dst.convertFrom(src); err != nil {
		return err
	}
	if err := utilconversion.MarshalData(src, dst); err != nil {
		return err
	}
	return restoreV1beta1(src, dst)
}

// ConvertTo converts this Metal3DataClaim to the hub version, v1beta2.
func (src *Metal3DataClaim) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3DataClaim)
	if err := src.convertTo(dst); err != nil {
		return err
	}
	return keepV1beta1(src, dst, &Metal3DataClaim{})
}

// ConvertFrom converts the hub version, v1beta2, to this Metal3DataClaim.
func (dst *Metal3DataClaim) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3DataClaim)
	if err := dst.convertFrom(src); err != nil {
		return err
	}
	if err := utilconversion.MarshalData(src, dst); err != nil {
		return err
	}
	return restoreV1beta1(src, dst)
}

// ConvertTo converts this Metal3Remediation to the hub version, v1beta2.
func (src *Metal3Remediation) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3Remediation)
	if err := src.convertTo(dst); err != nil {
		return err
	}
	return keepV1beta1(src, dst, &Metal3Remediation{})
}

// ConvertFrom converts the hub version, v1beta2, to this Metal3Remediation.
func (dst *Metal3Remediation) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3Remediation)
	if err := dst.convertFrom(src); err != nil {
		return err
	}
	if err := utilconversion.MarshalData(src, dst); err != nil {
		return err
	}
	return restoreV1beta1(src, dst)
}

// ConvertTo converts this Metal3RemediationTemplate to the hub version, v1beta2.
func (src *Metal3RemediationTemplate) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3RemediationTemplate)
	if err := src.convertTo(dst); err != nil {
		return err
	}
	return keepV1beta1(src, dst, &Metal3RemediationTemplate{})
}

// ConvertFrom converts the hub version, v1beta2, to this Metal3RemediationTemplate.
func (dst *Metal3RemediationTemplate) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3RemediationTemplate)
	if err := dst.convertFrom(src); err != nil {
		return err
	}
	if err := utilconversion.MarshalData(src, dst); err != nil {
		return err
	}
	return restoreV1beta1(src, dst)
}
