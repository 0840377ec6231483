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

// Package render turns a Metal3DataTemplate into the metadata and network
// data of one machine, the two documents the Bare Metal Operator hands to
// cloud-init. It is pure: every object and every allocated IP address is
// passed in an Input, so controllers decide how to fetch them and tests need
// no API server.
//
// # Which pool an entry uses
//
// Several template entries can name their IP pool in more than one way. When
// more than one is set, the first of these wins:
//
//  1. fromPoolAnnotation: the pool name is read from an annotation of the
//     machine's objects; the pool is a Metal3 IPAM IPPool.
//  2. fromPoolRef: apiGroup, kind and name of the pool of any IPAM provider;
//     an empty apiGroup means Metal3 IPAM ("ipam.metal3.io").
//  3. the plain pool name (ipAddressFromIPPool, fromIPPool, dnsFromIPPool):
//     a Metal3 IPAM IPPool.
//  4. for route gateways only, string: a fixed gateway address.
//
// The order goes from the most specific to the most general, so that a
// per-machine annotation can override what the template says for all
// machines, and the plain name, kept for old manifests, comes last.
//
// # Errors
//
// Every error is a field.ErrorList aggregate whose entries name the template
// field that could not be rendered, e.g.
// spec.metaData.fromHostInterfaces[1].interface, because the user has to
// fix either that field or the object it points at.
package render

