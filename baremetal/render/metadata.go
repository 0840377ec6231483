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
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// ProviderIDKey is the metadata key holding the machine's provider ID
// without its metal3:// scheme.
const ProviderIDKey = "providerid"

// metaData accumulates the rendered keys and the errors of one rendering, so
// that one pass reports every broken entry instead of the first.
type metaData struct {
	in     *Input
	values map[string]any
	// keyPaths remembers which entry wrote each key, to name both when two
	// entries write the same key.
	keyPaths map[string]*field.Path
	errs     field.ErrorList
}

// set writes key, or records an error: the first of several entries writing
// the same key would silently lose, depending only on the order the lists
// are rendered in, so a duplicate is the template's mistake.
func (m *metaData) set(path *field.Path, key string, value any) {
	keyPath := path.Child("key")
	if key == "" {
		m.errs = append(m.errs, field.Required(keyPath, "metadata key"))
		return
	}
	if first, ok := m.keyPaths[key]; ok {
		m.errs = append(m.errs, &field.Error{Type: field.ErrorTypeDuplicate, Field: keyPath.String(),
			BadValue: key, Detail: "already written by " + first.String()})
		return
	}
	m.keyPaths[key] = keyPath
	m.values[key] = value
}

// fail records an error unless it is nil; it reports whether it was one.
func (m *metaData) fail(ferr *field.Error) bool {
	if ferr == nil {
		return false
	}
	m.errs = append(m.errs, ferr)
	return true
}

// objectName returns the name of one of the machine's objects.
func (m *metaData) objectName(path *field.Path, obj infrav1.DataSourceObject) (string, *field.Error) {
	meta, ferr := m.in.objectMeta(path.Child("object"), obj)
	if ferr != nil {
		return "", ferr
	}
	return meta.Name, nil
}

// MetaData renders the template's metaData as a YAML mapping with one key
// per entry, keys sorted. It returns nil when the template has no metaData,
// since then no metadata Secret is to be written.
func MetaData(in Input) ([]byte, error) {
	if err := checkTemplate(&in); err != nil {
		return nil, err
	}
	md := in.Template.MetaData
	if md == nil {
		return nil, nil
	}
	m := &metaData{in: &in, values: map[string]any{}, keyPaths: map[string]*field.Path{}}
	path := templatePath.Child("metaData")

	for i, e := range md.Strings {
		m.set(path.Child("strings").Index(i), e.Key, e.Value)
	}
	for i, e := range md.ObjectNames {
		p := path.Child("objectNames").Index(i)
		name, ferr := m.objectName(p, e.Object)
		if !m.fail(ferr) {
			m.set(p, e.Key, name)
		}
	}
	for i, e := range md.Indexes {
		// The CRD defaults step to 1 and the webhook rejects 0; a 0 that
		// slips through (an object stored before the default existed)
		// still means 1, or every machine would get the same number.
		step := e.Step
		if step == 0 {
			step = 1
		}
		n := int(ptr.Deref(e.Offset, 0)) + in.Index*int(step)
		m.set(path.Child("indexes").Index(i), e.Key, e.Prefix+strconv.Itoa(n)+e.Suffix)
	}
	for i, e := range md.Namespaces {
		m.set(path.Child("namespaces").Index(i), e.Key, in.Namespace)
	}
	m.pools(path, md)
	for i, e := range md.FromHostInterfaces {
		p := path.Child("fromHostInterfaces").Index(i)
		var mac string
		var ferr *field.Error
		// fromBootMAC wins over interface: it is the explicit switch, and
		// the boot interface is the one users most often mean.
		if ptr.Deref(e.FromBootMAC, false) {
			mac, ferr = in.bootMAC(p.Child("fromBootMAC"))
		} else {
			mac, ferr = in.hostMAC(p.Child("interface"), e.Interface)
		}
		if !m.fail(ferr) {
			m.set(p, e.Key, mac)
		}
	}
	for i, e := range md.FromLabels {
		p := path.Child("fromLabels").Index(i)
		v, ferr := in.label(p, e.Object, e.Label)
		if !m.fail(ferr) {
			m.set(p, e.Key, v)
		}
	}
	for i, e := range md.FromAnnotations {
		p := path.Child("fromAnnotations").Index(i)
		v, ferr := in.annotation(p, e.Object, e.Annotation)
		if !m.fail(ferr) {
			m.set(p, e.Key, v)
		}
	}
	// providerid, as upstream CAPM3 writes it: what a kubeadm template's
	// "provider-id: metal3://{{ ds.meta_data.providerid }}" needs for the
	// kubelet to register with the machine's provider ID. The template's
	// own entry of that key, if any, wins.
	if _, set := m.values[ProviderIDKey]; !set && in.Host != nil && in.Metal3Machine != nil {
		m.values[ProviderIDKey] = in.Host.Namespace + "/" + in.Host.Name + "/" + in.Metal3Machine.Name
	}

	if len(m.errs) > 0 {
		return nil, m.errs.ToAggregate()
	}
	out, err := yaml.Marshal(m.values)
	if err != nil {
		return nil, fmt.Errorf("marshal metadata: %w", err)
	}
	return out, nil
}

// pools renders the entries that read the address allocated from a pool.
func (m *metaData) pools(path *field.Path, md *infrav1.MetaData) {
	for _, list := range metaDataPoolLists(md) {
		for i, e := range list.entries {
			p := path.Child(list.name).Index(i)
			ref, ferr := metaDataPool(p, e)
			if m.fail(ferr) {
				continue
			}
			addr, ferr := m.in.address(p.Child("name"), ref)
			if m.fail(ferr) {
				continue
			}
			switch list.name {
			case "ipAddressesFromPool":
				m.set(p, e.Key, addr.Address)
			case "prefixesFromPool":
				m.set(p, e.Key, strconv.Itoa(addr.Prefix))
			case "gatewaysFromPool":
				if addr.Gateway == "" {
					m.fail(field.Invalid(p.Child("name"), e.Name,
						fmt.Sprintf("pool %s gave no gateway", ref)))
					continue
				}
				m.set(p, e.Key, addr.Gateway)
			case "dnsServersFromPool":
				// A list, not a joined string: cloud-init and templates
				// iterate it.
				m.set(p, e.Key, append([]string{}, addr.DNSServers...))
			}
		}
	}
}
