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

// Value sources shared by the metadata and network data of a template.

// IPv4Address is an IPv4 address in dotted-decimal notation, e.g. 192.168.0.1.
// +kubebuilder:validation:Pattern=`^((([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])\.){3}([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5]))$`
type IPv4Address string

// IPv6Address is an IPv6 address in colon-hexadecimal notation, e.g. 2001:db8::1.
// +kubebuilder:validation:Pattern=`^(([0-9a-fA-F]{1,4}:){7,7}[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,7}:|([0-9a-fA-F]{1,4}:){1,6}:[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,5}(:[0-9a-fA-F]{1,4}){1,2}|([0-9a-fA-F]{1,4}:){1,4}(:[0-9a-fA-F]{1,4}){1,3}|([0-9a-fA-F]{1,4}:){1,3}(:[0-9a-fA-F]{1,4}){1,4}|([0-9a-fA-F]{1,4}:){1,2}(:[0-9a-fA-F]{1,4}){1,5}|[0-9a-fA-F]{1,4}:((:[0-9a-fA-F]{1,4}){1,6})|:((:[0-9a-fA-F]{1,4}){1,7}|:))$`
type IPv6Address string

// IPAddress is either an IPv4 or an IPv6 address.
// +kubebuilder:validation:Pattern=`((^((([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])\.){3}([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5]))$)|(^(([0-9a-fA-F]{1,4}:){7,7}[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,7}:|([0-9a-fA-F]{1,4}:){1,6}:[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,5}(:[0-9a-fA-F]{1,4}){1,2}|([0-9a-fA-F]{1,4}:){1,4}(:[0-9a-fA-F]{1,4}){1,3}|([0-9a-fA-F]{1,4}:){1,3}(:[0-9a-fA-F]{1,4}){1,4}|([0-9a-fA-F]{1,4}:){1,2}(:[0-9a-fA-F]{1,4}){1,5}|[0-9a-fA-F]{1,4}:((:[0-9a-fA-F]{1,4}){1,6})|:((:[0-9a-fA-F]{1,4}){1,7}|:))$))`
type IPAddress string

// DataSourceObject names one of the objects that belong to a machine, from
// which a value (a name, a label, an annotation) is read while rendering.
// +kubebuilder:validation:Enum=machine;metal3machine;baremetalhost
type DataSourceObject string

const (
	// DataSourceObjectMachine is the CAPI Machine.
	DataSourceObjectMachine DataSourceObject = "machine"
	// DataSourceObjectMetal3Machine is the Metal3Machine.
	DataSourceObjectMetal3Machine DataSourceObject = "metal3machine"
	// DataSourceObjectBareMetalHost is the BareMetalHost the machine runs on.
	DataSourceObjectBareMetalHost DataSourceObject = "baremetalhost"
)

// AnnotationSource reads a value from an annotation of one of the machine's
// objects. It is used to take a MAC address, or the name of an IP pool, from
// an annotation instead of writing it into the template.
type AnnotationSource struct {
	// object whose annotation is read.
	Object DataSourceObject `json:"object"`

	// annotation is the key of the annotation to read.
	Annotation string `json:"annotation"`
}

// IPPoolReference points at an IP pool in the namespace of the template. Kind
// and apiGroup let it name a pool of any IPAM provider, not only Metal3's
// IPPool.
type IPPoolReference struct {
	// apiGroup of the pool kind. Empty means ipam.metal3.io (the Metal3
	// IP Address Manager): no core kind is an IP pool.
	// +optional
	APIGroup *string `json:"apiGroup,omitempty"`

	// kind of the pool, e.g. IPPool.
	Kind string `json:"kind"`

	// name of the pool.
	Name string `json:"name"`
}
