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
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
)

// kubeconfigSecretKeys are read in this order from an identity Secret
// (kubeguard.Source): "kubeconfig" is the usual key, "value" is the one
// CAPI writes workload cluster kubeconfigs under.
var kubeconfigSecretKeys = []string{"kubeconfig", "value"}

// classify is err as key's IdentityReady reason and message: an identity
// error as it is, anything else as kubeguard tells it (the reasons are the
// same), naming the server by serverURL.
func classify(key identity.Key, serverURL string, err error) *identity.Error {
	if ie, ok := identity.AsError(err); ok {
		return ie
	}
	ge := kubeguard.Classify(serverURL, err)
	return identity.NewError(key, ge.Reason, ge.Terminal, ge, "%s", ge.Message)
}
