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

package webhooks

import (
	"context"
	"net"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Metal3DataTemplate validates Metal3DataTemplates.
type Metal3DataTemplate struct{}

// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1beta2-metal3datatemplate,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=metal3datatemplates,versions=v1beta2,name=validation.metal3datatemplate.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// SetupWebhookWithManager registers the webhook with the manager's webhook server.
func (w *Metal3DataTemplate) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.Metal3DataTemplate{}).
		WithValidator(w).
		Complete()
}

// clusterNameDeprecated is the warning for a template setting
// spec.clusterName, the one upstream CAPM3 v1.14 gives. Requests in v1beta1,
// whose schema still requires the field, reach this webhook converted and
// draw it as well.
const clusterNameDeprecated = "spec.clusterName is deprecated and will be removed in a future release. It is no longer used by the controllers."

// clusterNameWarnings warns about spec.clusterName when it is set: the
// template is bound to no Cluster whatever it says (see
// datatemplate.Allocation).
func clusterNameWarnings(t *infrav1.Metal3DataTemplate) admission.Warnings {
	if t.Spec.ClusterName == "" {
		return nil
	}
	return admission.Warnings{clusterNameDeprecated}
}

// ValidateCreate validates a new template so that rendering cannot fail on
// something visible in the template alone.
func (*Metal3DataTemplate) ValidateCreate(_ context.Context, t *infrav1.Metal3DataTemplate) (admission.Warnings, error) {
	return clusterNameWarnings(t), toAPIError(groupKind("Metal3DataTemplate"), t.Name, validateDataTemplateSpec(&t.Spec, field.NewPath("spec")))
}

// ValidateUpdate keeps what was rendered into existing Metal3Data true to the
// template: metaData and networkData are immutable. A new revision is a new
// template whose templateReference takes the claims over. clusterName, which
// nothing reads, may change or be cleared, as upstream allows.
func (*Metal3DataTemplate) ValidateUpdate(_ context.Context, oldTemplate, newTemplate *infrav1.Metal3DataTemplate) (admission.Warnings, error) {
	path := field.NewPath("spec")
	errs := validateDataTemplateSpec(&newTemplate.Spec, path)
	if !equality.Semantic.DeepEqual(oldTemplate.Spec.MetaData, newTemplate.Spec.MetaData) {
		errs = append(errs, field.Forbidden(path.Child("metaData"), "is immutable; create a new template with templateReference set to this one's"))
	}
	if !equality.Semantic.DeepEqual(oldTemplate.Spec.NetworkData, newTemplate.Spec.NetworkData) {
		errs = append(errs, field.Forbidden(path.Child("networkData"), "is immutable; create a new template with templateReference set to this one's"))
	}
	return clusterNameWarnings(newTemplate), toAPIError(groupKind("Metal3DataTemplate"), newTemplate.Name, errs)
}

// ValidateDelete allows deletion; the controller's finalizer keeps the
// template while Metal3Data rendered from it exist.
func (*Metal3DataTemplate) ValidateDelete(context.Context, *infrav1.Metal3DataTemplate) (admission.Warnings, error) {
	return nil, nil
}

func validateDataTemplateSpec(spec *infrav1.Metal3DataTemplateSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.MetaData != nil {
		errs = append(errs, validateMetaDataTemplate(spec.MetaData, path.Child("metaData"))...)
	}
	if spec.NetworkData != nil {
		errs = append(errs, validateNetworkDataTemplate(spec.NetworkData, path.Child("networkData"))...)
	}
	return errs
}

// metaDataKeys detects two entries writing the same metadata key, which would
// make one of them silently lose.
type metaDataKeys map[string]*field.Path

func (k metaDataKeys) add(key string, path *field.Path) field.ErrorList {
	if key == "" {
		return field.ErrorList{field.Required(path, "a metadata key is required")}
	}
	if first, ok := k[key]; ok {
		return field.ErrorList{field.Duplicate(path, key+" (also set by "+first.String()+")")}
	}
	k[key] = path
	return nil
}

