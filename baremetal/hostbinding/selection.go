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
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
)

const (
	// UnhealthyAnnotation marks a host that must not be chosen (set by
	// remediation or an operator), as upstream CAPM3 does.
	UnhealthyAnnotation = "capi.metal3.io/unhealthy"
	// FailureDomainLabel puts a host in a failure domain.
	FailureDomainLabel = "infrastructure.cluster.x-k8s.io/failure-domain"
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
	// UncleanedAnnotation marks a host deprovisioned without the cleaning
	// its pool asks for: its consumer disabled cleaning and kept the host
	// for node reuse, as upstream CAPM3 lets a MachineDeployment keep its
	// disks across an upgrade. The value is the cluster
	// ("<namespace>/<cluster name>") whose data may be on its disks: only
	// that cluster's machines may take it, until the pool admin, having
	// cleaned it, removes the annotation.
	UncleanedAnnotation = "infrastructure.cluster.x-k8s.io/uncleaned-for"
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

// reservation says what a host's node reuse reservation means to a machine.
type reservation int

const (
	notReserved reservation = iota
	reservedForMachine
	reservedForOther
)

func (r Reuse) reservation(host *bmov1alpha1.BareMetalHost) reservation {
	owner, reserved := host.Labels[NodeReuseLabel]
	if !reserved {
		return notReserved
	}
	scope, scoped := host.Annotations[NodeReuseClusterAnnotation]
	switch {
	// A host reserved by upstream CAPM3 has no scope: its owner name alone
	// decides, as it did there.
	case (scope == r.Cluster || !scoped) && r.Owner != "" && owner == r.Owner:
		return reservedForMachine
	case scoped && scope == r.Cluster && !slices.Contains(r.LiveOwners, owner):
		return notReserved
	}
	return reservedForOther
}

// hostSelector turns a Metal3Machine's hostSelector into a label selector.
func hostSelector(sel infrav1.HostSelector) (labels.Selector, error) {
	selector := labels.NewSelector()
	for key, value := range sel.MatchLabels {
		req, err := labels.NewRequirement(key, selection.Equals, []string{value})
		if err != nil {
			return nil, fmt.Errorf("hostSelector.matchLabels[%s]: %w", key, err)
		}
		selector = selector.Add(*req)
	}
	for i, expr := range sel.MatchExpressions {
		// Case-insensitive, as upstream CAPM3 (objects stored before the
		// webhook lowercased them).
		req, err := labels.NewRequirement(expr.Key, selection.Operator(strings.ToLower(string(expr.Operator))), expr.Values)
		if err != nil {
			return nil, fmt.Errorf("hostSelector.matchExpressions[%d]: %w", i, err)
		}
		selector = selector.Add(*req)
	}
	return selector, nil
}

// hostAvailable reports whether a host may be claimed: registered and
// inspected (available, or the deprecated ready), not consumed, reporting
// no error (as upstream CAPM3 skips them), not marked unhealthy, not paused
// or detached.
func hostAvailable(host *bmov1alpha1.BareMetalHost) bool {
	switch host.Status.Provisioning.State {
	case bmov1alpha1.StateAvailable, bmov1alpha1.StateReady:
	default:
		return false
	}
	if host.Spec.ConsumerRef != nil || !host.DeletionTimestamp.IsZero() || host.Status.ErrorMessage != "" {
		return false
	}
	for _, annotation := range []string{UnhealthyAnnotation, bmov1alpha1.PausedAnnotation, bmov1alpha1.DetachedAnnotation} {
		if _, ok := host.Annotations[annotation]; ok {
			return false
		}
	}
	return true
}

// hostCandidate is a host that may be chosen and how well it fits.
type hostCandidate struct {
	host *bmov1alpha1.BareMetalHost
	// rank orders candidates, lower first: a host kept for the machine's
	// owner, then one in its failure domain, then any other.
	rank int
	// spread orders equal candidates. It is a hash of the machine and the
	// host: stable for one machine across retries, different between
	// machines, so concurrent machines rarely race for the same host.
	spread uint64
}

// rankHosts returns the hosts machine may claim, best first, and the hosts
// kept for it that are not available yet (released, still being cleaned):
// the machine waits for those rather than take another host.
func rankHosts(hosts []bmov1alpha1.BareMetalHost, machine *infrav1.Metal3Machine, failureDomain string, reuse Reuse) (ranked, keptNotReady []*bmov1alpha1.BareMetalHost, _ error) {
	selector, err := hostSelector(machine.Spec.HostSelector)
	if err != nil {
		return nil, nil, err
	}
	var candidates []hostCandidate
	for i := range hosts {
		host := &hosts[i]
		if !selector.Matches(labels.Set(host.Labels)) {
			continue
		}
		kept := reuse.reservation(host)
		if kept == reservedForOther {
			continue
		}
		if uncleanedFor, uncleaned := host.Annotations[UncleanedAnnotation]; uncleaned && uncleanedFor != reuse.Cluster {
			// Another cluster's data may be on its disks.
			continue
		}
		if !hostAvailable(host) {
			if kept == reservedForMachine && host.Spec.ConsumerRef == nil && host.DeletionTimestamp.IsZero() {
				keptNotReady = append(keptNotReady, host)
			}
			continue
		}
		rank := 2
		if failureDomain != "" && host.Labels[FailureDomainLabel] == failureDomain {
			rank = 1
		}
		if kept == reservedForMachine {
			rank = 0
		}
		h := fnv.New64a()
		_, _ = h.Write([]byte(string(machine.UID) + "/" + host.Namespace + "/" + host.Name))
		candidates = append(candidates, hostCandidate{host: host, rank: rank, spread: h.Sum64()})
	}
	slices.SortFunc(candidates, func(a, b hostCandidate) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		switch {
		case a.spread < b.spread:
			return -1
		case a.spread > b.spread:
			return 1
		}
		return 0
	})
	ranked = make([]*bmov1alpha1.BareMetalHost, len(candidates))
	for i, c := range candidates {
		ranked[i] = c.host
	}
	return ranked, keptNotReady, nil
}
