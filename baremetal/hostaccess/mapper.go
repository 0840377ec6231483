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

package hostaccess

import (
	"net/http"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
)

// newRESTMapper maps the kinds the provider uses through an identity
// without the server's whole discovery: controller-runtime's dynamic
// mapper, on its first lookup, reads every group and resource the server
// serves (aggregated discovery), a quarter of a megabyte per identity that
// dozens of identities hold at once. Hosts are mapped from their own group
// version, read here, which also tells an identity whose server has no
// BareMetalHosts at once rather than after the first list times out;
// Secrets and access reviews are built into every API server. Any other
// kind falls back to the dynamic mapper, which then discovers.
func newRESTMapper(key identity.Key, srv kubeguard.Server, cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	gv := bmov1alpha1.GroupVersion
	served, err := dc.ServerResourcesForGroupVersion(gv.String())
	if err != nil {
		return nil, err
	}
	if !servesHosts(served) {
		return nil, identity.NewError(key, infrav1.IdentityUnreachableReason, false, nil,
			"%s serves no baremetalhosts in %s: is the Bare Metal Operator's CRD installed?", srv.Display, gv)
	}
	version := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
	hosts := restmapper.NewDiscoveryRESTMapper([]*restmapper.APIGroupResources{{
		Group:              metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{version}, PreferredVersion: version},
		VersionedResources: map[string][]metav1.APIResource{gv.Version: served.APIResources},
	}})
	builtin := meta.NewDefaultRESTMapper(nil)
	builtin.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	builtin.Add(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"), meta.RESTScopeRoot)
	others, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return meta.FirstHitRESTMapper{MultiRESTMapper: meta.MultiRESTMapper{hosts, builtin, others}}, nil
}

func servesHosts(list *metav1.APIResourceList) bool {
	for _, r := range list.APIResources {
		if r.Name == "baremetalhosts" && r.Kind == "BareMetalHost" && r.Namespaced {
			return true
		}
	}
	return false
}
