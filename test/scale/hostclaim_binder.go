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
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

const (
	binderHostNamespace   = "pool-binder"   // the hosts of the binder's memory scenario
	binderTenantNamespace = "tenant-binder" // its claims
	// binderRestWindow is how long the binder's requests at rest are
	// counted once every claim is bound.
	binderRestWindow = time.Minute
)

// binderMemoryResult is what a pool of hosts, and claims bound to them,
// cost the HostClaim binder's process.
type binderMemoryResult struct {
	Hosts, Claims int
	// Bound is the time from creating the first claim until every claim
	// was bound and had its HardwareData copy.
	Bound time.Duration
	// Binding are the binder's requests until then.
	Binding requestCount
	// IdleRSS and IdleHeap are the process's before any host or claim,
	// RSS, HeapAlloc and HeapInuse once every claim is bound and the
	// binder is quiet, each read after its Go runtime collected garbage
	// (from its metrics: a collection cannot be forced from outside).
	IdleRSS, IdleHeap, RSS, HeapAlloc, HeapInuse uint64
	// AtRest is the binder's requests per minute over RestWindow, once it
	// is quiet.
	AtRest     requestCount
	RestWindow time.Duration
}

// runBinderMemory runs the binder as shipped on a pool server with hosts
// hosts as the Bare Metal Operator leaves them after inspection (their
// status, and a HardwareData each), in a namespace a HostDeployPolicy
// opens to a tenant namespace, then creates claims claims there, each with
// its user-data Secret, as the provider does, and measures the binder's
// memory once it has bound them all, and its requests at rest afterwards.
func runBinderMemory(ctx context.Context, t testenv.T, dir string, hosts, claims int) (binderMemoryResult, error) {
	res := binderMemoryResult{Hosts: hosts, Claims: claims}
	// Kept with the results, as the association's: what the binder did
	// at rest, say, is read there.
	audit := filepath.Join(dir, "binder-memory-pool-audit.log")
	if err := os.Remove(audit); err != nil && !os.IsNotExist(err) {
		return res, err
	}
	pool := testenv.Start(t, testenv.Options{Scheme: env.Scheme(), CRDDirectoryPaths: []string{testenv.BMOCRDPath(t)}, AuditLogPath: audit})
	for _, ns := range []string{binderHostNamespace, binderTenantNamespace} {
		if err := env.CreateNamespace(ctx, pool.Client, ns); err != nil {
			return res, err
		}
	}
	if err := admitClaims(ctx, pool.Client, binderHostNamespace, binderTenantNamespace); err != nil {
		return res, err
	}
	metricsAddr := testenv.FreeLoopbackAddr(t)
	binder := pool.StartHostClaimBinder(t, "--metrics-bind-address="+metricsAddr)
	metrics := "http://" + metricsAddr + "/metrics"
	if err := waitBinderWatching(ctx, audit); err != nil {
		return res, err
	}
	if err := waitCollected(ctx, metrics, time.Now()); err != nil {
		return res, err
	}
	var err error
	if res.IdleRSS, err = processRSS(binder.Pid()); err != nil {
		return res, err
	}
	if res.IdleHeap, err = processMetric(ctx, metrics, "go_memstats_heap_alloc_bytes"); err != nil {
		return res, err
	}

	if err := createInspectedHosts(ctx, pool.Client, []string{binderHostNamespace}, hosts); err != nil {
		return res, err
	}
	if err := parallel(hosts, hostCreateWorkers, func(i int) error { return createHardwareData(ctx, pool.Client, binderHostNamespace, i) }); err != nil {
		return res, err
	}
	started := time.Now()
	if err := parallel(claims, 8, func(i int) error { return createClaim(ctx, pool.Client, binderTenantNamespace, i) }); err != nil {
		return res, err
	}
	if err := pollUntil(ctx, 60*time.Minute, time.Second, "every claim bound", func() (bool, error) {
		// The binder's gauge first: listing thousands of claims every
		// second would load the API server the binder is measured on.
		bound, err := processMetric(ctx, metrics, "hostclaim_binder_claims_bound")
		if err != nil || bound < uint64(claims) {
			return false, err
		}
		return claimsBound(ctx, pool.Client, binderTenantNamespace, claims)
	}); err != nil {
		return res, err
	}
	bound := time.Now()
	res.Bound = bound.Sub(started)

	quiet := []quietLog{{audit, testenv.HostClaimBinderUser}}
	if err := waitQuiet(ctx, quiet); err != nil {
		return res, err
	}
	restStart := time.Now()
	time.Sleep(binderRestWindow)
	res.RestWindow = time.Since(restStart)
	// The heap is read once the Go runtime collected garbage at rest (it
	// does at least every two minutes), so that it is what the binder
	// keeps, not what it allocated while binding.
	if err := waitCollected(ctx, metrics, restStart); err != nil {
		return res, err
	}
	if res.RSS, err = processRSS(binder.Pid()); err != nil {
		return res, err
	}
	if res.HeapAlloc, err = processMetric(ctx, metrics, "go_memstats_heap_alloc_bytes"); err != nil {
		return res, err
	}
	if res.HeapInuse, err = processMetric(ctx, metrics, "go_memstats_heap_inuse_bytes"); err != nil {
		return res, err
	}
	events, err := testenv.ReadAuditLog(audit)
	if err != nil {
		return res, err
	}
	byBinder := filterUser(events, testenv.HostClaimBinderUser)
	res.Binding = countRequests(byBinder, started, bound)
	res.AtRest = countRequests(byBinder, restStart, restStart.Add(res.RestWindow)).perMinute(res.RestWindow)
	return res, nil
}

