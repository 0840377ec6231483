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
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// TestFloorMachinesWait: a floor worker goes on once its machine exists,
// and gets the creation's error when the creations stopped before it,
// rather than waiting for ever.
func TestFloorMachinesWait(t *testing.T) {
	const n, failing = 20, 13
	refused := errors.New("refused")
	c := fake.NewClientBuilder().WithScheme(env.Scheme()).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetName() == floorMachineName(failing) {
				return refused
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	machines := startFloorMachines(t.Context(), c, n, floorMachineIn(floorNamespace))
	for i := range n {
		err := machines.wait(i)
		exists := c.Get(t.Context(), client.ObjectKey{Namespace: floorNamespace, Name: floorMachineName(i)}, &infrav1.Metal3Machine{}) == nil
		switch {
		case i == failing && !errors.Is(err, refused):
			t.Errorf("machine %d: wait = %v, want the creation's error", i, err)
		case err == nil && !exists:
			t.Errorf("machine %d: wait returned before it was created", i)
		case err != nil && exists:
			t.Errorf("machine %d exists, but wait = %v", i, err)
		}
	}
	if err := machines.finish(); !errors.Is(err, refused) {
		t.Errorf("finish = %v, want the creation's error", err)
	}
}

// TestCountRequestsWatchesApart: watches count among the reads (so that
// totals compare with every earlier run) and apart, so that a renewal at
// rest is told from a read the provider chose to make.
func TestCountRequestsWatchesApart(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	var events []testenv.AuditEvent
	for i, raw := range []string{
		`{"stage":"ResponseStarted","verb":"watch","objectRef":{"resource":"baremetalhosts"},"responseStatus":{"code":200}}`,
		`{"stage":"ResponseComplete","verb":"watch","objectRef":{"resource":"baremetalhosts"},"responseStatus":{"code":200}}`,
		`{"stage":"ResponseComplete","verb":"get","objectRef":{"resource":"secrets"},"responseStatus":{"code":200}}`,
		`{"stage":"ResponseComplete","verb":"patch","objectRef":{"resource":"metal3machines"},"responseStatus":{"code":409}}`,
		`{"stage":"ResponseComplete","verb":"get","requestURI":"/healthz","responseStatus":{"code":200}}`,
	} {
		var e testenv.AuditEvent
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			t.Fatal(err)
		}
		e.RequestReceivedTimestamp = start.Add(time.Duration(i) * time.Second)
		events = append(events, e)
	}
	got := countRequests(events, start, start.Add(time.Minute))
	if got.Reads != 2 || got.Watches != 1 || got.Writes != 1 || got.Conflicts != 1 || got.Probes != 1 {
		t.Errorf("counted %+v, want 2 reads of which 1 watch, 1 write (a conflict), 1 probe", got)
	}
	if rest := got.AtRest(); !strings.Contains(rest, "watch renewals 1") {
		t.Errorf("at rest reads %q, which does not name the watch renewal", rest)
	}
}
