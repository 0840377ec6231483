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

package main

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// requestCount sums an identity's requests over a window.
type requestCount struct {
	Reads, Writes float64
	// Conflicts are writes answered 409.
	Conflicts float64
	// Probes are requests to non-resource paths (/api, /healthz, ...).
	Probes float64
	// Watches are the watch requests among Reads: an informer's first
	// watch, and each renewal after the API server ended one (every 5 to
	// 10 minutes), which a controller at rest cannot avoid and does not
	// choose.
	Watches float64
	// Breakdown counts "verb resource code" for the closing diagnosis.
	Breakdown map[string]int
}

func (r requestCount) perMinute(window time.Duration) requestCount {
	f := float64(time.Minute) / float64(window)
	return requestCount{Reads: r.Reads * f, Writes: r.Writes * f, Conflicts: r.Conflicts * f, Probes: r.Probes * f, Watches: r.Watches * f, Breakdown: r.Breakdown}
}

// AtRest says requests at rest: reads / writes, with the watch renewals
// among the reads and the probes apart.
func (r requestCount) AtRest() string {
	if r.Watches == 0 {
		return fmt.Sprintf("%s (probes %s)", r, trim(r.Probes))
	}
	return fmt.Sprintf("%s (of which watch renewals %s; probes %s)", r, trim(r.Watches), trim(r.Probes))
}

func (r requestCount) String() string {
	return fmt.Sprintf("%s / %s", trim(r.Reads), trim(r.Writes))
}

// Top is the breakdown's n most frequent entries, for diagnosis.
func (r requestCount) Top(n int) string {
	keys := make([]string, 0, len(r.Breakdown))
	for k := range r.Breakdown {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if r.Breakdown[keys[i]] != r.Breakdown[keys[j]] {
			return r.Breakdown[keys[i]] > r.Breakdown[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) > n {
		keys = keys[:n]
	}
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, r.Breakdown[k]))
	}
	return strings.Join(parts, "; ")
}

func trim(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprint(int64(f))
	}
	return fmt.Sprintf("%.1f", f)
}

// filterUser is the requests of user, but for leader election: the
// provider runs as shipped, with --leader-elect, and renews its Lease every
// 2 s whatever it manages, as every controller does; that is not what the
// benchmarks measure.
func filterUser(events []testenv.AuditEvent, user string) []testenv.AuditEvent {
	var out []testenv.AuditEvent
	for _, e := range events {
		if e.User.Username == user && e.Resource() != "leases" {
			out = append(out, e)
		}
	}
	return out
}

// countRequests counts the requests received in [from, to).
func countRequests(events []testenv.AuditEvent, from, to time.Time) requestCount {
	r := requestCount{Breakdown: map[string]int{}}
	for i := range events {
		e := &events[i]
		if !e.Counted() || e.RequestReceivedTimestamp.Before(from) || !e.RequestReceivedTimestamp.Before(to) {
			continue
		}
		switch {
		case e.ObjectRef == nil:
			r.Probes++
		case e.IsWrite():
			r.Writes++
			if e.Code() == http.StatusConflict {
				r.Conflicts++
			}
		default:
			r.Reads++
			if e.Verb == "watch" {
				r.Watches++
			}
		}
		r.Breakdown[fmt.Sprintf("%s %s %d", e.Verb, e.Resource(), e.Code())]++
	}
	return r
}

// maxOpenWatches is, per resource, the most watches the events' user held
// open at once (a watch is open from its start until its completion).
func maxOpenWatches(events []testenv.AuditEvent) map[string]int {
	open, most := map[string]int{}, map[string]int{}
	for i := range events {
		e := &events[i]
		if e.Verb != "watch" {
			continue
		}
		switch e.Stage {
		case "ResponseStarted":
			open[e.Resource()]++
			most[e.Resource()] = max(most[e.Resource()], open[e.Resource()])
		case "ResponseComplete":
			open[e.Resource()]--
		}
	}
	return most
}
