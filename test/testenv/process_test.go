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

package testenv

import (
	"strings"
	"testing"
)

// TestProcessKillAndRestart kills a process that ignores SIGTERM, as a
// controller in the middle of its work would be, and starts it again.
func TestProcessKillAndRestart(t *testing.T) {
	p := &Process{name: "sleeper", path: "/bin/sh", args: []string{"-c", "trap '' TERM; sleep 600"}}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })

	if err := p.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	if p.Running() {
		t.Fatalf("running after Kill returned")
	}
	if err := p.Kill(); err != nil {
		t.Errorf("killing an exited process: %v", err)
	}
	if err := p.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if !p.Running() || p.Runs() != 2 {
		t.Errorf("after Restart: running %t, runs %d; want running, 2 runs", p.Running(), p.Runs())
	}
	out := p.Output()
	for _, marker := range []string{"sleeper: run 1 starting", "sleeper: run 1 exited", "signal: killed", "sleeper: run 2 starting"} {
		if !strings.Contains(out, marker) {
			t.Errorf("output lacks %q:\n%s", marker, out)
		}
	}

	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	if err := p.Restart(); err == nil {
		t.Errorf("Restart after the test ended started the process again")
	}
}
