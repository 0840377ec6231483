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
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

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

// ListInClusterHostsWithTheManager asks the manager's cache, before it
// starts, for the informers of the kinds the in-cluster identity reads in
// BareMetalHost mode, when the management cluster serves them: they list
// with the manager's cache rather than at the first in-cluster machine
// after a start, which would wait for the listing (longer on a busy API
// server, which may answer a new watch with 429, retried a second later).
// This is what upstream CAPM3 caches from its start too. Kinds the
// management cluster does not serve yet, or that cannot be looked up now,
// are left to inClusterAccess, which finds them at the first object that
// asks. HostClaim mode's kinds are left to it as well: HardwareData are a
// pool's largest objects, not cached for a mode no tenant may use.
func (c *IdentityCache) ListInClusterHostsWithTheManager(ctx context.Context) error {
	for _, kind := range cachedKinds[infrav1.HostModeBareMetalHost] {
		if _, err := c.opts.InClusterClient.IsObjectNamespaced(kind); err != nil {
			ctrl.LoggerFrom(ctx).V(1).Info("In-cluster hosts are listed at their first use", "reason", err.Error())
			return nil
		}
		if _, err := c.opts.ManagementCache.GetInformer(ctx, kind, cache.BlockUntilSynced(false)); err != nil {
			return fmt.Errorf("start the informer of in-cluster %T: %w", kind, err)
		}
	}
	return nil
}
