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
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apimachineryconversion "k8s.io/apimachinery/pkg/conversion"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	utilconversion "sigs.k8s.io/cluster-api/util/conversion"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Conversions of the cluster, machine, remediation and identity kinds
// between v1beta1 and the v1beta2 hub. What both versions hold is converted
// by zz_generated.conversion.go; this file converts what differs.
//
// Nothing is lost either way:
//   - v1beta2 → v1beta1 stores the whole v1beta2 object in the
//     cluster.x-k8s.io/conversion-data annotation (Cluster API's way), and
//     v1beta1 → v1beta2 takes back from it what v1beta1 cannot say (an empty
//     checksum versus none, nodeReuse unset versus false, the order of
//     failure domains…) as long as the v1beta1 object still says the same.
//   - v1beta1 → v1beta2 records what v1beta2 cannot say (noCloudProvider,
//     a reference's kind…) in V1beta1DataAnnotation
//     (conversion_v1beta1data.go).

// convertTo converts this Metal3Cluster to the hub version.
func (src *Metal3Cluster) convertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3Cluster)
	if err := Convert_v1beta1_Metal3Cluster_To_v1beta2_Metal3Cluster(src, dst, nil); err != nil {
		return err
	}
	// The stashed hub first: taking it removes the annotation from the
	// metadata src and dst share, before dst gets annotations of its own.
	restored := &infrav1.Metal3Cluster{}
	ok, err := utilconversion.UnmarshalData(src, restored)
	if err != nil {
		return err
	}
	if ok {
		restoreClusterSpec(&restored.Spec, &dst.Spec)
	}
	return nil
}

// convertFrom converts the hub version to this Metal3Cluster.
func (dst *Metal3Cluster) convertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3Cluster)
	if err := Convert_v1beta2_Metal3Cluster_To_v1beta1_Metal3Cluster(src, dst, nil); err != nil {
		return err
	}
	return nil
}

// convertTo converts this Metal3ClusterTemplate to the hub version.
func (src *Metal3ClusterTemplate) convertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3ClusterTemplate)
	if err := Convert_v1beta1_Metal3ClusterTemplate_To_v1beta2_Metal3ClusterTemplate(src, dst, nil); err != nil {
		return err
	}
	// The stashed hub first: taking it removes the annotation from the
	// metadata src and dst share, before dst gets annotations of its own.
	restored := &infrav1.Metal3ClusterTemplate{}
	ok, err := utilconversion.UnmarshalData(src, restored)
	if err != nil {
		return err
	}
	if ok {
		restoreClusterSpec(&restored.Spec.Template.Spec, &dst.Spec.Template.Spec)
	}
	return nil
}

// convertFrom converts the hub version to this Metal3ClusterTemplate.
func (dst *Metal3ClusterTemplate) convertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3ClusterTemplate)
	if err := Convert_v1beta2_Metal3ClusterTemplate_To_v1beta1_Metal3ClusterTemplate(src, dst, nil); err != nil {
		return err
	}
	return nil
}

// convertTo converts this Metal3Machine to the hub version.
func (src *Metal3Machine) convertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3Machine)
	if err := Convert_v1beta1_Metal3Machine_To_v1beta2_Metal3Machine(src, dst, nil); err != nil {
		return err
	}
	restored := &infrav1.Metal3Machine{}
	if ok, err := utilconversion.UnmarshalData(src, restored); err != nil || !ok {
		return err
	}
	restoreMachineSpec(&restored.Spec, &dst.Spec)
	return nil
}

// convertFrom converts the hub version to this Metal3Machine.
func (dst *Metal3Machine) convertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3Machine)
	if err := Convert_v1beta2_Metal3Machine_To_v1beta1_Metal3Machine(src, dst, nil); err != nil {
		return err
	}
	return nil
}

// convertTo converts this Metal3MachineTemplate to the hub version.
func (src *Metal3MachineTemplate) convertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3MachineTemplate)
	if err := Convert_v1beta1_Metal3MachineTemplate_To_v1beta2_Metal3MachineTemplate(src, dst, nil); err != nil {
		return err
	}
	restored := &infrav1.Metal3MachineTemplate{}
	if ok, err := utilconversion.UnmarshalData(src, restored); err != nil || !ok {
		return err
	}
	restoreMachineSpec(&restored.Spec.Template.Spec, &dst.Spec.Template.Spec)
	// nodeReuse unset reads as false in v1beta1.
	if restored.Spec.NodeReuse == nil && !src.Spec.NodeReuse {
		dst.Spec.NodeReuse = nil
	}
	return nil
}

