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
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// hostileResult is what one hostile identity cost the provider's process
// while another tenant provisioned.
type hostileResult struct {
	Window time.Duration
	// AnnotationBytes is the size of each host the hostile server sent;
	// Streamed how many it sent, Watches how many watches it was opened.
	AnnotationBytes int
	Streamed        int64
	Watches         int64
	BudgetMiB       int64
	LimitExceeded   int
	// Condition is the hostile Metal3Cluster's IdentityReady at the end.
	Condition        string
	RSSBefore        uint64
	RSSPeak, RSSLast uint64
	// RSSPeakFirstHalf and RSSPeakLastHalf are the peaks over the window's
	// halves, each holding one cut-off with the default backoff: flat if
	// the second does not exceed the first.
	RSSPeakFirstHalf, RSSPeakLastHalf uint64
	// Machines of the other tenant, and how long until they were Ready.
	Machines    int
	Provisioned time.Duration
}

// runHostile runs the provider (its binary, with its default flags) with a
// tenant whose identity points at an API server of its own that streams
// distinct hosts with large annotations without end, while another tenant
// provisions machines with the real Bare Metal Operator; it samples the
// provider's resident memory over window.
func runHostile(ctx context.Context, t testenv.T, window time.Duration, annotationBytes, machines int) (hostileResult, error) {
	res := hostileResult{Window: window, AnnotationBytes: annotationBytes, Machines: machines, BudgetMiB: hostaccess.DefaultMaxCachedBytes >> 20}
	mgmt := env.StartManagement(t, env.ManagementOptions{Name: "hostile"})
	mgmt.StartBMO(t, "baremetal-operator-system")
	c := mgmt.Client
	const good, hostileNS = "good", "hostile"
	for _, ns := range []string{good, hostileNS} {
		if err := env.CreateNamespace(ctx, c, ns); err != nil {
			return res, err
		}
	}
	if err := testenv.RegisterHosts(ctx, c, good, "host", machines); err != nil {
		return res, err
	}
	if err := pollUntil(ctx, 5*time.Minute, flowPoll, "hosts available", func() (bool, error) {
		return hostsInState(ctx, c, good, bmov1alpha1.StateAvailable, machines)
	}); err != nil {
		return res, err
	}
	pid := mgmt.Provider.Pid()
	var err error
	if res.RSSBefore, err = processRSS(pid); err != nil {
		return res, err
	}

	hostile := testenv.StartHostileAPIServer(t, annotationBytes)
	base := newClusterBase(hostileNS, "hostile")
	base.m3c.Spec.IdentityRef = &infrav1.IdentityRef{Name: "hostile-kubeconfig"}
	if err := createAll(ctx, c, append([]client.Object{testenv.IdentitySecret(hostileNS, "hostile-kubeconfig", hostile.Kubeconfig("hosts"))}, base.objects()...)); err != nil {
		return res, err
	}
	if err := createFlowCluster(ctx, c, good, good); err != nil {
		return res, err
	}
	started := time.Now()
	if err := c.Create(ctx, flowMachineDeployment(good, good, machines)); err != nil {
		return res, err
	}
	for elapsed := time.Duration(0); elapsed < window; elapsed = time.Since(started) {
		rss, err := processRSS(pid)
		if err != nil {
			return res, fmt.Errorf("the provider's memory (has it died?): %w", err)
		}
		res.RSSPeak, res.RSSLast = max(res.RSSPeak, rss), rss
		if elapsed > window/2 {
			res.RSSPeakLastHalf = max(res.RSSPeakLastHalf, rss)
		} else {
			res.RSSPeakFirstHalf = max(res.RSSPeakFirstHalf, rss)
		}
		if res.Provisioned == 0 {
			if ready, err := metal3MachinesWith(ctx, c, good, infrav1.ReadyCondition, machines); err != nil {
				return res, err
			} else if ready {
				res.Provisioned = time.Since(started)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	res.Streamed, res.Watches = hostile.Streamed.Load(), hostile.Watches.Load()
	events := &eventsv1.EventList{}
	if err := c.List(ctx, events, client.InNamespace(hostileNS)); err != nil {
		return res, err
	}
	for _, e := range events.Items {
		if e.Reason == "Identity"+infrav1.IdentityLimitExceededReason {
			res.LimitExceeded += max(1, int(e.DeprecatedCount))
			if e.Series != nil {
				res.LimitExceeded = max(res.LimitExceeded, int(e.Series.Count))
			}
		}
	}
	m3c := &infrav1.Metal3Cluster{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(base.m3c), m3c); err != nil {
		return res, err
	}
	if cond := conditions.Get(m3c, infrav1.IdentityReadyCondition); cond != nil {
		res.Condition = string(cond.Status) + "/" + cond.Reason + ": " + cond.Message
	}
	if res.Provisioned == 0 {
		return res, fmt.Errorf("the other tenant's %d machines were not Ready within %s", machines, window)
	}
	if !mgmt.Provider.Running() {
		return res, errors.New("the provider died")
	}
	return res, nil
}

func (r hostileResult) rows() [][2]string {
	mib := func(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
	return [][2]string{
		{"hostile server", fmt.Sprintf("streamed %d hosts of %d KiB each (%.1f GiB) over %d watches in %s",
			r.Streamed, r.AnnotationBytes>>10, float64(r.Streamed)*float64(r.AnnotationBytes)/(1<<30), r.Watches, r.Window)},
		{"identity cut off (LimitExceeded Events)", fmt.Sprintf("%d (budget %d MiB per set of credentials, the default)", r.LimitExceeded, r.BudgetMiB)},
		{"the hostile cluster's IdentityReady at the end", r.Condition},
		{"provider RSS before", mib(r.RSSBefore)},
		{"provider RSS peak (first half / second half of the window)", mib(r.RSSPeakFirstHalf) + " / " + mib(r.RSSPeakLastHalf)},
		{"provider RSS at the end", mib(r.RSSLast)},
		{fmt.Sprintf("other tenant's %d machines Ready", r.Machines), fmt.Sprintf("%.1f s", r.Provisioned.Seconds())},
	}
}

// processRSS is the resident memory of process pid.
func processRSS(pid int) (uint64, error) {
	file, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) == 3 && fields[0] == "VmRSS:" && fields[2] == "kB" {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for process %d", pid)
}
