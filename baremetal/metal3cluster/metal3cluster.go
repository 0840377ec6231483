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

// Package metal3cluster says what a Metal3Cluster's spec means for its
// status: the failure domains Cluster API reads, and whether its control
// plane endpoint lets nodes join.
package metal3cluster

import (
	"errors"
	"slices"
	"strings"

	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// ClusterFailureDomains lists spec.failureDomains the way the CAPI v1beta2
// contract wants them in status: a list sorted by name, each saying
// explicitly whether it suits the control plane (unset means it does not).
func ClusterFailureDomains(cluster *infrav1.Metal3Cluster) []clusterv1.FailureDomain {
	domains := make([]clusterv1.FailureDomain, 0, len(cluster.Spec.FailureDomains))
	for _, spec := range cluster.Spec.FailureDomains {
		domains = append(domains, clusterv1.FailureDomain{
			Name:         spec.Name,
			ControlPlane: ptr.To(ptr.Deref(spec.ControlPlane, false)),
			Attributes:   spec.Attributes,
		})
	}
	slices.SortFunc(domains, func(a, b clusterv1.FailureDomain) int { return strings.Compare(a.Name, b.Name) })
	if len(domains) == 0 {
		return nil
	}
	return domains
}

// ErrNoControlPlaneEndpoint means the cluster cannot be provisioned: CAPI
// copies the endpoint into the Cluster, and nodes join through it.
var ErrNoControlPlaneEndpoint = errors.New("spec.controlPlaneEndpoint is not set: nodes would have no API server to join")

// ValidateControlPlaneEndpoint checks the endpoint a cluster is provisioned with.
func ValidateControlPlaneEndpoint(cluster *infrav1.Metal3Cluster) error {
	endpoint := cluster.Spec.ControlPlaneEndpoint
	if endpoint.Host == "" || endpoint.Port <= 0 || endpoint.Port > 65535 {
		return ErrNoControlPlaneEndpoint
	}
	return nil
}