// convertFrom converts the hub version to this Metal3MachineTemplate.
func (dst *Metal3MachineTemplate) convertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3MachineTemplate)
	if err := Convert_v1beta2_Metal3MachineTemplate_To_v1beta1_Metal3MachineTemplate(src, dst, nil); err != nil {
		return err
	}
	return nil
}

// convertTo converts this Metal3Remediation to the hub version.
func (src *Metal3Remediation) convertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3Remediation)
	if err := Convert_v1beta1_Metal3Remediation_To_v1beta2_Metal3Remediation(src, dst, nil); err != nil {
		return err
	}
	// Whole seconds and int32 counts say in v1beta1 what they say in
	// v1beta2: nothing to restore, only the annotation to drop.
	_, err := utilconversion.UnmarshalData(src, &infrav1.Metal3Remediation{})
	return err
}

// convertFrom converts the hub version to this Metal3Remediation.
func (dst *Metal3Remediation) convertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3Remediation)
	if err := Convert_v1beta2_Metal3Remediation_To_v1beta1_Metal3Remediation(src, dst, nil); err != nil {
		return err
	}
	return nil
}

// convertTo converts this Metal3RemediationTemplate to the hub version.
func (src *Metal3RemediationTemplate) convertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*infrav1.Metal3RemediationTemplate)
	if err := Convert_v1beta1_Metal3RemediationTemplate_To_v1beta2_Metal3RemediationTemplate(src, dst, nil); err != nil {
		return err
	}
	restored := &infrav1.Metal3RemediationTemplate{}
	if ok, err := utilconversion.UnmarshalData(src, restored); err != nil || !ok {
		return err
	}
	// v1beta1 has no status for a template.
	dst.Status = restored.Status
	return nil
}

// convertFrom converts the hub version to this Metal3RemediationTemplate.
func (dst *Metal3RemediationTemplate) convertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*infrav1.Metal3RemediationTemplate)
	if err := Convert_v1beta2_Metal3RemediationTemplate_To_v1beta1_Metal3RemediationTemplate(src, dst, nil); err != nil {
		return err
	}
	return nil
}

// convertTo converts this Metal3ClusterIdentity to the hub version; the two
// versions are the same.
func (src *Metal3ClusterIdentity) convertTo(dstRaw conversion.Hub) error {
	return Convert_v1beta1_Metal3ClusterIdentity_To_v1beta2_Metal3ClusterIdentity(src, dstRaw.(*infrav1.Metal3ClusterIdentity), nil)
}

// convertFrom converts the hub version to this Metal3ClusterIdentity.
func (dst *Metal3ClusterIdentity) convertFrom(srcRaw conversion.Hub) error {
	return Convert_v1beta2_Metal3ClusterIdentity_To_v1beta1_Metal3ClusterIdentity(srcRaw.(*infrav1.Metal3ClusterIdentity), dst, nil)
}

// restoreClusterSpec takes back from the stashed hub what v1beta1 cannot
// say: the order of failure domains and controlPlane unset versus false.
func restoreClusterSpec(restored, dst *infrav1.Metal3ClusterSpec) {
	if failureDomainsEquivalent(restored.FailureDomains, dst.FailureDomains) {
		dst.FailureDomains = restored.FailureDomains
	}
}

// failureDomainsEquivalent reports whether a and b name the same failure
// domains with the same attributes, whatever their order and whether an
// unset controlPlane is spelled out.
func failureDomainsEquivalent(a, b []clusterv1.FailureDomain) bool {
	if len(a) != len(b) {
		return false
	}
	byName := make(map[string]clusterv1.FailureDomain, len(a))
	for _, fd := range a {
		byName[fd.Name] = fd
	}
	for _, fd := range b {
		other, ok := byName[fd.Name]
		if !ok || ptrBool(other.ControlPlane) != ptrBool(fd.ControlPlane) || !maps.Equal(other.Attributes, fd.Attributes) {
			return false
		}
	}
	return true
}

func ptrBool(b *bool) bool { return b != nil && *b }

// restoreMachineSpec takes back what v1beta1 cannot say: an empty checksum,
// the shape of references, an empty host selector.
func restoreMachineSpec(restored, dst *infrav1.Metal3MachineSpec) {
	if restored.Image.Checksum != nil && *restored.Image.Checksum == "" && dst.Image.Checksum == nil {
		dst.Image.Checksum = restored.Image.Checksum
	}
	if restored.HostSelector != nil && dst.HostSelector == nil && isEmptyHostSelector(restored.HostSelector) {
		dst.HostSelector = restored.HostSelector
	}
}

func isEmptyHostSelector(s *infrav1.HostSelector) bool {
	return len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0
}