// createHardwareData creates the HardwareData the Bare Metal Operator
// writes next to the i-th host of namespace once it is inspected: the
// host's hardware details, under its name.
func createHardwareData(ctx context.Context, c client.Client, namespace string, i int) error {
	name := fmt.Sprintf("worker-%04d", i)
	hd := &bmov1alpha1.HardwareData{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       bmov1alpha1.HardwareDataSpec{HardwareDetails: inspectedStatus(namespace, name, i).HardwareDetails},
	}
	if err := c.Create(ctx, hd); err != nil {
		return fmt.Errorf("create HardwareData %s/%s: %w", namespace, name, err)
	}
	return nil
}

// createClaim creates the i-th claim of namespace and its user-data Secret,
// with what to provision, as the provider creates a machine's.
func createClaim(ctx context.Context, c client.Client, namespace string, i int) error {
	name := fmt.Sprintf("claim-%05d", i)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-user-data"},
		Data:       map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
	}
	if err := c.Create(ctx, secret); err != nil {
		return fmt.Errorf("create Secret %s/%s: %w", namespace, secret.Name, err)
	}
	claim := &bmov1alpha1.HostClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: bmov1alpha1.HostClaimSpec{
			PoweredOn: true, Image: floorImage(),
			UserData:    &corev1.SecretReference{Namespace: namespace, Name: secret.Name},
			ConsumerRef: &corev1.ObjectReference{APIVersion: infrav1.GroupVersion.String(), Kind: "Metal3Machine", Namespace: "cluster", Name: name},
		},
	}
	if err := c.Create(ctx, claim); err != nil {
		return fmt.Errorf("create HostClaim %s/%s: %w", namespace, name, err)
	}
	return nil
}

// claimsBound reports whether want claims of namespace are bound and point
// at their HardwareData copy.
func claimsBound(ctx context.Context, c client.Client, namespace string, want int) (bool, error) {
	claims := &bmov1alpha1.HostClaimList{}
	if err := c.List(ctx, claims, client.InNamespace(namespace)); err != nil {
		return false, err
	}
	n := 0
	for i := range claims.Items {
		claim := &claims.Items[i]
		if meta.IsStatusConditionTrue(claim.Status.Conditions, bmov1alpha1.AssociatedCondition) && claim.Status.HardwareData != nil {
			n++
		}
	}
	return n >= want, nil
}

