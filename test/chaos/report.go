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

package chaos

import (
	"fmt"
	"strings"
	"time"
)

// Report is what a run did and found.
type Report struct {
	// Options the run used, defaults filled in.
	Options Options
	// Kills done, and when (since the clusters were created; the first
	// countdown starts with the first claim).
	Kills   int
	KillsAt []time.Duration
	// ClaimedUnderKills and ProvisioningUnderKills count the hosts claimed,
	// and those that entered provisioning, before the last kill: whether
	// the kills landed in the work rather than before or after it.
	ClaimedUnderKills, ProvisioningUnderKills int
	// Converged: every Machine ran and every Metal3Machine was provisioned
	// within Options.ConvergeTimeout of the last restart.
	Converged bool
	// TimeToConverge is from the last restart until every machine ran (or
	// the wait gave up).
	TimeToConverge time.Duration
	// Setup is how long the environment (unless given) took to start and
	// the hosts to become available, before the clusters were created.
	Setup time.Duration
	// Duration of the whole run, Setup included.
	Duration time.Duration
	// ProvisionedOnce counts the machines whose host entered provisioning
	// exactly once, for them alone; Options.Machines when all is well.
	ProvisionedOnce int
	// Retired counts the Metal3Machines deleted during the run: Cluster
	// API's MachineSets replace or scale down machines of their own accord
	// (see retirements).
	Retired int
	// Violations of every invariant, in the order of Invariants.
	Violations []Violation
}

// Count is the number of violations of inv.
func (r Report) Count(inv Invariant) int {
	n := 0
	for _, v := range r.Violations {
		if v.Invariant == inv {
			n++
		}
	}
	return n
}

// String prints the run and a count per invariant, then each violation
// with the provider's log lines naming its objects.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos run: %d machines of %d tenants, %d/%d kills, each %s–%s into a lead (seed %d)\n",
		r.Options.Machines, r.Options.Tenants, r.Kills, r.Options.Kills, r.Options.KillInterval.Min, r.Options.KillInterval.Max, r.Options.Seed)
	fmt.Fprintf(&b, "  before the last kill: %d hosts claimed, %d entered provisioning\n", r.ClaimedUnderKills, r.ProvisioningUnderKills)
	converged := "did not converge"
	if r.Converged {
		converged = "converged"
	}
	fmt.Fprintf(&b, "  %s %s after the last restart; whole run %s, of which setup %s\n", converged,
		r.TimeToConverge.Round(100*time.Millisecond), r.Duration.Round(100*time.Millisecond), r.Setup.Round(100*time.Millisecond))
	fmt.Fprintf(&b, "  %-50s %d/%d\n", "machines provisioned exactly once", r.ProvisionedOnce, r.Options.Machines)
	if r.Retired > 0 {
		fmt.Fprintf(&b, "  %-50s %d\n", "machines Cluster API deleted during the run", r.Retired)
	}
	for _, inv := range Invariants {
		fmt.Fprintf(&b, "  %-50s %d violations\n", inv, r.Count(inv))
	}
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "\nVIOLATION (%s): %s\n", v.Invariant, v.Detail)
		for _, line := range v.Log {
			fmt.Fprintf(&b, "    | %s\n", line)
		}
	}
	return b.String()
}

// maxLogLines bounds the log kept per violation: enough to follow one
// machine or host through the kills of a large run.
const maxLogLines = 200

// withLog gives each violation the lines of log naming one of its objects,
// with the markers of each start and exit of the provider, so that what
// the provider did to those objects reads along the kills.
func withLog(violations []Violation, log string) []Violation {
	if len(violations) == 0 {
		return violations
	}
	lines := strings.Split(log, "\n")
	for i := range violations {
		v := &violations[i]
		for _, line := range lines {
			if strings.HasPrefix(line, "=== ") || mentionsAny(line, v.Objects) {
				v.Log = append(v.Log, line)
			}
		}
		if len(v.Log) > maxLogLines {
			v.Log = append([]string{fmt.Sprintf("(%d lines before these left out)", len(v.Log)-maxLogLines)}, v.Log[len(v.Log)-maxLogLines:]...)
		}
	}
	return violations
}

func mentionsAny(line string, objects []string) bool {
	for _, o := range objects {
		if o != "" && strings.Contains(line, o) {
			return true
		}
	}
	return false
}
