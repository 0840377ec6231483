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
	"testing"
)

func TestParseProcStat(t *testing.T) {
	for _, tc := range []struct {
		name        string
		stat        string
		busy, total uint64
		wantErr     bool
	}{
		{
			name: "idle and iowait are not busy",
			stat: "cpu  100 5 50 1000 20 3 2 7 0 0\ncpu0 50 2 25 500 10 1 1 3 0 0\n",
			busy: 100 + 5 + 50 + 3 + 2 + 7, total: 100 + 5 + 50 + 1000 + 20 + 3 + 2 + 7,
		},
		{
			// A host that runs virtual machines: their time is in user and nice already.
			name: "guest time is not counted twice",
			stat: "cpu  100 5 50 1000 20 3 2 0 40 4\n",
			busy: 100 + 5 + 50 + 3 + 2, total: 100 + 5 + 50 + 1000 + 20 + 3 + 2,
		},
		{
			name: "an older kernel without steal",
			stat: "cpu  100 5 50 1000 20 3 2\n",
			busy: 100 + 5 + 50 + 3 + 2, total: 100 + 5 + 50 + 1000 + 20 + 3 + 2,
		},
		{name: "a per-CPU line first", stat: "cpu0 1 2 3 4 5\n", wantErr: true},
		{name: "not a number", stat: "cpu  1 x 3 4 5\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			busy, total, err := parseProcStat(tc.stat)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if busy != tc.busy || total != tc.total {
				t.Errorf("busy %d total %d, want %d %d", busy, total, tc.busy, tc.total)
			}
		})
	}
}

func TestParsePidStat(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stat    string
		comm    string
		ticks   uint64
		wantErr bool
	}{
		{
			name: "utime and stime summed",
			stat: "4242 (kube-apiserver) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1500 250 0 0 20 0 12 0 100 0\n",
			comm: "kube-apiserver", ticks: 1750,
		},
		{
			// A process may name itself anything: the fields follow the last ')'.
			name: "a name with spaces and parentheses",
			stat: "7 (a) b (c)) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 5 0\n",
			comm: "a) b (c)", ticks: 7,
		},
		{name: "cut short", stat: "7 (etcd) S 1 2 3\n", wantErr: true},
		{name: "no name", stat: "7 etcd S\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			comm, ticks, err := parsePidStat(tc.stat)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if comm != tc.comm || ticks != tc.ticks {
				t.Errorf("got %q %d, want %q %d", comm, ticks, tc.comm, tc.ticks)
			}
		})
	}
}

func TestCPUUseBetween(t *testing.T) {
	before := cpuSample{busy: 1000, total: 4000, byRole: map[string]uint64{roleAPIServers: 500, roleProvider: 100}}
	after := cpuSample{busy: 1300, total: 4400, byRole: map[string]uint64{roleAPIServers: 750, roleProvider: 130, roleBinder: 20}}
	u := cpuUseBetween(before, after)
	if u.Busy != 0.75 {
		t.Errorf("busy %v, want 0.75", u.Busy)
	}
	// A role first seen in the second sample started in the window.
	for role, want := range map[string]float64{roleAPIServers: 2.5, roleProvider: 0.3, roleBinder: 0.2} {
		if u.Seconds[role] != want {
			t.Errorf("%s: %v s, want %v", role, u.Seconds[role], want)
		}
	}
	if got := eachWindow([]cpuUse{{}, u}, func(u cpuUse) string { return "x" }); got != "— / x" {
		t.Errorf("eachWindow: %q, want %q", got, "— / x")
	}
}