// waitCollected waits until the process behind metrics finished a garbage
// collection after since.
func waitCollected(ctx context.Context, metrics string, since time.Time) error {
	return pollUntil(ctx, 3*time.Minute, 5*time.Second, "a garbage collection at rest", func() (bool, error) {
		last, err := processMetric(ctx, metrics, "go_memstats_last_gc_time_seconds")
		return last > uint64(since.Unix()), err
	})
}

// processMetric reads an unlabelled metric of a process's Prometheus
// endpoint (plain HTTP on loopback), such as its Go runtime's heap.
func processMetric(ctx context.Context, url, name string) (uint64, error) {
	var value float64
	found := false
	err := testenv.MetricLines(ctx, http.DefaultClient, url, func(line string) error {
		if v, ok := strings.CutPrefix(line, name+" "); ok && !found {
			f, err := strconv.ParseFloat(v, 64)
			value, found = f, true
			return err
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("%s: no metric %s", url, name)
	}
	return uint64(value), nil
}

// rows are the scenario's figures for the Markdown table.
func (r binderMemoryResult) rows() [][2]string {
	perPair := func(total, idle uint64) string {
		return kib(float64(int64(total)-int64(idle)) / float64(max(r.Hosts, r.Claims)))
	}
	return [][2]string{
		{"hosts / claims bound", fmt.Sprintf("%d / %d", r.Hosts, r.Claims)},
		{"time until every claim is bound", r.Bound.Round(time.Millisecond).String()},
		{"binder's requests until then (reads / writes), per claim", fmt.Sprintf("%s, %.1f / %.1f per claim (conflicts %s)",
			r.Binding, r.Binding.Reads/float64(r.Claims), r.Binding.Writes/float64(r.Claims), trim(r.Binding.Conflicts))},
		{"RSS of the binder, idle → all bound", fmt.Sprintf("%s → %s (%s per host and its claim)", mib(r.IdleRSS), mib(r.RSS), perPair(r.RSS, r.IdleRSS))},
		{"Go heap of the binder, idle → all bound (in use at the end)", fmt.Sprintf("%s → %s (%s) (%s per host and its claim)",
			mib(r.IdleHeap), mib(r.HeapAlloc), mib(r.HeapInuse), perPair(r.HeapAlloc, r.IdleHeap))},
		{fmt.Sprintf("binder's requests at rest, per minute (reads / writes), over %s", r.RestWindow.Round(time.Second)),
			r.AtRest.AtRest() + " (target 0)"},
	}
}

// binderRows reports the binder's side of the HostClaim association runs:
// its requests to the pool during the association and at rest.
func (r *report) binderRows(results []associationResult) {
	var rows [][]string
	var last *associationResult
	for i := range results {
		a := &results[i]
		if a.Mode != modeHostClaim {
			continue
		}
		last = a
		rest := "not measured"
		if a.RestWindow > 0 {
			rest = a.AtRestBinder.AtRest()
		}
		rows = append(rows, []string{
			strconv.Itoa(a.Machines), a.Binder.String(),
			fmt.Sprintf("%.1f / %.1f", a.Binder.Reads/float64(a.Machines), a.Binder.Writes/float64(a.Machines)),
			trim(a.Binder.Conflicts), rest,
		})
	}
	if last == nil {
		return
	}
	r.printf("\n## The HostClaim binder during association\n\nThe binder as shipped (4 workers, no client rate limit) on the pool server, " +
		"binding the claims of the HostClaim runs above; requests from the pool's audit log.\n\n")
	r.table(r, []string{"N", "binder's requests (reads / writes)", "per claim (reads / writes)", "conflicts", "at rest, per minute (reads / writes)"}, rows)
	r.printf("\nThe binder's requests of the last run (N = %d): %s.\n", last.Machines, last.Binder.Top(12))
}
