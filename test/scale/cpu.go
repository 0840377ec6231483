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
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Where the CPU of the machine goes during a window of the benchmark. The
// API servers, etcd, the provider and the benchmark's clients share the
// machine's cores: when they are all busy, the API servers' share of them
// bounds how fast any client's requests are served, and a client that
// spends CPU of its own (decoding its watches, reconciling) takes it from
// them. The floors spend next to none. Read from /proc, as top does.

// userHZ is the unit of the CPU times in /proc (USER_HZ): 100 on every
// Linux architecture Go supports.
const userHZ = 100

// cpuRoles names the processes whose CPU is accounted for, by their
// command name (/proc/<pid>/comm), and the role each plays.
var cpuRoles = map[string]string{
	"kube-apiserver":  roleAPIServers,
	"etcd":            roleAPIServers,
	"capm3-manager":   roleProvider,
	"hostclaim-binde": roleBinder, // comm is cut at 15 bytes
	"upstream-capm3-": roleProvider,
}

const (
	roleAPIServers = "API servers and etcd"
	roleProvider   = "provider"
	roleBinder     = "binder"
	// roleBenchmark is this process: the floors' clients, the host driver
	// and the polling that sees the machines associated.
	roleBenchmark = "benchmark"
)

// cpuSample is the machine's CPU time, busy and in all, and each role's,
// at one moment, in clock ticks.
type cpuSample struct {
	busy, total uint64
	byRole      map[string]uint64
}

// sampleCPU reads the machine's and the roles' CPU times now. A process
// that exits between two samples is not accounted for: the benchmark's
// processes live as long as a run.
func sampleCPU() (cpuSample, error) {
	s := cpuSample{byRole: map[string]uint64{}}
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s, err
	}
	if s.busy, s.total, err = parseProcStat(string(stat)); err != nil {
		return s, err
	}
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return s, err
	}
	self := "/proc/" + strconv.Itoa(os.Getpid())
	for _, dir := range dirs {
		raw, err := os.ReadFile(filepath.Join(dir, "stat")) //nolint:gosec // a /proc entry the glob above listed
		if err != nil {
			continue // gone since the listing
		}
		comm, ticks, err := parsePidStat(string(raw))
		if err != nil {
			return s, fmt.Errorf("%s: %w", dir, err)
		}
		if role, ok := cpuRoles[comm]; ok {
			s.byRole[role] += ticks
		} else if dir == self {
			s.byRole[roleBenchmark] += ticks
		}
	}
	return s, nil
}

// parseProcStat returns the busy and total clock ticks of the machine's
// "cpu" line: total is user, nice, system, idle, iowait, irq, softirq and
// steal; busy all of them but idle and iowait. The guest times after them
// are counted in user and nice already.
func parseProcStat(stat string) (busy, total uint64, err error) {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	const counted = 8 // user … steal
	for i, f := range fields[1:min(len(fields), 1+counted)] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %q: %w", line, err)
		}
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, nil
}

// parsePidStat returns the command name of /proc/<pid>/stat and its user
// and system time in clock ticks. The name is in parentheses and may hold
// spaces and parentheses itself: the fields follow its last ')'.
func parsePidStat(stat string) (comm string, ticks uint64, err error) {
	open, closing := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || closing < open {
		return "", 0, fmt.Errorf("unexpected stat %q", stat)
	}
	comm = stat[open+1 : closing]
	// After the name: state (field 3), ..., utime (14), stime (15).
	fields := strings.Fields(stat[closing+1:])
	if len(fields) < 13 {
		return "", 0, fmt.Errorf("unexpected stat %q", stat)
	}
	for _, f := range fields[11:13] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return "", 0, fmt.Errorf("unexpected stat %q: %w", stat, err)
		}
		ticks += v
	}
	return comm, ticks, nil
}

// cpuUse is where the machine's CPU went during a window.
type cpuUse struct {
	// Busy is the share of the machine's CPU time in use, 0 to 1.
	Busy float64
	// Seconds is the CPU time of each role.
	Seconds map[string]float64
	// Cores is how many the machine has.
	Cores int
}

// measured reports whether the window was sampled.
func (u cpuUse) measured() bool { return u.Seconds != nil }

// cpuUseBetween is the CPU used from before to after.
func cpuUseBetween(before, after cpuSample) cpuUse {
	u := cpuUse{Seconds: map[string]float64{}, Cores: runtime.NumCPU()}
	if total := after.total - before.total; total > 0 {
		u.Busy = float64(after.busy-before.busy) / float64(total)
	}
	for role, ticks := range after.byRole {
		if ticks >= before.byRole[role] {
			u.Seconds[role] = float64(ticks-before.byRole[role]) / userHZ
		}
	}
	return u
}

// measureCPU runs do and returns where the machine's CPU went meanwhile.
func measureCPU(do func() error) (cpuUse, error) {
	before, err := sampleCPU()
	if err != nil {
		return cpuUse{}, err
	}
	if err := do(); err != nil {
		return cpuUse{}, err
	}
	after, err := sampleCPU()
	if err != nil {
		return cpuUse{}, err
	}
	return cpuUseBetween(before, after), nil
}

// associationCPU prints where the machine's CPU went in each association
// run's windows: the floor's, the contract floor's and the provider's.
func (r *report) associationCPU(results []associationResult) {
	var rows [][]string
	for _, a := range results {
		if !a.CPU.measured() {
			continue
		}
		windows := []cpuUse{a.FloorCPU, a.ContractFloorCPU, a.CPU}
		busy := func(u cpuUse) string { return fmt.Sprintf("%.0f%%", 100*u.Busy) }
		perAssociation := func(role string) func(cpuUse) string {
			return func(u cpuUse) string { return fmt.Sprintf("%.1f", 1000*u.Seconds[role]/float64(a.Machines)) }
		}
		rows = append(rows, []string{
			string(a.Mode), strconv.Itoa(a.Machines), eachWindow(windows, busy),
			eachWindow(windows, perAssociation(roleAPIServers)), eachWindow(windows, perAssociation(roleProvider)),
			eachWindow(windows, perAssociation(roleBinder)), eachWindow(windows, perAssociation(roleBenchmark)),
		})
	}
	if len(rows) == 0 {
		return
	}
	r.printf("\nWhere the machine's CPU went (%d cores, shared by every process of the run), in each window: floor / contract floor / "+
		"provider (— where not run). CPU milliseconds per association; the provider's and the binder's count in the floors' windows "+
		"too, as their watches see the floors' objects:\n\n", results[0].CPU.Cores)
	r.table(r, []string{"mode", "N", "machine busy", "API servers and etcd, ms", "provider, ms", "binder, ms", "benchmark (the floors' clients, the host driver), ms"}, rows)
}

// eachWindow formats one figure of each window, "—" for one not run.
func eachWindow(windows []cpuUse, format func(cpuUse) string) string {
	parts := make([]string, len(windows))
	for i, u := range windows {
		parts[i] = "—"
		if u.measured() {
			parts[i] = format(u)
		}
	}
	return strings.Join(parts, " / ")
}