func validateMetaDataTemplate(md *infrav1.MetaData, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	keys := metaDataKeys{}
	for i, s := range md.Strings {
		errs = append(errs, keys.add(s.Key, path.Child("strings").Index(i).Child("key"))...)
	}
	for i, o := range md.ObjectNames {
		errs = append(errs, keys.add(o.Key, path.Child("objectNames").Index(i).Child("key"))...)
	}
	for i, idx := range md.Indexes {
		p := path.Child("indexes").Index(i)
		errs = append(errs, keys.add(idx.Key, p.Child("key"))...)
		if idx.Step == 0 {
			// Step 0 would give every machine the same value.
			errs = append(errs, field.Invalid(p.Child("step"), idx.Step, "must not be 0: every machine would get the same value"))
		}
	}
	for i, n := range md.Namespaces {
		errs = append(errs, keys.add(n.Key, path.Child("namespaces").Index(i).Child("key"))...)
	}
	// A slice, not a map: the order of the lists decides which of two
	// entries with the same key is reported, and it must not vary.
	for _, list := range []struct {
		name  string
		pools []infrav1.FromPool
	}{
		{"ipAddressesFromPool", md.IPAddressesFromPool}, {"prefixesFromPool", md.PrefixesFromPool},
		{"gatewaysFromPool", md.GatewaysFromPool}, {"dnsServersFromPool", md.DNSServersFromPool},
	} {
		for i, pool := range list.pools {
			p := path.Child(list.name).Index(i)
			errs = append(errs, keys.add(pool.Key, p.Child("key"))...)
			if pool.Name == "" {
				errs = append(errs, field.Required(p.Child("name"), "name of the IP pool is required"))
			}
			if pool.Kind == "" {
				errs = append(errs, field.Required(p.Child("kind"), "kind of the IP pool is required"))
			}
			if pool.APIGroup == "" {
				errs = append(errs, field.Required(p.Child("apiGroup"), "API group of the IP pool is required (ipam.metal3.io, or a CAPI IPAM provider's)"))
			}
		}
	}
	for i, h := range md.FromHostInterfaces {
		p := path.Child("fromHostInterfaces").Index(i)
		errs = append(errs, keys.add(h.Key, p.Child("key"))...)
		if (h.Interface == "") == !ptr.Deref(h.FromBootMAC, false) {
			errs = append(errs, field.Invalid(p, h.Interface, "set exactly one of interface and fromBootMAC"))
		}
	}
	for i, l := range md.FromLabels {
		p := path.Child("fromLabels").Index(i)
		errs = append(errs, keys.add(l.Key, p.Child("key"))...)
		if l.Label == "" {
			errs = append(errs, field.Required(p.Child("label"), "the label to copy is required"))
		}
	}
	for i, a := range md.FromAnnotations {
		p := path.Child("fromAnnotations").Index(i)
		errs = append(errs, keys.add(a.Key, p.Child("key"))...)
		if a.Annotation == "" {
			errs = append(errs, field.Required(p.Child("annotation"), "the annotation to copy is required"))
		}
	}
	return errs
}