import (
	"fmt"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Metal3 IPAM's pool group and kind: a pool named only by its name is one of
// these, as it was before other IPAM providers could be used.
const (
	// Metal3IPAMGroup is the API group of Metal3 IPAM's IPPool.
	Metal3IPAMGroup = "ipam.metal3.io"
	// Metal3IPPoolKind is the kind of Metal3 IPAM's pool.
	Metal3IPPoolKind = "IPPool"
)

// PoolRef names an IP pool: Metal3 IPAM (APIGroup "ipam.metal3.io", Kind
// "IPPool") or a CAPI IPAM provider's pool (APIGroup e.g.
// "ipam.cluster.x-k8s.io", Kind e.g. "InClusterIPPool"). It is comparable so
// that it can key Input.Pools. The pool is in the namespace of the
// Metal3Data.
type PoolRef struct {
	// APIGroup, Kind and Name identify the pool object; all three are set
	// in every PoolRef this package returns.
	APIGroup, Kind, Name string
}

// String returns group/Kind/name, the way errors show the pool.
func (p PoolRef) String() string {
	return fmt.Sprintf("%s/%s/%s", p.APIGroup, p.Kind, p.Name)
}

// metal3Pool is the PoolRef of a pool given by plain name.
func metal3Pool(name string) PoolRef {
	return PoolRef{APIGroup: Metal3IPAMGroup, Kind: Metal3IPPoolKind, Name: name}
}

// PoolAddress is what was allocated from a pool for this machine.
type PoolAddress struct {
	// Address is the allocated address, without prefix length.
	Address string
	// Prefix is the prefix length of the pool's network.
	Prefix int
	// Gateway is the pool's gateway; empty when the pool has none.
	Gateway string
	// DNSServers are the pool's DNS servers.
	DNSServers []string
}

// Input is everything rendering reads. The objects may be nil when the
// template does not refer to them; rendering fails on the entry that needs a
// missing one.
type Input struct {
	// Template is the spec of the Metal3DataTemplate to render.
	Template *infrav1.Metal3DataTemplateSpec
	// Index is the Metal3Data's index in the template.
	Index int
	// Namespace is the namespace of the Metal3Data and Metal3Machine.
	Namespace string
	// Machine is the CAPI Machine: objectNames, fromLabels and
	// fromAnnotations entries with object "machine" read it.
	Machine *clusterv1.Machine
	// Metal3Machine is the infrastructure machine ("metal3machine").
	Metal3Machine *infrav1.Metal3Machine
	// Host is the host the machine runs on ("baremetalhost"); MAC
	// addresses come from its inspected NICs and boot MAC.
	Host *Host
	// Pools holds the addresses allocated for this machine, by pool. It
	// must hold every pool PoolFields lists.
	Pools map[PoolRef]PoolAddress
}

// Host is what a template reads of the host a machine runs on, in the
// same terms whichever way the machine reached it (a BareMetalHost, or a
// HostClaim and the binder's copy of its host's hardware). Its labels and
// annotations are those its tenant may see.
type Host struct {
	Namespace, Name     string
	Labels, Annotations map[string]string
	// Hardware is the host's inspected hardware; nil before inspection.
	Hardware *bmov1alpha1.HardwareDetails
	// BootMACAddress is the NIC the host boots from, if known.
	BootMACAddress string
}

// objectMeta returns the metadata of the object an entry reads from. path is
// the entry's object field, named in the error when the object is unknown.
func (in *Input) objectMeta(path *field.Path, obj infrav1.DataSourceObject) (*metav1.ObjectMeta, *field.Error) {
	switch obj {
	case infrav1.DataSourceObjectMachine:
		if in.Machine != nil {
			return &in.Machine.ObjectMeta, nil
		}
	case infrav1.DataSourceObjectMetal3Machine:
		if in.Metal3Machine != nil {
			return &in.Metal3Machine.ObjectMeta, nil
		}
	case infrav1.DataSourceObjectBareMetalHost:
		if in.Host != nil {
			return &metav1.ObjectMeta{Namespace: in.Host.Namespace, Name: in.Host.Name, Labels: in.Host.Labels, Annotations: in.Host.Annotations}, nil
		}
	default:
		return nil, field.NotSupported(path, obj, []infrav1.DataSourceObject{
			infrav1.DataSourceObjectMachine, infrav1.DataSourceObjectMetal3Machine, infrav1.DataSourceObjectBareMetalHost,
		})
	}
	return nil, notFound(path, obj, "the "+obj+" is not known yet")
}

// annotation reads an annotation. path is the entry holding object and
// annotation fields.
func (in *Input) annotation(path *field.Path, obj infrav1.DataSourceObject, key string) (string, *field.Error) {
	return in.metadataValue(path, obj, "annotation", key, func(m *metav1.ObjectMeta) map[string]string { return m.Annotations })
}

// label reads a label. path is the entry holding object and label fields.
func (in *Input) label(path *field.Path, obj infrav1.DataSourceObject, key string) (string, *field.Error) {
	return in.metadataValue(path, obj, "label", key, func(m *metav1.ObjectMeta) map[string]string { return m.Labels })
}

// metadataValue reads key among the values of obj's metadata that of
// picks; kind ("label", "annotation") names the field of path holding key.
func (in *Input) metadataValue(path *field.Path, obj infrav1.DataSourceObject, kind, key string,
	of func(*metav1.ObjectMeta) map[string]string,
) (string, *field.Error) {
	meta, ferr := in.objectMeta(path.Child("object"), obj)
	if ferr != nil {
		return "", ferr
	}
	v, ok := of(meta)[key]
	if !ok {
		return "", notFound(path.Child(kind), key, fmt.Sprintf("%s %q has no such %s", obj, meta.Name, kind))
	}
	return v, nil
}

// hostMAC returns the MAC address of the host interface with the given name,
// as inspection found it. path is the field holding the interface name.
func (in *Input) hostMAC(path *field.Path, name string) (string, *field.Error) {
	if name == "" {
		return "", field.Required(path, "name of a host interface")
	}
	if in.Host == nil {
		return "", notFound(path, name, "the baremetalhost is not known yet")
	}
	hw := in.Host.Hardware
	if hw == nil {
		return "", notFound(path, name,
			fmt.Sprintf("baremetalhost %q has no hardware details yet (not inspected)", in.Host.Name))
	}
	// Dual-stack hosts list an interface once per address, with the same
	// MAC, so the first match is as good as any.
	for _, nic := range hw.NIC {
		if nic.Name == name {
			return nic.MAC, nil
		}
	}
	return "", notFound(path, name, fmt.Sprintf("baremetalhost %q has no such interface", in.Host.Name))
}

// bootMAC returns the MAC address the host boots from.
func (in *Input) bootMAC(path *field.Path) (string, *field.Error) {
	if in.Host == nil {
		return "", field.Invalid(path, true, "the baremetalhost is not known yet")
	}
	if in.Host.BootMACAddress == "" {
		return "", field.Invalid(path, true,
			fmt.Sprintf("baremetalhost %q has no bootMACAddress", in.Host.Name))
	}
	return in.Host.BootMACAddress, nil
}

// address returns what was allocated from a pool. path is the field that
// chose the pool.
func (in *Input) address(path *field.Path, ref PoolRef) (PoolAddress, *field.Error) {
	a, ok := in.Pools[ref]
	if !ok {
		return PoolAddress{}, notFound(path, ref.Name,
			fmt.Sprintf("no address has been allocated from pool %s", ref))
	}
	return a, nil
}

// notFound is field.NotFound with a detail, so that the message says where
// the value was looked for.
func notFound(path *field.Path, value, detail string) *field.Error {
	return &field.Error{Type: field.ErrorTypeNotFound, Field: path.String(), BadValue: value, Detail: detail}
}

// templatePath is the root of every field path in errors: users edit the
// template's spec.
var templatePath = field.NewPath("spec")

// checkTemplate rejects an Input without a template, the one mistake that
// is the caller's rather than the user's.
func checkTemplate(in *Input) error {
	if in.Template == nil {
		return field.ErrorList{field.Required(templatePath, "the Metal3DataTemplate spec")}.ToAggregate()
	}
	return nil
}
