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

// Command scale runs the provider's scale, cost and crash-consistency
// scenarios against real API servers and prints their figures as a
// Markdown table (make bench-scale). The table and a plot of association
// time against machines go to -out.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/metal3-io/cluster-api-provider-metal3/test/chaos"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

type options struct {
	out         string
	scenarios   map[string]bool
	sizes       []int
	flowRuns    int
	rest        time.Duration
	chaos       chaos.Options
	memHosts    int
	identities  int
	rotateFor   time.Duration
	sharedHosts int
	// sharedDistinct also runs the shared scenario with distinct
	// credentials, to compare.
	sharedDistinct bool
	restAtSizes    int
	hostileWindow  time.Duration
}

func main() {
	var o options
	scenarios := flag.String("scenarios", "flow,association,memory,identities,shared,hostile,chaos", "Comma-separated scenarios to run.")
	sizes := flag.String("sizes", "100,250,500,1000", "Machines per association run.")
	flag.StringVar(&o.out, "out", "out/scale", "Where to write results.md and association.svg.")
	flag.IntVar(&o.flowRuns, "flow-runs", 3, "Runs of the upstream-comparison flow.")
	flag.DurationVar(&o.rest, "rest", 2*time.Minute, "How long to count requests at rest.")
	flag.IntVar(&o.restAtSizes, "rest-at", 100, "Count requests at rest after the association runs of this size (0: never).")
	flag.IntVar(&o.chaos.Machines, "chaos-machines", 200, "Machines of the chaos scenario.")
	flag.IntVar(&o.chaos.Kills, "chaos-kills", 30, "SIGKILLs of the manager in the chaos scenario.")
	flag.IntVar(&o.memHosts, "memory-hosts", 100, "BareMetalHosts per identity in the memory scenario.")
	flag.IntVar(&o.identities, "identities", 50, "Identities in the memory and identities scenarios.")
	flag.DurationVar(&o.rotateFor, "rotate-for", 30*time.Second, "How long one identity is rotated every 5 s.")
	flag.IntVar(&o.sharedHosts, "shared-hosts", 100, "BareMetalHosts every identity sees in the shared scenario.")
	flag.BoolVar(&o.sharedDistinct, "shared-distinct", true, "Also run the shared scenario with a ServiceAccount per identity, to compare.")
	flag.DurationVar(&o.hostileWindow, "hostile-window", 3*time.Minute, "How long the hostile identity streams while the provider's memory is sampled.")
	flag.Parse()
	o.scenarios = map[string]bool{}
	for _, s := range strings.Split(*scenarios, ",") {
		o.scenarios[strings.TrimSpace(s)] = true
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "-sizes: %q is not a positive number\n", s)
			os.Exit(2)
		}
		o.sizes = append(o.sizes, n)
	}
	o.chaos.Tenants = 4
	ctrl.SetLogger(logr.Discard())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if err := os.MkdirAll(o.out, 0o750); err != nil {
		return err
	}
	report := &report{}
	report.printf("# Scale, cost and crash consistency\n\nMeasured %s on %s (%d CPUs, %s/%s, %s) with `make bench-scale`.\n",
		time.Now().UTC().Format("2006-01-02"), hostName(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	progress := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "… "+format+"\n", args...) }
	// A failed scenario is reported where its figures would be, and the
	// others still run: hours of figures are not lost to one of them.
	var failures []error
	failed := func(what string, err error) {
		err = fmt.Errorf("%s: %w", what, err)
		failures = append(failures, err)
		report.printf("\n**%s**\n", err)
	}

	if o.scenarios["flow"] {
		var runs []flowResult
		for i := range o.flowRuns {
			progress("flow run %d/%d", i+1, o.flowRuns)
			res, err := scenario(func(t testenv.T) (flowResult, error) { return runFlow(ctx, t, o.out, 6, o.rest) })
			if err != nil {
				failed("flow", err)
				continue
			}
			runs = append(runs, res)
		}
		report.flow(runs)
	}
	if o.scenarios["association"] {
		var results []associationResult
		for _, remote := range []bool{false, true} {
			for _, n := range o.sizes {
				rest := time.Duration(0)
				if n == o.restAtSizes {
					rest = o.rest
				}
				progress("association: %d machines, remote %v", n, remote)
				res, err := scenario(func(t testenv.T) (associationResult, error) {
					return runAssociation(ctx, t, o.out, n, remote, rest)
				})
				if err != nil {
					failed(fmt.Sprintf("association of %d (remote %v)", n, remote), err)
					continue
				}
				results = append(results, res)
			}
		}
		report.association(results)
		if err := os.WriteFile(filepath.Join(o.out, "association.svg"), []byte(associationPlot(results)), 0o600); err != nil {
			return err
		}
	}
	if o.scenarios["memory"] {
		progress("memory: %d identities × %d hosts", o.identities, o.memHosts)
		res, err := scenario(func(t testenv.T) (memoryResult, error) { return runMemory(ctx, t, o.memHosts, o.identities) })
		if err != nil {
			failed("memory", err)
		} else {
			report.rows("Memory and watches", res.rows())
		}
	}
	if o.scenarios["identities"] {
		progress("identities: %d connecting, one rotated every 5 s for %s", o.identities, o.rotateFor)
		res, err := scenario(func(t testenv.T) (identitiesResult, error) { return runIdentities(ctx, t, o.identities, o.rotateFor) })
		if err != nil {
			failed("identities", err)
		} else {
			report.rows("Many identities", res.rows())
		}
	}
	if o.scenarios["shared"] {
		var same, distinct *sharedResult
		for _, d := range []bool{false, true} {
			if d && !o.sharedDistinct {
				continue
			}
			progress("shared: %d identities × %d hosts in one pool namespace, distinct credentials %v", o.identities, o.sharedHosts, d)
			res, err := scenario(func(t testenv.T) (sharedResult, error) { return runShared(ctx, t, o.identities, o.sharedHosts, d) })
			if err != nil {
				failed(fmt.Sprintf("shared (distinct %v)", d), err)
				continue
			}
			if d {
				distinct = &res
			} else {
				same = &res
			}
		}
		if same != nil || distinct != nil {
			r := report
			r.printf("\n## Identities sharing credentials\n\n%d tenant namespaces, each with its identity Secret, reaching the same %d hosts "+
				"in one pool namespace; each identity used as the controllers use it (HostAccess, then their two host watches).\n\n",
				o.identities, o.sharedHosts)
			header, rows := sharedRows(same, distinct)
			r.table(r, header, rows)
		}
	}
	if o.scenarios["hostile"] {
		progress("hostile: one identity streaming hosts for %s, another tenant provisioning 3 machines", o.hostileWindow)
		res, err := scenario(func(t testenv.T) (hostileResult, error) { return runHostile(ctx, t, o.hostileWindow, 64<<10, 3) })
		if err != nil {
			failed("hostile", err)
		}
		report.rows("A hostile identity", res.rows())
	}
	if o.scenarios["chaos"] {
		progress("chaos: %d machines, %d kills", o.chaos.Machines, o.chaos.Kills)
		// The report is filled in as far as the run got, even on failure.
		res, err := scenario(func(t testenv.T) (chaos.Report, error) { return chaos.Run(ctx, t, o.chaos) })
		report.printf("\n## Crash consistency\n\n```\n%s\n```\n", strings.TrimSpace(res.String()))
		if err != nil {
			failed("chaos", err)
		}
	}
	fmt.Print(report.String())
	if err := os.WriteFile(filepath.Join(o.out, "results.md"), []byte(report.String()), 0o600); err != nil {
		failures = append(failures, err)
	}
	return errors.Join(failures...)
}

