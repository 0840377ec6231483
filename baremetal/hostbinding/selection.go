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
	// NodeReuseLabel marks a host released by a machine of a template with
	// nodeReuse, for the next machine of the same template.
	NodeReuseLabel = "infrastructure.cluster.x-k8s.io/node-reuse"
)

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
		req, err := labels.NewRequirement(expr.Key, expr.Operator, expr.Values)
		if err != nil {
			return nil, fmt.Errorf("hostSelector.matchExpressions[%d]: %w", i, err)
		}
		selector = selector.Add(*req)
	}
	return selector, nil
}

// hostAvailable reports whether a host may be claimed: registered and
// inspected (available, or the deprecated ready), not consumed, not marked
// unhealthy, not paused or detached.
func hostAvailable(host *bmov1alpha1.BareMetalHost) bool {
	switch host.Status.Provisioning.State {
	case bmov1alpha1.StateAvailable, bmov1alpha1.StateReady:
	default:
		return false
	}
	if host.Spec.ConsumerRef != nil || !host.DeletionTimestamp.IsZero() {
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
	// rank orders candidates, lower first: a reusable host of the machine's
	// template, then one in its failure domain, then any other.
	rank int
	// spread orders equal candidates. It is a hash of the machine and the
	// host: stable for one machine across retries, different between
	// machines, so concurrent machines rarely race for the same host.
	spread uint64
}

// rankHosts returns the hosts machine may claim, best first. reuseTemplate
// is the name of the machine's Metal3MachineTemplate when it has nodeReuse.
func rankHosts(hosts []bmov1alpha1.BareMetalHost, machine *infrav1.Metal3Machine, failureDomain, reuseTemplate string) ([]*bmov1alpha1.BareMetalHost, error) {
	selector, err := hostSelector(machine.Spec.HostSelector)
	if err != nil {
		return nil, err
	}
	var candidates []hostCandidate
	for i := range hosts {
		host := &hosts[i]
		if !hostAvailable(host) || !selector.Matches(labels.Set(host.Labels)) {
			continue
		}
		rank := 2
		if failureDomain != "" && host.Labels[FailureDomainLabel] == failureDomain {
			rank = 1
		}
		if reuseTemplate != "" && host.Labels[NodeReuseLabel] == reuseTemplate {
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
	out := make([]*bmov1alpha1.BareMetalHost, len(candidates))
	for i, c := range candidates {
		out[i] = c.host
	}
	return out, nil
}
