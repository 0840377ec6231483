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

// The metadata part of a Metal3DataTemplate.

// MetaDataFromIPPool puts a value taken from the address allocated to the
// machine from an IP pool under a metadata key.
type MetaDataFromIPPool struct {
	// key under which the value is written in the metadata.
	Key string `json:"key"`

	// apiGroup of the pool kind.
	APIGroup string `json:"apiGroup"`

	// kind of the pool, e.g. IPPool.
	Kind string `json:"kind"`

	// name of the pool, in the namespace of the template.
	Name string `json:"name"`
}

// MetaDataString puts a fixed string under a metadata key.
type MetaDataString struct {
	// key under which the value is written in the metadata.
	Key string `json:"key"`

	// value written as is.
	Value string `json:"value"`
}

// MetaDataObjectName puts the name of one of the machine's objects under a
// metadata key.
type MetaDataObjectName struct {
	// key under which the name is written in the metadata.
	Key string `json:"key"`

	// object whose name is written.
	Object DataSourceObject `json:"object"`
}

// MetaDataIndex puts a value derived from the machine's index in the template
// under a metadata key: prefix + (offset + index*step) + suffix. Useful to
// number hosts, e.g. "node-3".
type MetaDataIndex struct {
	// key under which the value is written in the metadata.
	Key string `json:"key"`

	// offset added to the scaled index.
	// +optional
	Offset int `json:"offset,omitempty"`

	// step multiplies the index before the offset is added.
	// +kubebuilder:default=1
	// +optional
	Step int `json:"step,omitempty"`

	// prefix written before the number.
	// +optional
	Prefix string `json:"prefix,omitempty"`

	// suffix written after the number.
	// +optional
	Suffix string `json:"suffix,omitempty"`
}

// MetaDataNamespace puts the namespace of the machine under a metadata key.
type MetaDataNamespace struct {
	// key under which the namespace is written in the metadata.
	Key string `json:"key"`
}

// MetaDataFromHostInterface puts the MAC address of one of the
// BareMetalHost's network interfaces under a metadata key.
type MetaDataFromHostInterface struct {
	// key under which the MAC address is written in the metadata.
	Key string `json:"key"`

	// interface is the name of the host interface, as found by inspection.
	// +optional
	Interface string `json:"interface,omitempty"`

	// fromBootMAC, when true, takes the MAC address the host boots from
	// instead of naming an interface.
	// +optional
	FromBootMAC bool `json:"fromBootMAC,omitempty"`
}

// MetaDataFromLabel puts the value of a label of one of the machine's objects
// under a metadata key.
type MetaDataFromLabel struct {
	// key under which the value is written in the metadata.
	Key string `json:"key"`

	// object whose label is read.
	Object DataSourceObject `json:"object"`

	// label is the key of the label to read.
	Label string `json:"label"`
}

// MetaDataFromAnnotation puts the value of an annotation of one of the
// machine's objects under a metadata key.
type MetaDataFromAnnotation struct {
	// key under which the value is written in the metadata.
	Key string `json:"key"`

	// object whose annotation is read.
	Object DataSourceObject `json:"object"`

	// annotation is the key of the annotation to read.
	Annotation string `json:"annotation"`
}

// MetaData describes the metadata rendered for each machine: every entry
// writes one key. Metadata is what cloud-init and similar tools read as
// instance metadata (hostname, local addresses, ...).
type MetaData struct {
	// strings writes fixed values.
	// +optional
	Strings []MetaDataString `json:"strings,omitempty"`

	// objectNames writes the names of the machine's objects.
	// +optional
	ObjectNames []MetaDataObjectName `json:"objectNames,omitempty"`

	// indexes writes values derived from the machine's index.
	// +optional
	Indexes []MetaDataIndex `json:"indexes,omitempty"`

	// namespaces writes the machine's namespace.
	// +optional
	Namespaces []MetaDataNamespace `json:"namespaces,omitempty"`

	// ipAddressesFromIPPool writes the address allocated from a pool.
	// +optional
	IPAddressesFromIPPool []MetaDataFromIPPool `json:"ipAddressesFromIPPool,omitempty"`

	// prefixesFromIPPool writes the prefix length of the address allocated
	// from a pool.
	// +optional
	PrefixesFromIPPool []MetaDataFromIPPool `json:"prefixesFromIPPool,omitempty"`

	// gatewaysFromIPPool writes the gateway of the address allocated from a
	// pool.
	// +optional
	GatewaysFromIPPool []MetaDataFromIPPool `json:"gatewaysFromIPPool,omitempty"`

	// dnsServersFromIPPool writes the DNS servers of the address allocated
	// from a pool.
	// +optional
	DNSServersFromIPPool []MetaDataFromIPPool `json:"dnsServersFromIPPool,omitempty"`

	// fromHostInterfaces writes MAC addresses of the host's interfaces.
	// +optional
	FromHostInterfaces []MetaDataFromHostInterface `json:"fromHostInterfaces,omitempty"`

	// fromLabels writes label values of the machine's objects.
	// +optional
	FromLabels []MetaDataFromLabel `json:"fromLabels,omitempty"`

	// fromAnnotations writes annotation values of the machine's objects.
	// +optional
	FromAnnotations []MetaDataFromAnnotation `json:"fromAnnotations,omitempty"`
}
