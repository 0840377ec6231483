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

package hostclaimbinder

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
)

// DefaultImageSchemes are the image URL schemes a claim may use unless the
// pool admin says otherwise: an image is fetched by the host's deploy
// agent (or Ironic) from inside the provisioning network, so file:// would
// make it read a file of the pool's own machines.
var DefaultImageSchemes = []string{"http", "https", "oci"}

// DeployPolicy is what the pool admin lets claims ask their hosts to
// deploy: the images' URL schemes and hosts, and the custom deploy
// methods. A claim is tenant input, passed on to hosts the tenant never
// sees; what the policy refuses never reaches a host.
type DeployPolicy struct {
	// ImageSchemes are the schemes image and checksum URLs may use;
	// empty: DefaultImageSchemes.
	ImageSchemes []string
	// ImageHosts, when set, are the host names (or DNS suffixes) image and
	// checksum URLs must be served from.
	ImageHosts []string
	// CustomDeployMethods, when set, are the only custom deploy methods a
	// claim may ask for.
	CustomDeployMethods []string
}

// check returns why claim may not deploy what it asks for, or nil.
func (p DeployPolicy) check(claim *bmov1alpha1.HostClaim) *syncFailure {
	if image := claim.Spec.Image; image != nil {
		if problem := p.checkURL("spec.image.url", image.URL); problem != "" {
			return &syncFailure{reason: hostclaim.ImageNotAllowedReason, message: problem}
		}
		// A checksum is a digest or the URL of a file of digests.
		if strings.Contains(image.Checksum, "://") {
			if problem := p.checkURL("spec.image.checksum", image.Checksum); problem != "" {
				return &syncFailure{reason: hostclaim.ImageNotAllowedReason, message: problem}
			}
		}
	}
	if deploy := claim.Spec.CustomDeploy; deploy != nil && len(p.CustomDeployMethods) > 0 && !slices.Contains(p.CustomDeployMethods, deploy.Method) {
		return &syncFailure{reason: hostclaim.CustomDeployNotAllowedReason,
			message: fmt.Sprintf("spec.customDeploy.method %q is not one the pool allows (%s)", deploy.Method, strings.Join(p.CustomDeployMethods, ", "))}
	}
	return nil
}

// checkURL returns why the URL at path is refused, or "".
func (p DeployPolicy) checkURL(path, raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return fmt.Sprintf("%s is not a URL", path)
	}
	schemes := p.ImageSchemes
	if len(schemes) == 0 {
		schemes = DefaultImageSchemes
	}
	if !slices.ContainsFunc(schemes, func(s string) bool { return strings.EqualFold(s, u.Scheme) }) {
		return fmt.Sprintf("%s: scheme %q is not one the pool allows (%s)", path, u.Scheme, strings.Join(schemes, ", "))
	}
	if len(p.ImageHosts) > 0 && !underOneOf(u.Hostname(), p.ImageHosts) {
		return fmt.Sprintf("%s: host %q is not one the pool serves images from", path, u.Hostname())
	}
	return ""
}

// underOneOf reports whether host is one of names or under one as a DNS
// suffix, ignoring case.
func underOneOf(host string, names []string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, name := range names {
		name = strings.TrimSuffix(strings.TrimPrefix(strings.ToLower(name), "."), ".")
		if name != "" && (host == name || strings.HasSuffix(host, "."+name)) {
			return true
		}
	}
	return false
}
