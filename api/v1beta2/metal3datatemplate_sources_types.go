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

import (
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
)

// Value sources shared by the metadata and network data of a template.

// IPv4Address is an IPv4 address in dotted-decimal notation, e.g.
// 192.168.0.1. It is the IP Address Manager's type, which the fields of this
// version use directly; the alias keeps the name of v1beta1.
type IPv4Address = ipamv1.IPAddressv4Str

// IPv6Address is an IPv6 address in colon-hexadecimal notation, e.g.
// 2001:db8::1. It is the IP Address Manager's type, which the fields of this
// version use directly; the alias keeps the name of v1beta1.
type IPv6Address = ipamv1.IPAddressv6Str

// IPAddress is either an IPv4 or an IPv6 address. It is the IP Address
// Manager's type, which the fields of this version use directly; the alias
// keeps the name of v1beta1.
type IPAddress = ipamv1.IPAddressStr

// DataSourceObject names one of the objects that belong to a machine, from
// which a value (a name, a label, an annotation) is read while rendering.
// The fields that hold it are plain strings, limited by an enum marker to
// the values below; the alias keeps the name and constants of v1beta1.
type DataSourceObject = string

const (
	// DataSourceObjectMachine is the CAPI Machine.
	DataSourceObjectMachine DataSourceObject = "machine"
	// DataSourceObjectMetal3Machine is the Metal3Machine.
	DataSourceObjectMetal3Machine DataSourceObject = "metal3machine"
	// DataSourceObjectBareMetalHost is the BareMetalHost the machine runs on.
	DataSourceObjectBareMetalHost DataSourceObject = "baremetalhost"
)

// FromPool puts a value taken from the address allocated to the machine
// from an IP pool under a metadata key.
type FromPool struct {
	// key under which the value is written in the metadata.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Key string `json:"key,omitempty"`

	// name of the pool, in the namespace of the template.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Name string `json:"name,omitempty"`

	// apiGroup of the pool kind. Empty means ipam.metal3.io (the Metal3 IP
	// Address Manager).
	// +optional
	// +kubebuilder:default=ipam.metal3.io
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	APIGroup string `json:"apiGroup,omitempty"`

	// kind of the pool. Empty means IPPool.
	// +optional
	// +kubebuilder:default=IPPool
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Kind string `json:"kind,omitempty"`
}

// FromPoolAnnotation reads the name of an IP pool from an annotation of one
// of the machine's objects, so that each machine can be given its own pool.
type FromPoolAnnotation struct {
	// object whose annotation is read.
	// +required
	// +kubebuilder:validation:Enum=machine;metal3machine;baremetalhost
	Object string `json:"object,omitempty"`

	// annotation is the key of the annotation to read; its value is the
	// name of the pool.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Annotation string `json:"annotation,omitempty"`
}

// IPPoolReference points at an IP pool in the namespace of the template. Kind
// and apiGroup let it name a pool of any IPAM provider, not only Metal3's
// IPPool.
type IPPoolReference struct {
	// name of the pool: a DNS subdomain (lower case alphanumerics, '-' and
	// '.', starting and ending with an alphanumeric).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name,omitempty"`

	// kind of the pool, e.g. IPPool: alphanumerics and '-', starting with a
	// letter and ending with an alphanumeric. Empty means IPPool.
	// +optional
	// +kubebuilder:default=IPPool
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$`
	Kind string `json:"kind,omitempty"`

	// apiGroup of the pool kind, a fully qualified domain name. Empty means
	// ipam.metal3.io (the Metal3 IP Address Manager): no core kind is an IP
	// pool.
	// +optional
	// +kubebuilder:default=ipam.metal3.io
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	APIGroup string `json:"apiGroup,omitempty"`
}
