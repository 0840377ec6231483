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
	"html"
	"sort"
	"strings"
)

// plotSeries is one line of the association plot: a mode's association
// times, or its floor (dashed, in the mode's colour).
type plotSeries struct {
	name, color, dash string
	mode              assocMode
	value             func(associationResult) float64
}

// associationSeries are the plot's lines in legend order. Upstream runs
// against the same in-cluster setup, so its floor is the in-cluster floor
// and is not drawn twice.
func associationSeries() []plotSeries {
	associated := func(r associationResult) float64 { return r.Associated.Seconds() }
	floor := func(r associationResult) float64 { return r.Floor.Seconds() }
	var lines []plotSeries
	for _, m := range []struct {
		mode       assocMode
		name       string
		color      string
		floorDrawn bool
	}{
		{modeInCluster, "in-cluster", "#1f77b4", true},
		{modeRemote, "remote identity", "#d62728", true},
		{modeHostClaim, "HostClaim", "#2ca02c", true},
		{modeUpstream, "upstream v1.13.2", "#ff7f0e", false},
	} {
		lines = append(lines, plotSeries{m.name, m.color, "", m.mode, associated})
		if m.floorDrawn {
			lines = append(lines, plotSeries{m.name + " floor", m.color, "4 3", m.mode, floor})
		}
	}
	return lines
}

// associationPlot draws association time (and the floor) against the
// number of machines, one line per mode and one dashed per floor, as a
// small self-contained SVG. Modes without results are left out, legend
// included; each line carries its name as a title.
func associationPlot(results []associationResult) string {
	const w, h, left, bottom, top, right = 680, 400, 60, 50, 30, 190
	maxN, maxT := 1, 1.0
	for _, r := range results {
		maxN = max(maxN, r.Machines)
		maxT = max(maxT, r.Associated.Seconds(), r.Floor.Seconds())
	}
	x := func(n int) float64 { return left + float64(n)/float64(maxN)*(w-left-right) }
	y := func(s float64) float64 { return h - bottom - s/maxT*(h-bottom-top) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n",
		left, h-bottom, w-right, h-bottom, left, top, left, h-bottom)
	for i := 0; i <= 4; i++ {
		n := maxN * i / 4
		s := maxT * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">%d</text>`+"\n", x(n), h-bottom+18, n)
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%.0f s</text>`+"\n", left-6, y(s)+4, s)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">Metal3Machines</text>`+"\n", (left+w-right)/2, h-12)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">time until all are associated</text>`+"\n", (left+w-right)/2, 18)
	drawn := 0
	for _, l := range associationSeries() {
		var pts []associationResult
		for _, r := range results {
			if r.Mode == l.mode {
				pts = append(pts, r)
			}
		}
		if len(pts) == 0 {
			continue
		}
		sort.Slice(pts, func(a, b int) bool { return pts[a].Machines < pts[b].Machines })
		coords := make([]string, len(pts))
		for i, p := range pts {
			coords[i] = fmt.Sprintf("%.1f,%.1f", x(p.Machines), y(l.value(p)))
		}
		name := html.EscapeString(l.name)
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s" points="%s"><title>%s</title></polyline>`+"\n",
			l.color, l.dash, strings.Join(coords, " "), name)
		for _, c := range coords {
			cx, cy, _ := strings.Cut(c, ",")
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", cx, cy, l.color)
		}
		ly := top + 20 + drawn*20
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			w-right+10, ly, w-right+35, ly, l.color, l.dash, w-right+40, ly+4, name)
		drawn++
	}
	b.WriteString("</svg>\n")
	return b.String()
}
