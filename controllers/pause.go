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

package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// clusterNamed gets the Cluster an object names, for its pause. An object
// that names none, or a Cluster not created yet, pauses through its own
// annotation only: nil is returned then.
func clusterNamed(ctx context.Context, c client.Reader, namespace, name string) (*clusterv1.Cluster, error) {
	if name == "" {
		return nil, nil
	}
	cluster := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get Cluster %s/%s: %w", namespace, name, err)
	}
	return cluster, nil
}

// machineIdentity resolves m3m's identity with cluster, the Cluster the
// reconcile read (nil: none), which is not read again when it is the
// machine's. metal3Cluster, when not nil, returns that Cluster's
// Metal3Cluster, read once for the whole reconcile (it is read here
// otherwise, if the identity depends on it).
func machineIdentity(ctx context.Context, c client.Reader, m3m *infrav1.Metal3Machine, cluster *clusterv1.Cluster,
	metal3Cluster func() (*infrav1.Metal3Cluster, error),
) (identity.Identity, error) {
	if cluster == nil || cluster.Namespace != m3m.Namespace || cluster.Name != m3m.Labels[clusterv1.ClusterNameLabel] {
		return identity.ResolveMachine(ctx, c, m3m)
	}
	if metal3Cluster == nil {
		metal3Cluster = func() (*infrav1.Metal3Cluster, error) { return identity.Metal3ClusterOf(ctx, c, cluster) }
	}
	return identity.ResolveMachineIn(m3m, cluster, metal3Cluster)
}

// stampLastUpdated sets the status' lastUpdated (the upstream field users
// and tools read to tell a live object from a stale one) when a reconcile
// changed anything in the status: before is the status as read, after the
// status about to be patched.
func stampLastUpdated(before, after any, lastUpdated **metav1.Time) {
	if !equality.Semantic.DeepEqual(before, after) {
		now := metav1.Now()
		*lastUpdated = &now
	}
}
