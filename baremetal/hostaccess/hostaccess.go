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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// HostAccess is what managers get to work with BareMetalHosts: a client for
// the cluster where one identity's hosts are, and the namespace they are in.
// Reads of BareMetalHosts are served from a shared informer cache; Secrets
// are read and written without caching; every write goes to the API server.
type HostAccess interface {
	// Key is the identity this access was made for.
	Key() identity.Key
	// Namespace is where the hosts are, and where host Secrets are written.
	Namespace() string
	// Client talks to the hosts' cluster.
	Client() client.Client
	// Reader reads from the hosts' API server, bypassing the cache: for
	// confirming a claim after a conflict, where a stale read would mislead.
	Reader() client.Reader
}

// hostAccess is a HostAccess for one identity and namespace.
type hostAccess struct {
	key       identity.Key
	namespace string
	client    client.Client
	reader    client.Reader
	// accessor serves a remote identity; nil in-cluster.
	accessor *accessor
}

func (h *hostAccess) Key() identity.Key     { return h.key }
func (h *hostAccess) Namespace() string     { return h.namespace }
func (h *hostAccess) Client() client.Client { return h.client }
func (h *hostAccess) Reader() client.Reader { return h.reader }

// NamespaceOf is where access's hosts are, or "" without access.
func NamespaceOf(access HostAccess) string {
	if access == nil {
		return ""
	}
	return access.Namespace()
}
