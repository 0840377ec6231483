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

package pool

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
)

// Kept is what a host's node reuse marks mean to one consumer.
type Kept int

const (
	// NotKept: the host is kept for no one (or its reservation is stale).
	NotKept Kept = iota
	// KeptForConsumer: the host comes back to this consumer, which prefers
	// it to any other and waits for it while it is being released.
	KeptForConsumer
	// KeptForOther: the host is someone else's to take.
	KeptForOther
)

// A Keeper reads the node reuse marks of a host for one consumer. Each
// mode marks hosts its own way (see hostbinding.Reuse, hostclaim.ReuseID);
// what follows from the answer is Choose's.
type Keeper func(host *bmov1alpha1.BareMetalHost) Kept

// Why Choose leaves out a host that is not unavailable.
const (
	NotMatching        = "not matching the hostSelector"
	KeptForAnother     = "kept for another claim's node reuse"
	UncleanedForOthers = "not cleaned since another cluster used it"
)

// Request is what a consumer asks of the pool.
type Request struct {
	// Selector is the consumer's hostSelector (see Selector).
	Selector labels.Selector
	// Namespaces are the namespaces the consumer may take hosts from; hosts
	// of others are ignored. Nil: every host given.
	Namespaces []string
	// FailureDomain, if set, is preferred.
	FailureDomain string
	// Cluster is the consumer's cluster ("<namespace>/<cluster name>"): a
	// host deprovisioned without cleaning (UncleanedAnnotation) is offered
	// only to the cluster whose data may be on its disks. Empty for a
	// consumer of no known cluster, which is never offered one.
	Cluster string
	// Keeper reads node reuse marks; nil: the consumer keeps nothing and
	// takes no kept host.
	Keeper Keeper
	// Spread, if set (the consumer's UID), orders equal candidates by a
	// hash of it and the host: stable for one consumer across retries,
	// different between consumers, so that many consumers choosing at once
	// rarely race for the same host. Empty: by namespace and name, for a
	// chooser that serialises its consumers (the binder) and whose choices
	// a pool admin reads more easily in name order.
	Spread string
}

// Selection is what Choose found for a consumer.
type Selection struct {
	// Candidates are the hosts the consumer may take, best first: a host
	// kept for it, then hosts of its failure domain, then the others.
	Candidates []*bmov1alpha1.BareMetalHost
	// WaitFor is a host kept for the consumer that is not available yet
	// (still being released or cleaned): node reuse gives it back, so the
	// consumer takes no other meanwhile, and Candidates is empty. A kept
	// host that may never come back without the pool admin (being deleted,
	// reporting an error, marked unhealthy) is not waited for.
	WaitFor *bmov1alpha1.BareMetalHost
	// Namespaces are the namespaces looked in (nil: all given).
	Namespaces []string
	// Considered counts the hosts in Namespaces.
	Considered int
	// Excluded counts the hosts of Namespaces not offered, by reason.
	Excluded map[string]int
	// DeprecatedMarks are the hosts left out for an unhealthy mark under
	// its deprecated name alone (DeprecatedUnhealthyAnnotation), which
	// LogDeprecatedMarks tells the pool admin about.
	DeprecatedMarks []*bmov1alpha1.BareMetalHost
}

// Choose ranks the hosts a consumer may take among hosts.
func Choose(hosts []bmov1alpha1.BareMetalHost, req Request) *Selection {
	result := &Selection{Namespaces: req.Namespaces, Excluded: map[string]int{}}
	type candidate struct {
		host   *bmov1alpha1.BareMetalHost
		rank   int
		spread uint64
	}
	var candidates []candidate
	var keptNotReady []*bmov1alpha1.BareMetalHost
	for i := range hosts {
		host := &hosts[i]
		if req.Namespaces != nil && !slices.Contains(req.Namespaces, host.Namespace) {
			continue
		}
		result.Considered++
		if !req.Selector.Matches(labels.Set(host.Labels)) {
			result.Excluded[NotMatching]++
			continue
		}
		kept := NotKept
		if req.Keeper != nil {
			kept = req.Keeper(host)
		}
		if kept == KeptForOther {
			result.Excluded[KeptForAnother]++
			continue
		}
		if uncleanedFor, uncleaned := host.Annotations[UncleanedAnnotation]; uncleaned && (req.Cluster == "" || uncleanedFor != req.Cluster) {
			// Another cluster's data may be on its disks.
			result.Excluded[UncleanedForOthers]++
			continue
		}
		why := Unavailability(host)
		if why == InUse && kept == KeptForConsumer && reservedForCluster(host, req.Cluster) {
			// Upstream v1.14 kept it for this consumer through its
			// consumerRef: the claim's guarded update replaces it.
			why = unavailabilityOfUnconsumed(host)
		}
		if why != "" {
			result.Excluded[why]++
			if why == MarkedUnhealthy && UnhealthyMark(host.Annotations) == DeprecatedUnhealthyAnnotation {
				result.DeprecatedMarks = append(result.DeprecatedMarks, host)
			}
			if kept == KeptForConsumer && !needsAdmin(why) {
				keptNotReady = append(keptNotReady, host)
			}
			continue
		}
		rank := 2
		if req.FailureDomain != "" && host.Labels[FailureDomainLabel] == req.FailureDomain {
			rank = 1
		}
		if kept == KeptForConsumer {
			rank = 0
		}
		c := candidate{host: host, rank: rank}
		if req.Spread != "" {
			h := fnv.New64a()
			_, _ = h.Write([]byte(req.Spread + "/" + host.Namespace + "/" + host.Name))
			c.spread = h.Sum64()
		}
		candidates = append(candidates, c)
	}
	slices.SortFunc(candidates, func(a, b candidate) int {
		return cmp.Or(
			cmp.Compare(a.rank, b.rank),
			cmp.Compare(a.spread, b.spread),
			strings.Compare(a.host.Namespace, b.host.Namespace),
			strings.Compare(a.host.Name, b.host.Name),
		)
	})
	if len(keptNotReady) > 0 && (len(candidates) == 0 || candidates[0].rank != 0) {
		slices.SortFunc(keptNotReady, func(a, b *bmov1alpha1.BareMetalHost) int {
			return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
		})
		result.WaitFor = keptNotReady[0]
		return result
	}
	for _, c := range candidates {
		result.Candidates = append(result.Candidates, c.host)
	}
	return result
}

// LogDeprecatedMarks warns, as upstream CAPM3 does when it skips such a
// host, of each host marked unhealthy under the deprecated name only: the
// mark still keeps it out of the pool, but the pool admin should rename
// it before a release of either provider stops reading that name.
func (s *Selection) LogDeprecatedMarks(log logr.Logger) {
	for _, host := range s.DeprecatedMarks {
		log.Info("host is marked unhealthy with a deprecated annotation; rename it",
			"host", klog.KObj(host), "annotation", DeprecatedUnhealthyAnnotation, "replacement", UnhealthyAnnotation)
	}
}

// Summary says in words what the hosts looked at were, for a consumer that
// gets none: the tenant sees it in a condition, the pool admin in an Event.
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
