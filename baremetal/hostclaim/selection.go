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

package hostclaim

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// FailureDomainLabel puts a host in a failure domain; a claim with
// spec.failureDomain prefers the hosts labelled with it.
const FailureDomainLabel = "infrastructure.cluster.x-k8s.io/failure-domain"

// ReuseID is what a host kept for claim's node reuse key is kept for
// ("<namespace>/<key>", the value of KeptForAnnotation), or "" for a claim
// without a key. The namespace scopes keys: tenants cannot name each
// other's.
func ReuseID(claim *bmov1alpha1.HostClaim) string {
	key := claim.Annotations[NodeReuseKeyAnnotation]
	if key == "" {
		return ""
	}
	return claim.Namespace + "/" + key
}

// HostSelector turns a claim's hostSelector into a label selector.
func HostSelector(sel bmov1alpha1.HostSelector) (labels.Selector, error) {
	selector := labels.NewSelector()
	// Sorted, so an error names the same key every time.
	for _, key := range slices.Sorted(maps.Keys(sel.MatchLabels)) {
		req, err := labels.NewRequirement(key, selection.Equals, []string{sel.MatchLabels[key]})
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

// Why a host is never waited for, even when kept for the claim's key: it
// may not become available without the pool admin.
const (
	reportingError  = "reporting an error"
	markedUnhealthy = "marked unhealthy"
	beingDeleted    = "being deleted"
)

// Unavailability says why host cannot be bound now, or "" if it can:
// registered and inspected (available, or the deprecated ready), not
// consumed, not marked unhealthy, not paused or detached, reporting no
// error, not being deleted.
// Power does not matter: the binder sets it from the claim.
func Unavailability(host *bmov1alpha1.BareMetalHost) string {
	switch {
	case !host.DeletionTimestamp.IsZero():
		return beingDeleted
	case host.Spec.ConsumerRef != nil:
		return "in use"
	case host.Status.OperationalStatus == bmov1alpha1.OperationalStatusError || host.Status.ErrorMessage != "":
		return reportingError
	}
	if _, ok := host.Annotations[UnhealthyAnnotation]; ok {
		return markedUnhealthy
	}
	for _, annotation := range []string{bmov1alpha1.PausedAnnotation, bmov1alpha1.DetachedAnnotation} {
		if _, ok := host.Annotations[annotation]; ok {
			return "paused or detached"
		}
	}
	switch state := host.Status.Provisioning.State; state {
	case bmov1alpha1.StateAvailable, bmov1alpha1.StateReady:
		return ""
	case bmov1alpha1.StateNone:
		return "registering"
	default:
		return string(state)
	}
}

// Selection is what Select found for a claim.
type Selection struct {
	// Candidates are the hosts the claim may bind, best first: a host kept
	// for the claim's reuse key, then hosts of its failure domain, then the
	// others; by namespace and name among equals, so the choice is stable.
	Candidates []*bmov1alpha1.BareMetalHost
	// WaitFor is a host kept for the claim's reuse key that is not
	// available yet (still deprovisioning): node reuse gives the claim that
	// host back, so it takes no other meanwhile and Candidates is empty.
	WaitFor *bmov1alpha1.BareMetalHost
	// Namespaces are the namespaces looked in.
	Namespaces []string
	// Considered counts the hosts in Namespaces.
	Considered int
	// Excluded counts the hosts of Namespaces not offered, by reason.
	Excluded map[string]int
}

// Summary says in words what the hosts looked at were, for a claim that
// gets none: the tenant sees it in its Associated condition, the pool
// admin in an Event.
func (s *Selection) Summary() string {
	if s.WaitFor != nil {
		return fmt.Sprintf("waiting for host %s/%s, kept for this claim's node reuse key, which is %s",
			s.WaitFor.Namespace, s.WaitFor.Name, stateWords(s.WaitFor))
	}
	if s.Considered == 0 {
		return fmt.Sprintf("no host in the admitted namespaces (%s)", strings.Join(s.Namespaces, ", "))
	}
	reasons := make([]string, 0, len(s.Excluded))
	for _, reason := range slices.Sorted(maps.Keys(s.Excluded)) {
		reasons = append(reasons, fmt.Sprintf("%d %s", s.Excluded[reason], reason))
	}
	return fmt.Sprintf("none of the %d hosts in the admitted namespaces (%s) is available: %s",
		s.Considered, strings.Join(s.Namespaces, ", "), strings.Join(reasons, ", "))
}

func stateWords(host *bmov1alpha1.BareMetalHost) string {
	if why := Unavailability(host); why != "" {
		return why
	}
	return "available"
}

// Select ranks the hosts claim may bind among hosts, which are those of
// the admitted namespaces (others are ignored). hostSelector.inNamespace
// narrows the admitted namespaces to one. A host kept for a reuse key
// (KeptForAnnotation) is only offered to a claim of that key, which
// prefers it and waits for it while it is not available yet (still bound
// to the claim releasing it, deprovisioning), unless it is being deleted,
// reports an error or is marked unhealthy (then it may never be).
func Select(claim *bmov1alpha1.HostClaim, hosts []bmov1alpha1.BareMetalHost, admitted []string) (*Selection, error) {
	selector, err := HostSelector(claim.Spec.HostSelector)
	if err != nil {
		return nil, err
	}
	namespaces := admitted
	if in := claim.Spec.HostSelector.InNamespace; in != "" {
		namespaces = nil
		if slices.Contains(admitted, in) {
			namespaces = []string{in}
		}
	}
	result := &Selection{Namespaces: namespaces, Excluded: map[string]int{}}
	reuseID := ReuseID(claim)
	type ranked struct {
		host *bmov1alpha1.BareMetalHost
		rank int
	}
	var candidates []ranked
	var keptNotReady []*bmov1alpha1.BareMetalHost
	for i := range hosts {
		host := &hosts[i]
		if !slices.Contains(namespaces, host.Namespace) {
			continue
		}
		result.Considered++
		if !selector.Matches(labels.Set(host.Labels)) {
			result.Excluded["not matching the hostSelector"]++
			continue
		}
		keptFor := host.Annotations[KeptForAnnotation]
		if keptFor != "" && keptFor != reuseID {
			result.Excluded["kept for another claim's node reuse"]++
			continue
		}
		if why := Unavailability(host); why != "" {
			result.Excluded[why]++
			// A kept host still bound is being released for the key
			// (the binder marks it when deprovisioning starts).
			if keptFor != "" && why != beingDeleted && why != reportingError && why != markedUnhealthy {
				keptNotReady = append(keptNotReady, host)
			}
			continue
		}
		rank := 2
		if claim.Spec.FailureDomain != "" && host.Labels[FailureDomainLabel] == claim.Spec.FailureDomain {
			rank = 1
		}
		if keptFor != "" {
			rank = 0
		}
		candidates = append(candidates, ranked{host: host, rank: rank})
	}
	slices.SortFunc(candidates, func(a, b ranked) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		if c := strings.Compare(a.host.Namespace, b.host.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.host.Name, b.host.Name)
	})
	if len(keptNotReady) > 0 && (len(candidates) == 0 || candidates[0].rank != 0) {
		slices.SortFunc(keptNotReady, func(a, b *bmov1alpha1.BareMetalHost) int {
			return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
		})
		result.WaitFor = keptNotReady[0]
		return result, nil
	}
	for _, c := range candidates {
		result.Candidates = append(result.Candidates, c.host)
	}
	return result, nil
}
