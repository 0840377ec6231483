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

// Package fake has a hostaccess.HostAccess for unit tests: host access over
// a client the test builds (typically controller-runtime's fake client,
// with interceptors for conflicts, errors or a lagging cache). Anything that
// crosses the host-access layer itself is tested against real API servers.
package fake

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// HostAccess is a hostaccess.HostAccess over a client the test provides.
type HostAccess struct {
	IdentityKey   identity.Key
	HostNamespace string
	HostClient    client.Client
	// HostReader defaults to HostClient.
	HostReader client.Reader
}

var _ hostaccess.HostAccess = &HostAccess{}

func (h *HostAccess) Key() identity.Key     { return h.IdentityKey }
func (h *HostAccess) Namespace() string     { return h.HostNamespace }
func (h *HostAccess) Client() client.Client { return h.HostClient }
func (h *HostAccess) Reader() client.Reader {
	if h.HostReader != nil {
		return h.HostReader
	}
	return h.HostClient
}
