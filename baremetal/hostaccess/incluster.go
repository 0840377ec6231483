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
	"k8s.io/apimachinery/pkg/api/meta"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// inClusterAccess is the in-cluster identity's HostAccess: the manager's own
// client, once the management cluster serves the kinds of the identity's
// host mode. A management cluster where every tenant has an identity needs
// no Bare Metal Operator, so the manager starts without its CRDs and only an
// in-cluster object learns that they are missing. The manager's REST mapper
// asks the API server again after each miss, so CRDs installed later are
// found at the object's next retry, without a restart.
func (c *IdentityCache) inClusterAccess(id identity.Identity) (HostAccess, error) {
	for _, kind := range cachedKinds[id.Mode] {
		if _, err := c.opts.InClusterClient.IsObjectNamespaced(kind); err != nil {
			gvk, _ := c.opts.InClusterClient.GroupVersionKindFor(kind)
			if meta.IsNoMatchError(err) {
				return nil, identity.NewError(id.Key, infrav1.IdentityHostAPINotServedReason, false, err,
					"the management cluster serves no %s API (%s) for hosts without an identityRef: install the Bare Metal Operator's CRDs there, or give the cluster an identityRef naming where its hosts are",
					gvk.Kind, gvk.GroupVersion())
			}
			return nil, identity.NewError(id.Key, infrav1.IdentityUnreachableReason, false, err,
				"look up the %s API of the management cluster: %v", gvk.Kind, err)
		}
	}
	return &hostAccess{key: id.Key, namespace: id.ObjectNamespace, client: c.opts.InClusterClient, reader: c.opts.InClusterReader}, nil
}
