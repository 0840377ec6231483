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
	"strings"
	"testing"
	"time"
)

// TestAssociationPlotDrawsTheModesPresent: a line (and a dashed floor,
// but upstream's, which is the in-cluster floor) for each mode with
// results, and nothing, legend included, for the others.
func TestAssociationPlotDrawsTheModesPresent(t *testing.T) {
	run := func(mode assocMode, n int) associationResult {
		return associationResult{Mode: mode, Machines: n, Associated: time.Duration(n) * 30 * time.Millisecond, Floor: time.Duration(n) * 20 * time.Millisecond}
	}
	all := []string{"in-cluster", "in-cluster floor", "remote identity", "remote identity floor", "HostClaim", "HostClaim floor", "upstream v1.13.2"}
	for _, tc := range []struct {
		name    string
		results []associationResult
		drawn   []string
	}{
		{"none", nil, nil},
		{"in-cluster only", []associationResult{run(modeInCluster, 100), run(modeInCluster, 500)}, []string{"in-cluster", "in-cluster floor"}},
		{"in-cluster and remote", []associationResult{run(modeInCluster, 100), run(modeRemote, 100), run(modeRemote, 250)},
			[]string{"in-cluster", "in-cluster floor", "remote identity", "remote identity floor"}},
		{"every mode", []associationResult{run(modeInCluster, 100), run(modeRemote, 100), run(modeHostClaim, 100), run(modeHostClaim, 1000),
			run(modeUpstream, 100), run(modeUpstream, 500)}, all},
		{"upstream and HostClaim", []associationResult{run(modeUpstream, 100), run(modeHostClaim, 100)}, []string{"HostClaim", "HostClaim floor", "upstream v1.13.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svg := associationPlot(tc.results)
			if !strings.HasPrefix(svg, "<svg ") || !strings.HasSuffix(svg, "</svg>\n") {
				t.Fatalf("not an SVG document:\n%s", svg)
			}
			if got := strings.Count(svg, "<polyline "); got != len(tc.drawn) {
				t.Errorf("%d polylines, want %d:\n%s", got, len(tc.drawn), svg)
			}
			for _, name := range all {
				want := 0
				for _, d := range tc.drawn {
					if d == name {
						want = 1
					}
				}
				// Each drawn line has its title and its legend entry.
				if got := strings.Count(svg, "<title>"+name+"</title>"); got != want {
					t.Errorf("line %q drawn %d times, want %d", name, got, want)
				}
				if got := strings.Count(svg, ">"+name+"</text>"); got != want {
					t.Errorf("legend %q shown %d times, want %d", name, got, want)
				}
			}
		})
	}
}