// scenario runs one scenario in its own suite, so that its servers and
// processes are gone before the next starts.
func scenario[R any](run func(testenv.T) (R, error)) (res R, err error) {
	suite := &testenv.Suite{}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
		suite.Close(err != nil)
	}()
	return run(suite)
}

func hostName() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
			}
		}
	}
	return "unknown CPU"
}

// report is the Markdown the program prints and writes.
type report struct{ strings.Builder }

func (r *report) printf(format string, args ...any) { fmt.Fprintf(r, format, args...) }

func (r *report) table(w io.Writer, header []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat(" --- |", len(header)))
	for _, row := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
}

func (r *report) rows(title string, rows [][2]string) {
	r.printf("\n## %s\n\n", title)
	table := make([][]string, len(rows))
	for i, row := range rows {
		table[i] = []string{row[0], row[1]}
	}
	r.table(r, []string{"", ""}, table)
}

func (r *report) flow(runs []flowResult) {
	r.printf("\n## The upstream comparison flow\n\nOne API server, the Cluster API core controllers, the Bare Metal Operator in test mode, " +
		"6 hosts, a MachineDeployment of 6 created at once, no workload cluster. Requests from the API server's audit log.\n\n")
	var times, phases, until, conflicts, rest []string
	for _, f := range runs {
		times = append(times, fmt.Sprintf("%.1f s", f.Converged.Seconds()))
		phases = append(phases, fmt.Sprintf("%.1f s / %.1f s", f.Claimed.Seconds(), f.LastProvisioned.Seconds()))
		until = append(until, f.Until.String())
		conflicts = append(conflicts, trim(f.Until.Conflicts))
		rest = append(rest, fmt.Sprintf("%s (probes %s)", f.AtRest, trim(f.AtRest.Probes)))
	}
	r.table(r, []string{"", "this provider"}, [][]string{
		{"time until all 6 Metal3Machines are ready", strings.Join(times, ", ")},
		{"… of which: last host claimed / last host reported provisioned by BMO", strings.Join(phases, ", ")},
		{"requests until then (reads / writes)", strings.Join(until, ", ")},
		{"conflicts (409) until then", strings.Join(conflicts, ", ")},
		{"requests at rest, per minute (reads / writes)", strings.Join(rest, ", ")},
	})
	if len(runs) > 0 {
		r.printf("\nRequests of the last run until ready: %s.\n", runs[len(runs)-1].Until.Top(12))
	}
}

