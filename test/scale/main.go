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
	// provisionHold keeps the association runs' hosts provisioning.
	provisionHold time.Duration
	// memIdentities are the memory scenario's identities; identities
	// those of the identities and shared scenarios.
	memIdentities int
	// modes are the association scenario's modes of this provider;
	// upstreamSizes the sizes upstream CAPM3 associates at in the same
	// scenario.
	modes         []assocMode
	upstreamSizes []int
	// binderHosts are the hosts (and as many claims) of the binder-memory
	// scenario.
	binderHosts int
}

func main() {
	var o options
	scenarios := flag.String("scenarios", "flow,association,binder-memory,memory,chaos,identities,shared,hostile", "Comma-separated scenarios to run.")
	sizes := flag.String("sizes", "100,250,500,1000", "Machines per association run.")
	modes := flag.String("modes", "in-cluster,remote,hostclaim", "Modes of this provider in the association scenario (in-cluster, remote, hostclaim).")
	upstreamSizes := flag.String("upstream-sizes", "100,500", "Machines per association run of upstream CAPM3, in the association scenario (empty: none).")
	flag.IntVar(&o.binderHosts, "binder-hosts", 5000, "Hosts, and as many claims, of the binder-memory scenario.")
	flag.StringVar(&o.out, "out", "out/scale", "Where to write results.md and association.svg.")
	flag.IntVar(&o.flowRuns, "flow-runs", 3, "Runs of the upstream-comparison flow.")
	flag.DurationVar(&o.rest, "rest", 2*time.Minute, "How long to count requests at rest.")
	flag.IntVar(&o.restAtSizes, "rest-at", 100, "Count requests at rest after the association runs of this size (0: never).")
	flag.DurationVar(&o.provisionHold, "provision-hold", 0, "How long the host driver keeps each host provisioning in the association scenario "+
		"(0: done at once, as BMO's test mode; longer than a run: association alone, as with real hardware, which takes minutes).")
	flag.IntVar(&o.chaos.Machines, "chaos-machines", 200, "Machines of the chaos scenario.")
	flag.IntVar(&o.chaos.Kills, "chaos-kills", 30, "SIGKILLs of the manager in the chaos scenario.")
	flag.IntVar(&o.memHosts, "memory-hosts", 100, "BareMetalHosts per identity in the memory scenario.")
	flag.IntVar(&o.memIdentities, "memory-identities", 200, "Identities in the memory scenario, each with -memory-hosts hosts.")
	flag.IntVar(&o.identities, "identities", 50, "Identities in the identities and shared scenarios.")
	flag.DurationVar(&o.rotateFor, "rotate-for", 30*time.Second, "How long one identity is rotated every 5 s.")
	flag.IntVar(&o.sharedHosts, "shared-hosts", 100, "BareMetalHosts every identity sees in the shared scenario.")
	flag.BoolVar(&o.sharedDistinct, "shared-distinct", true, "Also run the shared scenario with a ServiceAccount per identity, to compare.")
	flag.DurationVar(&o.hostileWindow, "hostile-window", 3*time.Minute, "How long the hostile identity streams while the provider's memory is sampled.")
	flag.Parse()
	o.scenarios = map[string]bool{}
	for _, s := range strings.Split(*scenarios, ",") {
		o.scenarios[strings.TrimSpace(s)] = true
	}
	o.sizes = parseSizes("-sizes", *sizes)
	o.upstreamSizes = parseSizes("-upstream-sizes", *upstreamSizes)
	for _, m := range strings.Split(*modes, ",") {
		mode, ok := modeFlags[strings.TrimSpace(m)]
		if !ok {
			fmt.Fprintf(os.Stderr, "-modes: %q is none of in-cluster, remote, hostclaim\n", m)
			os.Exit(2)
		}
		o.modes = append(o.modes, mode)
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

// modeFlags are the -modes values.
var modeFlags = map[string]assocMode{"in-cluster": modeInCluster, "remote": modeRemote, "hostclaim": modeHostClaim}

// parseSizes reads a comma-separated list of positive sizes ("": none),
// exiting on a bad one.
func parseSizes(flagName, list string) []int {
	var sizes []int
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "%s: %q is not a positive number\n", flagName, s)
			os.Exit(2)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

func run(ctx context.Context, o options) error {
	if err := os.MkdirAll(o.out, 0o750); err != nil {
		return err
	}
	report := &report{}
	report.printf("# Scale, cost and crash consistency\n\nMeasured %s on %s (%d CPUs, %s/%s, %s) with `make bench-scale`.\n",
		time.Now().UTC().Format("2006-01-02"), hostName(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	results := filepath.Join(o.out, "results.md")
	// Each step first saves the figures so far: a run cut short (or
	// interrupted) keeps what it measured.
	progress := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "… "+format+"\n", args...)
		if err := os.WriteFile(results, []byte(report.String()), 0o600); err != nil {
			fmt.Fprintf(os.Stderr, "… cannot save %s: %v\n", results, err)
		}
	}
	// A failed scenario is reported where its figures would be, and the
	// others still run: hours of figures are not lost to one of them.
	var failures []error
	failed := func(what string, err error) {
		err = fmt.Errorf("%s: %w", what, err)
		failures = append(failures, err)
		report.printf("\n**%s**\n", err)
	}

	if o.scenarios["flow"] {
		// Both providers in the same run, alternating, so that the
		// machine's load drifts over both alike.
		var ours, upstream []flowResult
		for i := range o.flowRuns {
			for _, up := range []bool{false, true} {
				progress("flow run %d/%d, upstream %v", i+1, o.flowRuns, up)
				res, err := scenario(func(t testenv.T) (flowResult, error) { return runFlow(ctx, t, o.out, 6, o.rest, up) })
				if err != nil {
					failed(fmt.Sprintf("flow (upstream %v)", up), err)
					continue
				}
				if up {
					upstream = append(upstream, res)
				} else {
					ours = append(ours, res)
				}
			}
		}
		report.flow(ours, upstream)
	}
	if o.scenarios["association"] {
		// This provider's modes, then upstream CAPM3 at its sizes: one
		// table and one plot, every mode against its floor.
		type assocRun struct {
			mode assocMode
			n    int
		}
		var runs []assocRun
		for _, mode := range o.modes {
			for _, n := range o.sizes {
				runs = append(runs, assocRun{mode, n})
			}
		}
		for _, n := range o.upstreamSizes {
			runs = append(runs, assocRun{modeUpstream, n})
		}
		var results []associationResult
		for _, r := range runs {
			rest := time.Duration(0)
			// Upstream's requests at rest are the flow's: without a
			// workload cluster it looks for Nodes that never come.
			if r.n == o.restAtSizes && r.mode != modeUpstream {
				rest = o.rest
			}
			progress("association: %d machines, %s", r.n, r.mode)
			res, err := scenario(func(t testenv.T) (associationResult, error) {
				switch r.mode {
				case modeHostClaim:
					return runHostClaimAssociation(ctx, t, o.out, r.n, rest, o.provisionHold)
				case modeUpstream:
					return runUpstreamAssociation(ctx, t, o.out, r.n, rest, o.provisionHold)
				default:
					return runAssociation(ctx, t, o.out, r.n, r.mode == modeRemote, rest, o.provisionHold)
				}
			})
			if err != nil {
				failed(fmt.Sprintf("association of %d (%s)", r.n, r.mode), err)
				continue
			}
			results = append(results, res)
		}
		report.association(results, o.provisionHold)
		report.binderRows(results)
		if err := os.WriteFile(filepath.Join(o.out, "association.svg"), []byte(associationPlot(results)), 0o600); err != nil {
			return err
		}
	}
	if o.scenarios["binder-memory"] {
		progress("binder memory: %d hosts, %d claims", o.binderHosts, o.binderHosts)
		res, err := scenario(func(t testenv.T) (binderMemoryResult, error) {
			return runBinderMemory(ctx, t, o.out, o.binderHosts, o.binderHosts)
		})
		if err != nil {
			failed("binder memory", err)
		} else {
			report.rows("The HostClaim binder's memory", res.rows())
		}
	}
	if o.scenarios["memory"] {
		progress("memory: %d identities × %d hosts", o.memIdentities, o.memHosts)
		res, err := scenario(func(t testenv.T) (memoryResult, error) { return runMemory(ctx, t, o.memHosts, o.memIdentities) })
		if err != nil {
			failed("memory", err)
		} else {
			report.rows("Memory and watches", res.rows())
		}
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
	fmt.Print(report.String())
	if err := os.WriteFile(results, []byte(report.String()), 0o600); err != nil {
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

func (r *report) association(results []associationResult, provisionHold time.Duration) {
	r.printf("\n## Association against the floor\n\nN Metal3Machines created at once against N available hosts; the floor does only the writes an " +
		"association needs (user-data Secret, host claim, machine status) with the provider's workers (10) and client limits (per kind: 100 QPS, burst 200 on the management cluster; 20 QPS, burst 30 on a pool); " +
		"the contract floor adds the finalizer before the claim and the read of the bootstrap data. Both are timed, as the provider, from the first Metal3Machine's creation. ")
	if provisionHold > 0 {
		r.printf("The host driver keeps each host provisioning for %s (-provision-hold): the association alone is measured.\n\n", provisionHold)
	} else {
		r.printf("The host driver provisions each host at once, as BMO's test mode: the provider's records of the hosts provisioned share the window.\n\n")
	}
	var rows [][]string
	for _, a := range results {
		perAssoc := (a.Management.Reads + a.Management.Writes + a.Pool.Reads + a.Pool.Writes) / float64(a.Machines)
		contract, contractRatio, reconcilesPer := "—", "—", "—"
		if a.Reconciles > 0 {
			reconcilesPer = fmt.Sprintf("%.1f", a.Reconciles/float64(a.Machines))
		}
		if a.ContractFloor > 0 {
			contract = fmt.Sprintf("%.1f s", a.ContractFloor.Seconds())
			contractRatio = fmt.Sprintf("%.2f×", a.Associated.Seconds()/a.ContractFloor.Seconds())
		}
		rows = append(rows, []string{
			string(a.Mode), strconv.Itoa(a.Machines), fmt.Sprintf("%.1f s", a.Associated.Seconds()), fmt.Sprintf("%.1f s", a.Floor.Seconds()),
			fmt.Sprintf("%.2f×", a.Ratio()), contract, contractRatio, fmt.Sprintf("%.1f", perAssoc), reconcilesPer,
			fmt.Sprintf("%s / %s", a.Management, a.Pool), trim(a.Management.Conflicts + a.Pool.Conflicts), watchesString(a.Watches),
		})
	}
	r.table(r, []string{"mode", "N", "associated", "floor", "ratio", "contract floor", "ratio to it", "requests per association",
		"reconciles per association", "management / pool (reads / writes)", "conflicts", "most open watches per kind (hosts' server)"}, rows)
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
			r.printf("\nAt rest (%s, N = %d, %s), per minute: management %s; pool %s.\n", a.RestWindow.Round(time.Second), a.Machines, a.Mode,
				a.AtRestManagement.AtRest(), a.AtRestPool.AtRest())
		}
	}
	r.associationCPU(results)
	r.printf("\n![association time against machines](association.svg)\n")
}

func watchesString(w map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(w)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, w[k]))
	}
	return strings.Join(parts, ", ")
}