// Convert_v1beta1_Metal3ClusterSpec_To_v1beta2_Metal3ClusterSpec converts
// the failure domains map to v1beta2's list (sorted by name) and folds the
// deprecated noCloudProvider into cloudProviderEnabled when that is unset.
func Convert_v1beta1_Metal3ClusterSpec_To_v1beta2_Metal3ClusterSpec(in *Metal3ClusterSpec, out *infrav1.Metal3ClusterSpec, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta1_Metal3ClusterSpec_To_v1beta2_Metal3ClusterSpec(in, out, s); err != nil {
		return err
	}
	if out.CloudProviderEnabled == nil && in.NoCloudProvider != nil {
		out.CloudProviderEnabled = new(!*in.NoCloudProvider)
	}
	out.FailureDomains = nil
	if in.FailureDomains != nil {
		out.FailureDomains = make([]clusterv1.FailureDomain, 0, len(in.FailureDomains))
	}
	for _, name := range slices.Sorted(maps.Keys(in.FailureDomains)) {
		fd := in.FailureDomains[name]
		out.FailureDomains = append(out.FailureDomains, clusterv1.FailureDomain{
			Name:         name,
			ControlPlane: new(fd.ControlPlane),
			Attributes:   fd.Attributes,
		})
	}
	return nil
}

// Convert_v1beta2_Metal3ClusterSpec_To_v1beta1_Metal3ClusterSpec converts
// the failure domains list back to v1beta1's map.
func Convert_v1beta2_Metal3ClusterSpec_To_v1beta1_Metal3ClusterSpec(in *infrav1.Metal3ClusterSpec, out *Metal3ClusterSpec, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta2_Metal3ClusterSpec_To_v1beta1_Metal3ClusterSpec(in, out, s); err != nil {
		return err
	}
	out.FailureDomains = nil
	if in.FailureDomains != nil {
		out.FailureDomains = make(map[string]FailureDomainSpec, len(in.FailureDomains))
	}
	for _, fd := range in.FailureDomains {
		out.FailureDomains[fd.Name] = FailureDomainSpec{ControlPlane: ptrBool(fd.ControlPlane), Attributes: fd.Attributes}
	}
	return nil
}

// Convert_v1beta1_Metal3MachineSpec_To_v1beta2_Metal3MachineSpec converts a
// custom deploy pointer to v1beta2's value and the host selector value to
// v1beta2's pointer (an empty selector is no selector).
func Convert_v1beta1_Metal3MachineSpec_To_v1beta2_Metal3MachineSpec(in *Metal3MachineSpec, out *infrav1.Metal3MachineSpec, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta1_Metal3MachineSpec_To_v1beta2_Metal3MachineSpec(in, out, s); err != nil {
		return err
	}
	out.CustomDeploy = infrav1.CustomDeploy{}
	if in.CustomDeploy != nil {
		out.CustomDeploy.Method = in.CustomDeploy.Method
	}
	out.HostSelector = nil
	if len(in.HostSelector.MatchLabels) > 0 || len(in.HostSelector.MatchExpressions) > 0 {
		out.HostSelector = &infrav1.HostSelector{}
		if err := Convert_v1beta1_HostSelector_To_v1beta2_HostSelector(&in.HostSelector, out.HostSelector, s); err != nil {
			return err
		}
	}
	return nil
}

// Convert_v1beta2_Metal3MachineSpec_To_v1beta1_Metal3MachineSpec converts
// back: an empty custom deploy is none.
func Convert_v1beta2_Metal3MachineSpec_To_v1beta1_Metal3MachineSpec(in *infrav1.Metal3MachineSpec, out *Metal3MachineSpec, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta2_Metal3MachineSpec_To_v1beta1_Metal3MachineSpec(in, out, s); err != nil {
		return err
	}
	out.ProviderID = optionalString(in.ProviderID)
	out.AutomatedCleaningMode = optionalString(in.AutomatedCleaningMode)
	out.CustomDeploy = nil
	if in.CustomDeploy.Method != "" {
		out.CustomDeploy = &CustomDeploy{Method: in.CustomDeploy.Method}
	}
	out.HostSelector = HostSelector{}
	if in.HostSelector != nil {
		return Convert_v1beta2_HostSelector_To_v1beta1_HostSelector(in.HostSelector, &out.HostSelector, s)
	}
	return nil
}

// Convert_v1beta1_Image_To_v1beta2_Image: an empty checksum is none.
func Convert_v1beta1_Image_To_v1beta2_Image(in *Image, out *infrav1.Image, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta1_Image_To_v1beta2_Image(in, out, s); err != nil {
		return err
	}
	out.Checksum = optionalString(in.Checksum)
	return nil
}

