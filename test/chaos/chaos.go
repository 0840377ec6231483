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

// Package chaos proves crash consistency (DESIGN.md § Invariants 8): while
// the machines of several tenants, two of them sharing a pool namespace,
// associate and provision, the provider's manager is killed with SIGKILL at
// random instants while it leads, and restarted; once every machine runs,
// no host is bound twice, no machine was provisioned twice, no Secret of
// ours is left without its consumer, no host is claimed by nobody, and
// every host's data is its own consumer's. Run is the scenario, shared by the test here (a
// small run, in `make test`) and the scale benchmark (a large one).
package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// Range is a duration drawn at random between Min and Max.
type Range struct{ Min, Max time.Duration }

func (r Range) draw(rng *rand.Rand) time.Duration {
	if r.Max <= r.Min {
		return r.Min
	}
	return r.Min + time.Duration(rng.Int64N(int64(r.Max-r.Min)))
}

// Options describe a chaos run.
type Options struct {
	// Machines across all tenants; a multiple of Tenants. Each tenant's
	// cluster has one control-plane Machine and the rest as workers.
	Machines int
	// Tenants, each with its own namespace and cluster; the first two share
	// one pool namespace, each other tenant has its own. Default 4.
	Tenants int
	// Kills is how many times the manager is killed and restarted.
	Kills int
	// KillInterval is how long the manager runs once it leads (after its
	// start, or once a restarted manager holds the leader election Lease)
	// before the next kill, drawn anew each time. Default 1–4 s.
	KillInterval Range
	// Seed makes the kill instants reproducible (the rest of the timing is
	// the machine's).
	Seed uint64
	// ConvergeTimeout bounds the wait, after the last restart, for every
	// machine to run. Default 10 minutes.
	ConvergeTimeout time.Duration
	// Environment to run in; nil starts one for the run, stopped when t
	// ends. Its first management cluster's provider is the one killed.
	Environment *env.Environment
}

func (o Options) withDefaults() (Options, error) {
	if o.Tenants == 0 {
		o.Tenants = 4
	}
	if o.KillInterval == (Range{}) {
		o.KillInterval = Range{Min: time.Second, Max: 4 * time.Second}
	}
	if o.ConvergeTimeout == 0 {
		o.ConvergeTimeout = 10 * time.Minute
	}
	switch {
	case o.Tenants < 1:
		return o, fmt.Errorf("chaos: %d tenants", o.Tenants)
	case o.Machines < o.Tenants || o.Machines%o.Tenants != 0:
		return o, fmt.Errorf("chaos: %d machines do not divide into %d tenants of at least one", o.Machines, o.Tenants)
	case o.Kills < 0 || o.KillInterval.Min < 0 || o.KillInterval.Max < o.KillInterval.Min:
		return o, fmt.Errorf("chaos: %d kills every %s–%s", o.Kills, o.KillInterval.Min, o.KillInterval.Max)
	}
	return o, nil
}

// tenant is one tenant of a run: its namespace and cluster, and the pool
// namespace its hosts are in.
type tenant struct {
	namespace, cluster, pool string
	machines                 int
	// plainWorkers: the workers have no dataTemplate, so that both ways of
	// binding (Secrets written before the claim, or rendered after it) are
	// killed in the middle of.
	plainWorkers bool
}

// runs numbers the runs of this process, so that runs sharing an
// environment use namespaces of their own.
var runs atomic.Int32

// plan lays out the tenants: the first two share a pool namespace, every
// other tenant has its own. Every cluster has the same name, so that
// tenants sharing a pool also share machine names. Every second tenant's
// workers take plain user data instead of rendering a dataTemplate.
func plan(opts Options) []tenant {
	prefix := fmt.Sprintf("chaos-%d", runs.Add(1))
	tenants := make([]tenant, opts.Tenants)
	for i := range tenants {
		pool := fmt.Sprintf("%s-pool-%d", prefix, i+1)
		if i < 2 && opts.Tenants > 1 {
			pool = prefix + "-pool-shared"
		}
		tenants[i] = tenant{
			namespace: fmt.Sprintf("%s-tenant-%d", prefix, i+1), cluster: "chaos", pool: pool,
			machines: opts.Machines / opts.Tenants, plainWorkers: i%2 == 1,
		}
	}
	return tenants
}

