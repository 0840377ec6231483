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

package resourceversion

import "testing"

func TestNotOlder(t *testing.T) {
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
		if got := NotOlder(tt.seen, tt.written); got != tt.want {
			t.Errorf("NotOlder(%q, %q) = %v, want %v", tt.seen, tt.written, got, tt.want)
		}
	}
}
