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

package hostbinding

import (
	"slices"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// What upstream CAPM3 leaves on the hosts it claimed, which this provider
// takes over when it replaces upstream on a management cluster
// (docs/upgrading-from-capm3.md). Its pause annotation has the same value
// as this provider's (pausedByUs), and its host records (consumerRef
// without UID, the machine's host annotation) are read as this provider's.

// dropUpstreamOwnerReference removes the owner reference upstream CAPM3
// puts on each host it claims (the Metal3Machine, as controller) and
// removes only on release. This provider never sets one: left in place,
// deleting the machine would have the garbage collector delete the
// BareMetalHost itself.
func dropUpstreamOwnerReference(host *bmov1alpha1.BareMetalHost, m3m *infrav1.Metal3Machine) {
	refs := slices.DeleteFunc(slices.Clone(host.OwnerReferences), func(ref metav1.OwnerReference) bool {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		return err == nil && gv.Group == infrav1.GroupVersion.Group && ref.Kind == "Metal3Machine" && ref.Name == m3m.Name
	})
	if len(refs) != len(host.OwnerReferences) {
		host.OwnerReferences = refs
	}
}

// dropRebootRequests removes the reboot annotations of this provider's
// remediation of m3m and of upstream CAPM3's, so that no remediation
// interrupted by the machine's deletion leaves the next user's host held
// off.
func dropRebootRequests(host *bmov1alpha1.BareMetalHost, m3m *infrav1.Metal3Machine) {
	delete(host.Annotations, infrav1.RemediationRebootAnnotationPrefix+string(infrav1.ConsumerID(m3m)))
	for key := range host.Annotations {
		if strings.HasPrefix(key, infrav1.UpstreamRemediationRebootAnnotationPrefix) {
			delete(host.Annotations, key)
		}
	}
}
