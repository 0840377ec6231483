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
	"context"
	"flag"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
)

// seed replays a run's kill instants: the test logs the seed it used.
var seed = flag.Uint64("chaos.seed", 0, "seed of the kill instants; 0 draws one")

// TestCrashConsistency runs 20 machines of 4 tenants (two sharing a pool
// namespace) while the provider is killed 5 times, and checks every
// invariant of the report.
func TestCrashConsistency(t *testing.T) {
	// Cluster API's controllers run in this process; their logs would
	// drown the report.
	ctrl.SetLogger(logr.Discard())
	opts := Options{
		Machines: 20, Tenants: 4, Kills: 5,
		// Long enough for a restarted manager to sync its caches and act,
		// short enough that the kills land in association and provisioning.
		KillInterval: Range{Min: time.Second, Max: 4 * time.Second},
		Seed:         *seed,
	}
	if opts.Seed == 0 {
		opts.Seed = uint64(time.Now().UnixNano())
	}
	t.Logf("chaos seed %d (replay with -chaos.seed=%d)", opts.Seed, opts.Seed)

	report, err := Run(context.Background(), t, opts)
	t.Logf("\n%s", report.String())
	if err != nil {
		t.Fatalf("chaos run: %v", err)
	}
	if !report.Converged {
		t.Errorf("the machines did not converge")
	}
	if report.Kills != opts.Kills {
		t.Errorf("%d kills done, want %d", report.Kills, opts.Kills)
	}
	if report.ProvisionedOnce != opts.Machines {
		t.Errorf("%d of %d machines provisioned exactly once", report.ProvisionedOnce, opts.Machines)
	}
	for _, inv := range Invariants {
		if n := report.Count(inv); n != 0 {
			t.Errorf("%s: %d violations", inv, n)
		}
	}
}