func validateNetworkDataTemplate(nd *infrav1.NetworkData, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	linkIDs := map[string]bool{}
	addLink := func(id string, p *field.Path) {
		if linkIDs[id] {
			errs = append(errs, field.Duplicate(p, id))
		}
		linkIDs[id] = true
	}
	if links := nd.Links; links != nil {
		lp := path.Child("links")
		for i, e := range links.Ethernets {
			p := lp.Child("ethernets").Index(i)
			addLink(e.ID, p.Child("id"))
			errs = append(errs, validateMACSource(e.MACAddress, p.Child("macAddress"))...)
		}
		for i, b := range links.Bonds {
			p := lp.Child("bonds").Index(i)
			addLink(b.ID, p.Child("id"))
			errs = append(errs, validateMACSource(b.MACAddress, p.Child("macAddress"))...)
		}
		for i, v := range links.Vlans {
			p := lp.Child("vlans").Index(i)
			addLink(v.ID, p.Child("id"))
			errs = append(errs, validateMACSource(v.MACAddress, p.Child("macAddress"))...)
		}
		// Members and parents are checked once every link ID is known, so
		// the order of the lists does not matter.
		for i, b := range links.Bonds {
			for j, member := range b.BondLinks {
				if !linkIDs[member] || member == b.ID {
					errs = append(errs, field.NotFound(lp.Child("bonds").Index(i).Child("bondLinks").Index(j), member))
				}
			}
		}
		for i, v := range links.Vlans {
			if !linkIDs[v.VlanLink] || v.VlanLink == v.ID {
				errs = append(errs, field.NotFound(lp.Child("vlans").Index(i).Child("vlanLink"), v.VlanLink))
			}
		}
	}
	if nets := nd.Networks; nets != nil {
		errs = append(errs, validateNetworks(nets, linkIDs, path.Child("networks"))...)
	}
	return errs
}

func validateNetworks(nets *infrav1.NetworkDataNetwork, linkIDs map[string]bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	networkIDs := map[string]bool{}
	checkNetwork := func(id, link string, p *field.Path) {
		if networkIDs[id] {
			errs = append(errs, field.Duplicate(p.Child("id"), id))
		}
		networkIDs[id] = true
		if !linkIDs[link] {
			errs = append(errs, field.NotFound(p.Child("link"), link))
		}
	}
	for i, n := range nets.IPv4 {
		p := path.Child("ipv4").Index(i)
		checkNetwork(n.ID, n.Link, p)
		errs = append(errs, atLeastOne(p, "an IPv4 address source",
			source{"ipAddressFromIPPool", n.IPAddressFromIPPool != ""},
			source{"fromPoolRef", n.FromPoolRef != (infrav1.IPPoolReference{})},
			source{"fromPoolAnnotation", n.FromPoolAnnotation != (infrav1.FromPoolAnnotation{})})...)
		errs = append(errs, validatePoolRef(n.FromPoolRef, p.Child("fromPoolRef"))...)
		for j := range n.Routes {
			errs = append(errs, validateIPv4Route(&n.Routes[j], p.Child("routes").Index(j))...)
		}
	}
	for i, n := range nets.IPv4DHCP {
		p := path.Child("ipv4DHCP").Index(i)
		checkNetwork(n.ID, n.Link, p)
		for j := range n.Routes {
			errs = append(errs, validateIPv4Route(&n.Routes[j], p.Child("routes").Index(j))...)
		}
	}
	for i, n := range nets.IPv6 {
		p := path.Child("ipv6").Index(i)
		checkNetwork(n.ID, n.Link, p)
		errs = append(errs, atLeastOne(p, "an IPv6 address source",
			source{"ipAddressFromIPPool", n.IPAddressFromIPPool != ""},
			source{"fromPoolRef", n.FromPoolRef != (infrav1.IPPoolReference{})},
			source{"fromPoolAnnotation", n.FromPoolAnnotation != (infrav1.FromPoolAnnotation{})})...)
		errs = append(errs, validatePoolRef(n.FromPoolRef, p.Child("fromPoolRef"))...)
		for j := range n.Routes {
			errs = append(errs, validateIPv6Route(&n.Routes[j], p.Child("routes").Index(j))...)
		}
	}
	// A slice, not a map, so that which of two networks with the same id is
	// reported does not vary.
	for _, list := range []struct {
		name     string
		networks []infrav1.NetworkDataIPv6DHCP
	}{{"ipv6DHCP", nets.IPv6DHCP}, {"ipv6SLAAC", nets.IPv6SLAAC}} {
		for i, n := range list.networks {
			p := path.Child(list.name).Index(i)
			checkNetwork(n.ID, n.Link, p)
			for j := range n.Routes {
				errs = append(errs, validateIPv6Route(&n.Routes[j], p.Child("routes").Index(j))...)
			}
		}
	}
	return errs
}