func (r *report) association(results []associationResult) {
	r.printf("\n## Association against the floor\n\nN Metal3Machines created at once against N available hosts; the floor does only the writes an " +
		"association needs (user-data Secret, host claim, machine status) with the provider's workers (10) and client limits (20 QPS, burst 30).\n\n")
	var rows [][]string
	for _, a := range results {
		perAssoc := (a.Management.Reads + a.Management.Writes + a.Pool.Reads + a.Pool.Writes) / float64(a.Machines)
		rows = append(rows, []string{
			string(a.Mode), strconv.Itoa(a.Machines), fmt.Sprintf("%.1f s", a.Associated.Seconds()), fmt.Sprintf("%.1f s", a.Floor.Seconds()),
			fmt.Sprintf("%.2f×", a.Ratio()), fmt.Sprintf("%.1f", perAssoc),
			fmt.Sprintf("%s / %s", a.Management, a.Pool), trim(a.Management.Conflicts + a.Pool.Conflicts), watchesString(a.Watches),
		})
	}
	r.table(r, []string{"mode", "N", "associated", "floor", "ratio", "requests per association", "management / pool (reads / writes)", "conflicts", "most open watches per kind (hosts' server)"}, rows)
	byN := map[int][2]*associationResult{}
	for i := range results {
		a := &results[i]
		pair := byN[a.Machines]
		switch a.Mode {
		case modeInCluster:
			pair[0] = a
		case modeRemote:
			pair[1] = a
		default:
			continue
		}
		byN[a.Machines] = pair
	}
	var compare [][]string
	for _, a := range results {
		pair := byN[a.Machines]
		if a.Mode != modeInCluster || pair[1] == nil {
			continue
		}
		in, re := pair[0], pair[1]
		requests := func(r *associationResult) float64 {
			return r.Management.Reads + r.Management.Writes + r.Pool.Reads + r.Pool.Writes
		}
		compare = append(compare, []string{strconv.Itoa(a.Machines), fmt.Sprintf("%.2f×", re.Associated.Seconds()/in.Associated.Seconds()),
			fmt.Sprintf("%.0f / %.0f", requests(re), requests(in))})
	}
	if len(compare) > 0 {
		r.printf("\nRemote identity against in-cluster, same N:\n\n")
		r.table(r, []string{"N", "time remote / in-cluster", "requests remote / in-cluster"}, compare)
	}
	for _, a := range results {
		if a.RestWindow > 0 {
			r.printf("\nAt rest (%s, N = %d, %s), per minute: management %s, probes %s; pool %s, probes %s.\n", a.RestWindow.Round(time.Second), a.Machines, a.Mode,
				a.AtRestManagement, trim(a.AtRestManagement.Probes), a.AtRestPool, trim(a.AtRestPool.Probes))
		}
	}
	r.printf("\n![association time against machines](association.svg)\n")
}

func watchesString(w map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(w)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, w[k]))
	}
	return strings.Join(parts, ", ")
}
