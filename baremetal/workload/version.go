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

package workload

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
)

// ServerVersion is the Kubernetes version cluster's API server reports
// (GET /version), asked through the guarded client of its connection, so
// the answer is bounded and judged like any other. It is nil, without
// error, when the server answers but does not tell: a refusal (an error
// status but 429 and 5xx) or a body that is not a version. The error is an
// *Error when the cluster cannot be reached, else the request's.
func (c *Clusters) ServerVersion(ctx context.Context, cluster types.NamespacedName) (*version.Info, error) {
	if _, err := c.Client(ctx, cluster); err != nil {
		return nil, err
	}
	var endpoint *kubeguard.Endpoint
	c.mu.Lock()
	if conn, ok := c.conns[cluster]; ok {
		endpoint = conn.endpoint
	}
	c.mu.Unlock()
	if endpoint == nil {
		// Dropped since Client answered (a new Secret, Forget): the next
		// call connects again.
		return nil, c.connecting(cluster)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(endpoint.Config, endpoint.HTTPClient)
	if err != nil {
		return nil, err
	}
	// discovery's ServerVersion takes no context; the same request with one.
	body, err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if refused(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseVersion(body), nil
}

// refused reports whether err is the server's answer that it will not
// tell (an error status but 429 and 5xx, which say "not now").
func refused(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := status.Status().Code
	return code != http.StatusTooManyRequests && code >= http.StatusBadRequest && code < http.StatusInternalServerError
}

// parseVersion reads a /version answer; nil if it is none.
func parseVersion(body []byte) *version.Info {
	info := &version.Info{}
	if json.Unmarshal(body, info) != nil || (info.GitVersion == "" && info.Major == "" && info.Minor == "") {
		return nil
	}
	return info
}

// connecting is cluster's Connecting error.
func (c *Clusters) connecting(cluster types.NamespacedName) *Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connectingLocked(cluster)
}
