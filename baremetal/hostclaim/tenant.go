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

package hostclaim

import (
	"cmp"
	"net/url"
	"regexp"
	"slices"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// redacted replaces what a tenant must not learn of a host's BMC.
const redacted = "<BMC>"

// SecretCopyName names the copy of a claim's Secret for purpose next to its
// host: "<claim name>-<purpose>-<10 hex of sha256(claim UID)>". The hash
// tells apart same-named claims of different tenants sharing a host
// namespace (and a claim from an earlier one of the same name); the
// readable part helps people. The name is cut to stay a valid name.
func SecretCopyName(claimName string, claimUID types.UID, purpose string) string {
	return pool.HashedName(claimName, purpose, string(claimUID))
}

// bmcSecrets are the strings of bmc a tenant must not see: the address,
// its host and host:port (error messages often quote only those), and the
// credentials Secret's name. Longest first, so a longer one is replaced
// whole before a part of it is. Very short strings are left out: replacing
// every "a" would garble a message without hiding anything.
func bmcSecrets(bmc bmov1alpha1.BMCDetails) []string {
	var secrets []string
	add := func(s string) {
		if len(s) >= 3 && !slices.Contains(secrets, s) {
			secrets = append(secrets, s)
		}
	}
	add(bmc.Address)
	add(bmc.CredentialsName)
	if u, err := url.Parse(bmc.Address); err == nil && u.Host != "" {
		add(u.Host)
		add(u.Hostname())
	} else if host, _, found := strings.Cut(bmc.Address, "/"); found {
		add(host) // "192.168.1.1:623/..." without a scheme
	}
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return secrets
}

// Redact replaces in message the BMC address (whole, its host:port and its
// host) and the credentials Secret's name of bmc by "<BMC>", whatever their
// case (host names are case-insensitive, and drivers and Ironic quote them
// as they please): the host's error messages reach the tenant in the
// Healthy condition.
func Redact(message string, bmc bmov1alpha1.BMCDetails) string {
	for _, s := range bmcSecrets(bmc) {
		message = regexp.MustCompile(`(?i)`+regexp.QuoteMeta(s)).ReplaceAllLiteralString(message, redacted)
	}
	return message
}

// Reveals reports whether value quotes something of bmc Redact would hide,
// in any case.
func Reveals(value string, bmc bmov1alpha1.BMCDetails) bool {
	lower := strings.ToLower(value)
	for _, s := range bmcSecrets(bmc) {
		if strings.Contains(lower, strings.ToLower(s)) {
			return true
		}
	}
	return false
}

// IsBMOKey reports whether an annotation or label key belongs to the Bare
// Metal Operator or its users: its prefix (the part before "/") is
// metal3.io or ends in ".metal3.io". BMO's status annotation, for one,
// holds the whole host, BMC included.
func IsBMOKey(key string) bool {
	prefix, _, found := strings.Cut(key, "/")
	if !found {
		return false
	}
	return prefix == "metal3.io" || strings.HasSuffix(prefix, ".metal3.io")
}

// lastAppliedAnnotation is where kubectl apply keeps the whole object as
// the pool admin wrote it, BMC included.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// TenantLabels are the labels of host a tenant reads on its HardwareData
// copy: all of them, except one whose value quotes the BMC (a label
// naming the credentials Secret, say).
func TenantLabels(host *bmov1alpha1.BareMetalHost) map[string]string {
	return tenantView(host.Labels, host.Spec.BMC, false)
}

// TenantAnnotations are the annotations of host a tenant reads on its
// HardwareData copy: the host's except BMO's own (IsBMOKey), kubectl's
// last applied configuration, and any whose value quotes the BMC.
func TenantAnnotations(host *bmov1alpha1.BareMetalHost) map[string]string {
	return tenantView(host.Annotations, host.Spec.BMC, true)
}

func tenantView(in map[string]string, bmc bmov1alpha1.BMCDetails, annotations bool) map[string]string {
	var out map[string]string
	for key, value := range in {
		if annotations && (IsBMOKey(key) || key == lastAppliedAnnotation) {
			continue
		}
		if Reveals(value, bmc) || Reveals(key, bmc) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[key] = value
	}
	return out
}
