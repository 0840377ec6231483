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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/utils/ptr"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// Direct mode's node reuse marks; what a host may be taken for is the
// pool's rule (package pool).
const (
	// NodeReuseLabel reserves a released host for the next machine of the
	// same owner, as upstream CAPM3 names it: "cp-<control plane>" or
	// "md-<MachineDeployment>". The owner, not the template, so a rolling
	// upgrade to a new template gets the hosts back.
	NodeReuseLabel = "infrastructure.cluster.x-k8s.io/node-reuse"
	// NodeReuseClusterAnnotation scopes a reservation to one cluster
	// ("<namespace>/<cluster name>"): owners of the same name in other
	// tenants' namespaces or other clusters sharing the pool do not match.
	NodeReuseClusterAnnotation = "infrastructure.cluster.x-k8s.io/node-reuse-cluster"
	// PoolCleaningModeAnnotation records on a host the automatedCleaningMode
	// it had before its consumer set its own: the pool's, which the host
	// gets back when it is released, before it is deprovisioned, so that it
	// is cleaned as the pool admin wants whatever the consumer chose.
	PoolCleaningModeAnnotation = "infrastructure.cluster.x-k8s.io/pool-cleaning-mode"
)

// Reuse is a machine's part in node reuse.
type Reuse struct {
	// Owner is the machine's owner as NodeReuseLabel names it; empty for a
	// machine of neither a control plane nor a MachineDeployment.
	Owner string
	// Cluster is "<namespace>/<cluster name>" of the machine.
	Cluster string
	// Reserve keeps the host for Owner on release: the machine's template
	// has nodeReuse and the owner still wants machines.
	Reserve bool
	// LiveOwners are the owners of the machine's cluster that still exist.
	// A reservation of this cluster for an owner not among them is stale:
	// nothing will come back for the host, so any machine may take it.
	LiveOwners []string
}

// Keeper reads direct mode's node reuse marks for the machine.
func (r Reuse) Keeper(host *bmov1alpha1.BareMetalHost) pool.Kept {
	owner, reserved := host.Labels[NodeReuseLabel]
	if !reserved {
		return pool.NotKept
	}
	scope, scoped := host.Annotations[NodeReuseClusterAnnotation]
	switch {
	// A host reserved by upstream CAPM3 has no scope: its owner name alone
	// decides, as it did there.
	case (scope == r.Cluster || !scoped) && r.Owner != "" && owner == r.Owner:
		return pool.KeptForConsumer
	case scoped && scope == r.Cluster && !slices.Contains(r.LiveOwners, owner):
		return pool.NotKept
	}
	return pool.KeptForOther
}

// Choose is direct mode's question to the pool: the hosts of hosts (one
// pool namespace) machine may claim, best first, or the host kept for it
// that it waits for. Concurrent machines are spread over equal hosts by
// their UID.
func Choose(hosts []bmov1alpha1.BareMetalHost, machine *infrav1.Metal3Machine, failureDomain string, reuse Reuse) (*pool.Selection, error) {
	sel := ptr.Deref(machine.Spec.HostSelector, infrav1.HostSelector{})
	requirements := make([]pool.Requirement, 0, len(sel.MatchExpressions))
	for _, expr := range sel.MatchExpressions {
		requirements = append(requirements, pool.Requirement{Key: expr.Key, Operator: string(expr.Operator), Values: expr.Values})
	}
	selector, err := pool.Selector(sel.MatchLabels, requirements)
	if err != nil {
		return nil, err
	}
	return pool.Choose(hosts, pool.Request{
		Selector:      selector,
		FailureDomain: failureDomain,
		Cluster:       reuse.Cluster,
		Keeper:        reuse.Keeper,
		Spread:        string(machine.UID),
	}), nil
}
