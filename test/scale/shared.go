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
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// sharedPoolNamespace is where every tenant's hosts are in the shared
// scenario: one pool namespace, seen by all of them.
const sharedPoolNamespace = "pool-shared"

// sharedResult is what identities cost whose Secrets, one per tenant
// namespace, all reach the same hosts: with the same kubeconfig (Distinct
// false), or, for comparison, each with a ServiceAccount of its own.
type sharedResult struct {
	Distinct          bool
	Identities, Hosts int
	// Accessors and IdentitiesConnected are the provider's gauges
	// capm3_remote_accessors_connected and
	// capm3_remote_identities_connected with every identity in use, and
	// AccessorsAfter the first once every identity is released.
	Accessors, IdentitiesConnected, AccessorsAfter int
	// ServerWatches are the watches of hosts the pool API server counts
	// with every identity in use, and ServerWatchesAfter once they are
	// released; MaxClientWatches the most the provider held open at once
	// for the pool namespace.
	ServerWatches, ServerWatchesAfter, MaxClientWatches int
	// AccessReviews are the SelfSubjectAccessReviews the pool API server
	// answered while the identities connected: one set per connection.
	AccessReviews int
	// HeapOne is the live heap the first identity adds, its hosts cached
	// and its watches delivered; HeapAll what all of them add.
	HeapOne, HeapAll float64
	// ConnectOthers is the time until every other identity was usable
	// once the first was.
	ConnectOthers time.Duration
}

// runShared creates identities tenants' Secrets, each in a namespace of its
// own, reaching hosts BareMetalHosts in one pool namespace: all with the
// same kubeconfig, or with distinct ServiceAccounts. It connects the first
// identity and measures it with its hosts cached and watched, then the
// others, as the controllers use them (HostAccess, then their two host
// watches), and counts what the pool API server sees; it ends by releasing
// every identity.
func runShared(ctx context.Context, t testenv.T, identities, hosts int, distinct bool) (sharedResult, error) {
	res := sharedResult{Distinct: distinct, Identities: identities, Hosts: hosts}
	f, err := startSharedFleet(ctx, t, identities, hosts, distinct)
	if err != nil {
		return res, err
	}
	if err := f.startManager(); err != nil {
		return res, err
	}
	accessorsBefore, err := providerMetric(connectedAccessorsMetric)
	if err != nil {
		return res, err
	}
	identitiesBefore, err := providerMetric(connectedIdentitiesMetric)
	if err != nil {
		return res, err
	}
	reviewsBefore, err := testenv.ServerMetric(ctx, f.pool.Config, "apiserver_request_total", `resource="selfsubjectaccessreviews"`, `verb="POST"`)
	if err != nil {
		return res, err
	}
	idle := settledHeap()

	// Every watcher of an identity hears of every host once.
	eventsPerIdentity := int64(hosts * len(f.watchers))
	if err := f.connect(f.ids[:1]); err != nil {
		return res, err
	}
	if err := pollUntil(f.ctx, 2*time.Minute, 20*time.Millisecond, "host events of the first identity", func() (bool, error) {
		return f.events.Load() >= eventsPerIdentity, nil
	}); err != nil {
		return res, err
	}
	one := settledHeap()

	start := time.Now()
	if err := f.connect(f.ids[1:]); err != nil {
		return res, err
	}
	res.ConnectOthers = time.Since(start)
	if err := pollUntil(f.ctx, 2*time.Minute, 20*time.Millisecond, "host events of every identity", func() (bool, error) {
		return f.events.Load() >= eventsPerIdentity*int64(identities), nil
	}); err != nil {
		return res, err
	}
	all := settledHeap()
	res.HeapOne, res.HeapAll = heapDelta(idle, one), heapDelta(idle, all)

	accessors, err := providerMetric(connectedAccessorsMetric)
	if err != nil {
		return res, err
	}
	connected, err := providerMetric(connectedIdentitiesMetric)
	if err != nil {
		return res, err
	}
	res.Accessors, res.IdentitiesConnected = int(accessors-accessorsBefore), int(connected-identitiesBefore)
	reviews, err := testenv.ServerMetric(ctx, f.pool.Config, "apiserver_request_total", `resource="selfsubjectaccessreviews"`, `verb="POST"`)
	if err != nil {
		return res, err
	}
	res.AccessReviews = int(reviews - reviewsBefore)
	if res.ServerWatches, err = serverWatches(ctx, f.pool.Config, "baremetalhosts"); err != nil {
		return res, err
	}
	res.MaxClientWatches = f.watches.maxPerKey()

	for _, id := range f.ids {
		if err := f.cache.Release(f.ctx, id.Key, nil); err != nil {
			return res, fmt.Errorf("release %s: %w", id.Key, err)
		}
	}
	after, err := providerMetric(connectedAccessorsMetric)
	if err != nil {
		return res, err
	}
	res.AccessorsAfter = int(after - accessorsBefore)
	// The server counts a watch until the provider's stream reset reaches
	// it; one still open after the wait is reported, not failed.
	err = pollUntil(ctx, 10*time.Second, 50*time.Millisecond, "host watches closed", func() (bool, error) {
		n, err := serverWatches(ctx, f.pool.Config, "baremetalhosts")
		res.ServerWatchesAfter = n
		return err == nil && n == 0, err
	})
	if err != nil && res.ServerWatchesAfter == 0 {
		return res, err
	}
	return res, nil
}