// Convert_v1beta2_Image_To_v1beta1_Image: an empty checksum type or disk
// format is none.
func Convert_v1beta2_Image_To_v1beta1_Image(in *infrav1.Image, out *Image, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta2_Image_To_v1beta1_Image(in, out, s); err != nil {
		return err
	}
	out.ChecksumType = optionalString(in.ChecksumType)
	out.DiskFormat = optionalString(in.DiskFormat)
	return nil
}

// optionalString is s, or nil for "": v1beta1's optional strings are
// pointers, v1beta2's are strings whose zero value means unset.
func optionalString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Convert_v1beta1_RemediationStrategy_To_v1beta2_RemediationStrategy
// converts the timeout duration to v1beta2's whole seconds.
func Convert_v1beta1_RemediationStrategy_To_v1beta2_RemediationStrategy(in *RemediationStrategy, out *infrav1.RemediationStrategy, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta1_RemediationStrategy_To_v1beta2_RemediationStrategy(in, out, s); err != nil {
		return err
	}
	out.TimeoutSeconds = 0
	if in.Timeout != nil {
		out.TimeoutSeconds = int32(in.Timeout.Duration / time.Second)
	}
	return nil
}

// Convert_v1beta2_RemediationStrategy_To_v1beta1_RemediationStrategy
// converts whole seconds back to a duration (0: unset).
func Convert_v1beta2_RemediationStrategy_To_v1beta1_RemediationStrategy(in *infrav1.RemediationStrategy, out *RemediationStrategy, s apimachineryconversion.Scope) error {
	if err := autoConvert_v1beta2_RemediationStrategy_To_v1beta1_RemediationStrategy(in, out, s); err != nil {
		return err
	}
	out.Timeout = nil
	if in.TimeoutSeconds != 0 {
		out.Timeout = &metav1.Duration{Duration: time.Duration(in.TimeoutSeconds) * time.Second}
	}
	return nil
}

// Convert_v1beta2_Metal3RemediationTemplate_To_v1beta1_Metal3RemediationTemplate
// drops the status v1beta1 templates do not have (ConvertFrom stashes it).
func Convert_v1beta2_Metal3RemediationTemplate_To_v1beta1_Metal3RemediationTemplate(in *infrav1.Metal3RemediationTemplate, out *Metal3RemediationTemplate, s apimachineryconversion.Scope) error {
	return autoConvert_v1beta2_Metal3RemediationTemplate_To_v1beta1_Metal3RemediationTemplate(in, out, s)
}

// Convert_v1beta1_ObjectMeta_To_v1beta2_ObjectMeta converts a template's
// labels and annotations to Cluster API's ObjectMeta.
func Convert_v1beta1_ObjectMeta_To_v1beta2_ObjectMeta(in *ObjectMeta, out *clusterv1.ObjectMeta, _ apimachineryconversion.Scope) error {
	out.Labels = in.Labels
	out.Annotations = in.Annotations
	return nil
}

// Convert_v1beta2_ObjectMeta_To_v1beta1_ObjectMeta converts Cluster API's
// ObjectMeta to a template's labels and annotations.
func Convert_v1beta2_ObjectMeta_To_v1beta1_ObjectMeta(in *clusterv1.ObjectMeta, out *ObjectMeta, _ apimachineryconversion.Scope) error {
	out.Labels = in.Labels
	out.Annotations = in.Annotations
	return nil
}

// Convert_v1_ObjectMeta_To_v1beta1_ObjectMeta is the conversion
// conversion-gen registers between an object's metadata and a template's
// (same Go name): labels and annotations.
func Convert_v1_ObjectMeta_To_v1beta1_ObjectMeta(in *metav1.ObjectMeta, out *ObjectMeta, s apimachineryconversion.Scope) error {
	return autoConvert_v1_ObjectMeta_To_v1beta1_ObjectMeta(in, out, s)
}

// Convert_v1_ObjectReference_To_v1beta2_Metal3ObjectRef keeps the name and
// namespace of a reference, the only parts the provider ever read.
func Convert_v1_ObjectReference_To_v1beta2_Metal3ObjectRef(in *corev1.ObjectReference, out *infrav1.Metal3ObjectRef, _ apimachineryconversion.Scope) error {
	out.Name = in.Name
	out.Namespace = in.Namespace
	return nil
}

// Convert_v1beta2_Metal3ObjectRef_To_v1_ObjectReference converts back.
func Convert_v1beta2_Metal3ObjectRef_To_v1_ObjectReference(in *infrav1.Metal3ObjectRef, out *corev1.ObjectReference, _ apimachineryconversion.Scope) error {
	out.Name = in.Name
	out.Namespace = in.Namespace
	return nil
}