// Run runs the scenario and returns its report. The error says why the run
// could not complete (the environment, or machines that never converged);
// the report is filled in either case, as far as the run got, so that a
// run that did not converge still shows which invariant broke.
func Run(ctx context.Context, t testenv.T, opts Options) (Report, error) {
	t.Helper()
	started := time.Now()
	opts, err := opts.withDefaults()
	report := Report{Options: opts}
	if err != nil {
		return report, err
	}
	e := opts.Environment
	if e == nil {
		e = env.Start(t)
	}
	provider := e.Management.Provider
	if provider == nil {
		return report, errors.New("chaos: the environment's management cluster runs no provider process to kill")
	}
	tenants := plan(opts)
	poolNamespaces, tenantNamespaces := sets.New[string](), []string{}
	for _, tn := range tenants {
		poolNamespaces.Insert(tn.pool)
		tenantNamespaces = append(tenantNamespaces, tn.namespace)
	}

	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	history, err := watchHosts(watchCtx, e.Pool.Config, poolNamespaces)
	if err != nil {
		return report, err
	}
	retired, err := watchRetirements(watchCtx, e.Management.Config, tenantNamespaces)
	if err != nil {
		return report, err
	}
	identities, err := addPools(ctx, t, e, tenants)
	if err != nil {
		return report, err
	}
	t.Logf("chaos: %d hosts in %d pool namespaces registering", opts.Machines, poolNamespaces.Len())
	if err := waitHostsAvailable(ctx, e.Pool.Client, sets.List(poolNamespaces), opts.Machines, opts.ConvergeTimeout); err != nil {
		return report, err
	}
	report.Setup = time.Since(started)
	t.Logf("chaos: hosts available %s into the run; creating the clusters and killing", report.Setup.Round(time.Second))

	// The kills start with the first claim, however long the clusters'
	// creation takes on a slow machine: every invariant is about hosts, so
	// association, data rendering and provisioning must happen under them.
	chaosStarted := time.Now()
	killer := startKilling(ctx, e.Management.Client, provider, opts, history.firstClaim, chaosStarted)
	createErr := createClusters(ctx, t, e, tenants, identities)
	kills := killer.wait()
	report.Kills, report.KillsAt = len(kills.at), kills.at
	if err := errors.Join(createErr, kills.err); err != nil {
		return report, err
	}
	t.Logf("chaos: %d kills done in %s; waiting for %d machines to run", report.Kills,
		time.Since(chaosStarted).Round(time.Second), opts.Machines)

	lastRestart := time.Now()
	convergeErr := waitRunning(ctx, t, e, tenants, opts.ConvergeTimeout)
	report.Converged = convergeErr == nil
	report.TimeToConverge = time.Since(lastRestart)
	if !provider.Running() {
		convergeErr = errors.Join(convergeErr, errors.New("the provider exited on its own (its output tells why)"))
	}

	if report.Kills > 0 {
		report.ClaimedUnderKills, report.ProvisioningUnderKills = underKills(history.records(), chaosStarted.Add(kills.at[report.Kills-1]))
	}
	violations, once, checkErr := checkInvariants(ctx, e, history, retired, sets.List(poolNamespaces), tenantNamespaces, report.Converged)
	report.ProvisionedOnce = once
	report.Retired = len(retired.retired())
	report.Violations = withLog(violations, provider.Output())
	report.Duration = time.Since(started)
	return report, errors.Join(convergeErr, checkErr)
}

// underKills counts the hosts claimed, and those that entered provisioning,
// before the last kill: how much of the work the kills landed in.
func underKills(records []hostRecord, lastKill time.Time) (claimed, provisioning int) {
	for _, r := range records {
		if !r.claimed.IsZero() && r.claimed.Before(lastKill) {
			claimed++
		}
		if len(r.episodes) > 0 && r.episodes[0].at.Before(lastKill) {
			provisioning++
		}
	}
	return claimed, provisioning
}
