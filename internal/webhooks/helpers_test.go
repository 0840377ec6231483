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

package webhooks

import (
	"errors"
	"sort"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// testNamespace is the namespace of every object in these tests.
const testNamespace = "tenant-a"

// expectFieldErrors asserts the outcome of a validation. With no wantFields
// the object must be accepted. Otherwise err must be an Invalid API error
// whose causes name exactly the fields in wantFields (so a case cannot pass
// because of some unrelated mistake in its fixture), and whose message names
// each of them, as the user will read it.
func expectFieldErrors(t *testing.T, err error, wantFields ...string) {
	t.Helper()
	if len(wantFields) == 0 {
		if err != nil {
			t.Fatalf("expected the object to be accepted, got: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("expected rejection naming %v, got none", wantFields)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("expected an Invalid API error, got %T: %v", err, err)
	}
	for _, f := range wantFields {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error does not name %s: %v", f, err)
		}
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("error carries no field details: %v", err)
	}
	got := map[string]bool{}
	for _, c := range status.Status().Details.Causes {
		got[c.Field] = true
	}
	want := map[string]bool{}
	for _, f := range wantFields {
		want[f] = true
	}
	if !equalSets(got, want) {
		t.Errorf("error names fields %v, want exactly %v; error: %v", keys(got), keys(want), err)
	}
}

func equalSets(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
