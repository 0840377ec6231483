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

package v1beta2

// The metadata part of a Metal3DataTemplate.

// MetaDataString puts a fixed string under a metadata key.
type MetaDataString struct {
	// key under which the value is written in the metadata.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Key string `json:"key,omitempty"`

	// value written as is.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Value string `json:"value,omitempty"`
}

// MetaDataObjectName puts the name of one of the machine's objects under a
// metadata key.
type MetaDataObjectName struct {
	// key under which the name is written in the metadata.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Key string `json:"key,omitempty"`

	// object whose name is written.
	// +required
	// +kubebuilder:validation:Enum=machine;metal3machine;baremetalhost
	Object string `json:"object,omitempty"`
}

// MetaDataIndex puts a value derived from the machine's index in the template
// under a metadata key: prefix + (offset + index*step) + suffix. Useful to
// number hosts, e.g. "node-3".
type MetaDataIndex struct {
	// key under which the value is written in the metadata.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Key string `json:"key,omitempty"`

	// offset added to the scaled index. Unset means 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Offset *int32 `json:"offset,omitempty"`

	// step multiplies the index before the offset is added.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +optional
	Step int32 `json:"step,omitempty"`

	// prefix written before the number.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Prefix string `json:"prefix,omitempty"`

	// suffix written after the number.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Suffix string `json:"suffix,omitempty"`
}

// MetaDataNamespace puts the namespace of the machine under a metadata key.
type MetaDataNamespace struct {
	// key under which the namespace is written in the metadata.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Key string `json:"key,omitempty"`
}

// MetaDataHostInterface puts the MAC address of one of the BareMetalHost's
// network interfaces under a metadata key.
type MetaDataHostInterface struct {
	// key under which the MAC address is written in the metadata.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Key string `json:"key,omitempty"`

	// interface is the name of the host interface, as found by inspection.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Interface string `json:"interface,omitempty"`

	// fromBootMAC, when true, takes the MAC address the host boots from
	// instead of naming an interface.
	// +optional
	FromBootMAC *bool `json:"fromBootMAC,omitempty"`
}

// MetaDataFromLabel puts the value of a label of one of the machine's objects
// under a metadata key. A missing label is written as an empty string.
type MetaDataFromLabel struct {
	// key under which the value is written in the metadata.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Key string `json:"key,omitempty"`

	// object whose label is read.
	// +required
	// +kubebuilder:validation:Enum=machine;metal3machine;baremetalhost
	Object string `json:"object,omitempty"`

	// label is the key of the label to read.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Label string `json:"label,omitempty"`
}

// MetaDataFromAnnotation puts the value of an annotation of one of the
// machine's objects under a metadata key. A missing annotation is written as
// an empty string.
type MetaDataFromAnnotation struct {
	// key under which the value is written in the metadata.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Key string `json:"key,omitempty"`

	// object whose annotation is read.
	// +required
	// +kubebuilder:validation:Enum=machine;metal3machine;baremetalhost
	Object string `json:"object,omitempty"`

	// annotation is the key of the annotation to read.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Annotation string `json:"annotation,omitempty"`
}

// MetaData describes the metadata rendered for each machine: every entry
// writes one key. Metadata is what cloud-init and similar tools read as
// instance metadata (hostname, local addresses, ...). Within each list, keys
// are unique.
type MetaData struct {
	// strings writes fixed values.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	Strings []MetaDataString `json:"strings,omitempty"`

	// objectNames writes the names of the machine's objects.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	ObjectNames []MetaDataObjectName `json:"objectNames,omitempty"`

	// indexes writes values derived from the machine's index.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	Indexes []MetaDataIndex `json:"indexes,omitempty"`

	// namespaces writes the machine's namespace.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	Namespaces []MetaDataNamespace `json:"namespaces,omitempty"`

	// ipAddressesFromPool writes the address allocated from a pool.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	IPAddressesFromPool []FromPool `json:"ipAddressesFromPool,omitempty"`

	// prefixesFromPool writes the prefix length of the address allocated
	// from a pool.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	PrefixesFromPool []FromPool `json:"prefixesFromPool,omitempty"`

	// gatewaysFromPool writes the gateway of the address allocated from a
	// pool.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	GatewaysFromPool []FromPool `json:"gatewaysFromPool,omitempty"`

	// dnsServersFromPool writes the DNS servers of the address allocated
	// from a pool.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	DNSServersFromPool []FromPool `json:"dnsServersFromPool,omitempty"`

	// fromHostInterfaces writes MAC addresses of the host's interfaces.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	FromHostInterfaces []MetaDataHostInterface `json:"fromHostInterfaces,omitempty"`

	// fromLabels writes label values of the machine's objects.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	FromLabels []MetaDataFromLabel `json:"fromLabels,omitempty"`

	// fromAnnotations writes annotation values of the machine's objects.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	FromAnnotations []MetaDataFromAnnotation `json:"fromAnnotations,omitempty"`
}