// startSharedFleet starts both API servers, creates hosts inspected hosts
// in sharedPoolNamespace and one identity Secret per tenant namespace, all
// holding one ServiceAccount's kubeconfig, or, if distinct, each its own
// ServiceAccount's, with the same Role.
func startSharedFleet(ctx context.Context, t testenv.T, identities, hosts int, distinct bool) (*tenantFleet, error) {
	f, err := startTenantFleet(ctx, t, 0, 0)
	if err != nil {
		return nil, err
	}
	var kubeconfig []byte
	for i := range identities {
		serviceAccount, tenant := "capm3-shared", fmt.Sprintf("tenant-%02d", i)
		if distinct {
			serviceAccount = fmt.Sprintf("capm3-%02d", i)
		}
		if distinct || kubeconfig == nil {
			kubeconfig = f.pool.ServiceAccountKubeconfig(t, sharedPoolNamespace, serviceAccount, time.Hour, testenv.HostProviderRules()...)
		}
		if err := f.addTenant(ctx, tenant, sharedPoolNamespace, serviceAccount, kubeconfig); err != nil {
			return nil, err
		}
	}
	if err := createInspectedHosts(ctx, f.pool.Client, []string{sharedPoolNamespace}, hosts); err != nil {
		return nil, err
	}
	f.hosts = hosts
	return f, nil
}

// connect asks for ids at once, as reconciles of all tenants do after a
// restart, and registers the host watches of each.
func (f *tenantFleet) connect(ids []identity.Identity) error {
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			errs[i] = pollUntil(f.ctx, 2*time.Minute, 50*time.Millisecond, "HostAccess of "+id.Key.String(), func() (bool, error) {
				if _, err := f.cache.HostAccess(f.ctx, id); err != nil {
					return false, err
				}
				err := f.watch(id.Key)
				return err == nil, err
			})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// The provider's gauges of connections and of the identities they serve.
const (
	connectedAccessorsMetric  = "capm3_remote_accessors_connected"
	connectedIdentitiesMetric = "capm3_remote_identities_connected"
)

// providerMetric reads an unlabelled gauge of the provider's metrics
// registry: the IdentityCache runs in this process.
func providerMetric(name string) (float64, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	for _, family := range families {
		if family.GetName() == name && len(family.GetMetric()) == 1 {
			return family.GetMetric()[0].GetGauge().GetValue(), nil
		}
	}
	return 0, fmt.Errorf("no metric %s", name)
}

// sharedRows are the figures of the same kubeconfig next to distinct
// credentials, for the Markdown table.
func sharedRows(same, distinct *sharedResult) (header []string, rows [][]string) {
	header = []string{""}
	results := []*sharedResult{}
	for _, r := range []*sharedResult{same, distinct} {
		if r == nil {
			continue
		}
		results = append(results, r)
		if r.Distinct {
			header = append(header, fmt.Sprintf("%d distinct ServiceAccounts", r.Identities))
		} else {
			header = append(header, fmt.Sprintf("%d Secrets, same kubeconfig", r.Identities))
		}
	}
	row := func(name string, value func(r *sharedResult) string) {
		cells := []string{name}
		for _, r := range results {
			cells = append(cells, value(r))
		}
		rows = append(rows, cells)
	}
	row("identities (tenant namespaces) / hosts they all see", func(r *sharedResult) string {
		return fmt.Sprintf("%d / %d", r.Identities, r.Hosts)
	})
	row("accessors (connections) / identities connected", func(r *sharedResult) string {
		return fmt.Sprintf("%d / %d", r.Accessors, r.IdentitiesConnected)
	})
	row("host watches the pool API server counts", func(r *sharedResult) string {
		return fmt.Sprintf("%d (provider side, most open at once: %d)", r.ServerWatches, r.MaxClientWatches)
	})
	row("access reviews the pool API server answered", func(r *sharedResult) string { return fmt.Sprint(r.AccessReviews) })
	row("time until the other identities are usable", func(r *sharedResult) string {
		return r.ConnectOthers.Round(time.Millisecond).String()
	})
	row("heap of the first identity, hosts cached", func(r *sharedResult) string { return kib(r.HeapOne) })
	row("heap of all identities, hosts cached", func(r *sharedResult) string {
		return fmt.Sprintf("%s (%.1f× the first)", kib(r.HeapAll), r.HeapAll/r.HeapOne)
	})
	row("heap per further identity", func(r *sharedResult) string {
		return kib((r.HeapAll - r.HeapOne) / float64(max(r.Identities-1, 1)))
	})
	row("after releasing all: accessors / host watches on the server", func(r *sharedResult) string {
		return fmt.Sprintf("%d / %d", r.AccessorsAfter, r.ServerWatchesAfter)
	})
	return header, rows
}
