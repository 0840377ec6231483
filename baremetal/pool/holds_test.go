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

package pool

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestHolds(t *testing.T) {
	type step struct {
		op       string // hold, claimed (Taken), drop
		host     string
		consumer string
		version  string // the cached host's resourceVersion (hold), the written one (claimed)
		want     bool   // hold's answer
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "a claim being sent holds the host against others, not its own", steps: []step{
			{"hold", "h0", "a", "1", true}, {"hold", "h0", "b", "1", false}, {"hold", "h0", "a", "1", true}, {"hold", "h1", "b", "1", true},
		}},
		{name: "a written claim holds until the cache shows it", steps: []step{
			{"hold", "h0", "a", "1", true}, {"claimed", "h0", "a", "5", false},
			{"hold", "h0", "b", "4", false}, // the cache lags the claim
			{"hold", "h0", "b", "5", true},  // the cache tells the truth now
		}},
		{name: "a released host is free once the cache is past the claim", steps: []step{
			{"hold", "h0", "a", "1", true}, {"claimed", "h0", "a", "5", false}, {"hold", "h0", "b", "9", true},
		}},
		{name: "a dropped hold frees the host", steps: []step{
			{"hold", "h0", "a", "1", true}, {"drop", "h0", "a", "", false}, {"hold", "h0", "b", "1", true},
		}},
		{name: "only the holder drops its hold", steps: []step{
			{"hold", "h0", "a", "1", true}, {"drop", "h0", "b", "", false}, {"hold", "h0", "b", "1", false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims := &Holds[string]{}
			for i, s := range tt.steps {
				switch s.op {
				case "drop":
					claims.Drop(s.host, types.UID(s.consumer))
				case "claimed":
					claims.Taken(s.host, types.UID(s.consumer), s.version)
				default:
					if got := claims.Hold(s.host, types.UID(s.consumer), s.version); got != s.want {
						t.Fatalf("step %d: hold(%s, %s, %s) = %v, want %v", i, s.host, s.consumer, s.version, got, s.want)
					}
				}
			}
		})
	}
	var none *Holds[string]
	if !none.Hold("h0", "a", "1") || !none.Hold("h0", "b", "1") {
		t.Error("without a claim set every host may be tried")
	}
}

// TestHoldsTakenBy: a consumer finds the host its take wrote (before the
// cache shows it), not one it only holds, and never another consumer's.
func TestHoldsTakenBy(t *testing.T) {
	holds := &Holds[string]{}
	holds.Hold("h0", "a", "1")
	if _, ok := holds.TakenBy("a"); ok {
		t.Fatal("a hold being sent is not a host taken")
	}
	holds.Taken("h0", "a", "5")
	if host, ok := holds.TakenBy("a"); !ok || host != "h0" {
		t.Errorf("TakenBy(a) = %q, %v; want h0", host, ok)
	}
	if _, ok := holds.TakenBy("b"); ok {
		t.Error("b took nothing")
	}
}

func TestCacheCaughtUp(t *testing.T) {
	tests := []struct {
		seen, written string
		want          bool
	}{
		{"10", "10", true},
		{"11", "10", true},
		{"9", "10", false},
		{"100", "99", true}, // numerically, not as strings
		{"abc", "abc", true},
		{"abd", "abc", false},
		{"", "10", false},
	}
	for _, tt := range tests {
		if got := CacheCaughtUp(tt.seen, tt.written); got != tt.want {
			t.Errorf("CacheCaughtUp(%q, %q) = %v, want %v", tt.seen, tt.written, got, tt.want)
		}
	}
}
