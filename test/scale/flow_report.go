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
	"strings"
	"time"
)

// flow reports the flow of both providers side by side: one column each,
// every run of a provider listed in its cells.
func (r *report) flow(ours, upstream []flowResult) {
	r.printf("\n## Time to Running, against upstream CAPM3\n\nAs a user would see it: one API server, the Cluster API core controllers, " +
		"the Bare Metal Operator in test mode, a workload cluster whose Nodes a kubelet stand-in registers once each host is provisioned, " +
		"`cloudProviderEnabled: false`, a control-plane Machine provisioned beforehand, then a MachineDeployment of 6 created at once " +
		"(6 more hosts). Each provider run as its release ships it; its requests from the API server's audit log. " +
		"Times from the MachineDeployment's creation; each cell lists every run.\n\n")
	upstreamName := "upstream CAPM3"
	if len(upstream) > 0 {
		upstreamName = upstream[0].Provider
	}
	rows := []struct {
		label string
		cell  func(flowResult) string
	}{
		{"time until all 6 Metal3Machines are ready", func(f flowResult) string { return seconds(f.Converged) }},
		{"time until all 6 Machines are Running (nodeRef set)", func(f flowResult) string { return seconds(f.Running) }},
		{"… of which: last host claimed / last host reported provisioned by BMO", func(f flowResult) string {
			return seconds(f.Claimed) + " / " + seconds(f.LastProvisioned)
		}},
		{"… last Node registered / last providerID on a Node", func(f flowResult) string {
			return seconds(f.NodeRegistered) + " / " + seconds(f.ProviderIDSet)
		}},
		{"requests until Running (reads / writes)", func(f flowResult) string { return f.Until.String() }},
		{"… per machine", func(f flowResult) string {
			return fmt.Sprintf("%.1f / %.1f", f.Until.Reads/float64(f.Machines), f.Until.Writes/float64(f.Machines))
		}},
		{"conflicts (409) until Running", func(f flowResult) string { return trim(f.Until.Conflicts) }},
		{"requests at rest, per minute (reads / writes)", func(f flowResult) string {
			return f.AtRest.AtRest()
		}},
	}
	table := make([][]string, 0, len(rows))
	for _, row := range rows {
		table = append(table, []string{row.label, flowCells(ours, row.cell), flowCells(upstream, row.cell)})
	}
	r.table(r, []string{"", "this provider", upstreamName}, table)
	for _, runs := range [][]flowResult{ours, upstream} {
		if len(runs) > 0 {
			last := runs[len(runs)-1]
			r.printf("\nRequests of %s's last run until Running: %s.\n", last.Provider, last.Until.Top(12))
		}
	}
}

// flowCells is one cell: cell of every run, or "–" without runs.
func flowCells(runs []flowResult, cell func(flowResult) string) string {
	if len(runs) == 0 {
		return "–"
	}
	parts := make([]string, len(runs))
	for i, f := range runs {
		parts[i] = cell(f)
	}
	return strings.Join(parts, ", ")
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