func validateIPv4Route(r *infrav1.NetworkDataRoutev4, path *field.Path) field.ErrorList {
	g := r.Gateway
	return gatewaySources(path.Child("gateway"), g.String != nil, g.FromIPPool, g.FromPoolRef, g.FromPoolAnnotation)
}

func validateIPv6Route(r *infrav1.NetworkDataRoutev6, path *field.Path) field.ErrorList {
	g := r.Gateway
	return gatewaySources(path.Child("gateway"), g.String != nil, g.FromIPPool, g.FromPoolRef, g.FromPoolAnnotation)
}

// gatewaySources requires a route's gateway to come from somewhere; the
// pool fields are values, set when not empty.
func gatewaySources(path *field.Path, hasString bool, fromIPPool string, ref infrav1.IPPoolReference, annotation infrav1.FromPoolAnnotation) field.ErrorList {
	return atLeastOne(path, "a gateway",
		source{"string", hasString},
		source{"fromIPPool", fromIPPool != ""},
		source{"fromPoolRef", ref != (infrav1.IPPoolReference{})},
		source{"fromPoolAnnotation", annotation != (infrav1.FromPoolAnnotation{})})
}

// validatePoolRef checks a pool reference that is set (not empty).
func validatePoolRef(ref infrav1.IPPoolReference, path *field.Path) field.ErrorList {
	if ref == (infrav1.IPPoolReference{}) {
		return nil
	}
	var errs field.ErrorList
	if ref.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "name of the IP pool is required"))
	}
	if ref.Kind == "" {
		errs = append(errs, field.Required(path.Child("kind"), "kind of the IP pool is required"))
	}
	return errs
}

// validateMACSource requires exactly one source of a link's MAC address.
// The sources are values, set when not empty; no macAddress sets none.
func validateMACSource(macAddress *infrav1.NetworkLinkEthernetMac, path *field.Path) field.ErrorList {
	mac := ptr.Deref(macAddress, infrav1.NetworkLinkEthernetMac{})
	errs := exactlyOne(path, "a MAC address source",
		source{"string", mac.String != ""},
		source{"fromHostInterface", mac.FromHostInterface != ""},
		source{"fromAnnotation", mac.FromAnnotation != (infrav1.NetworkLinkEthernetMacFromAnnotation{})})
	if mac.String != "" {
		if _, err := net.ParseMAC(mac.String); err != nil {
			errs = append(errs, field.Invalid(path.Child("string"), mac.String, "must be a MAC address"))
		}
	}
	return errs
}

// source is one of several ways to set a value.
type source struct {
	field string
	set   bool
}

// atLeastOne reports an error unless one of the sources is set. Several may
// be: upstream manifests combine them, and rendering picks the first set of
// fromPoolAnnotation, fromPoolRef and the pool name (or string, for gateways).
func atLeastOne(path *field.Path, what string, sources ...source) field.ErrorList {
	for _, s := range sources {
		if s.set {
			return nil
		}
	}
	return exactlyOne(path, what, sources...)
}

// exactlyOne reports an error unless exactly one of the sources is set.
func exactlyOne(path *field.Path, what string, sources ...source) field.ErrorList {
	var set, all []string
	for _, s := range sources {
		all = append(all, s.field)
		if s.set {
			set = append(set, s.field)
		}
	}
	switch len(set) {
	case 1:
		return nil
	case 0:
		return field.ErrorList{field.Required(path, what+" is required: set one of "+joinFields(all))}
	default:
		return field.ErrorList{field.Forbidden(path, joinFields(set)+" are mutually exclusive: set only one")}
	}
}

func joinFields(fields []string) string {
	out := ""
	for i, f := range fields {
		if i > 0 {
			out += ", "
		}
		out += f
	}
	return out
}
