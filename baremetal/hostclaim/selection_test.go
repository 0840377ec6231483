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

package hostclaim

import (
	"slices"
	"strings"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type hostOpt func(*bmov1alpha1.BareMetalHost)

func host(nsName string, opts ...hostOpt) bmov1alpha1.BareMetalHost {
	ns, name, _ := strings.Cut(nsName, "/")
	h := bmov1alpha1.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}, Annotations: map[string]string{}},
		Status:     bmov1alpha1.BareMetalHostStatus{Provisioning: bmov1alpha1.ProvisionStatus{State: bmov1alpha1.StateAvailable}},
	}
	for _, opt := range opts {
		opt(&h)
	}
	return h
}

func state(s bmov1alpha1.ProvisioningState) hostOpt {
	return func(h *bmov1alpha1.BareMetalHost) { h.Status.Provisioning.State = s }
}
func annotate(k, v string) hostOpt {
	return func(h *bmov1alpha1.BareMetalHost) { h.Annotations[k] = v }
}
func consumed(h *bmov1alpha1.BareMetalHost) {
	h.Spec.ConsumerRef = &corev1.ObjectReference{Name: "other"}
}
func broken(h *bmov1alpha1.BareMetalHost) {
	h.Status.OperationalStatus = bmov1alpha1.OperationalStatusError
	h.Status.ErrorMessage = "boom"
}
func claim(opts ...func(*bmov1alpha1.HostClaim)) *bmov1alpha1.HostClaim {
	c := &bmov1alpha1.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "c", UID: "uid-c", Annotations: map[string]string{}}}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

func names(hosts []*bmov1alpha1.BareMetalHost) []string {
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		out = append(out, h.Namespace+"/"+h.Name)
	}
	return out
}

// TestSelect covers what only the binder's caller decides: the admitted
// namespaces, inNamespace, reuse keys scoped by namespace, and the words a
// tenant reads. The rules both modes share are in pool's TestPoolRules.
func TestSelect(t *testing.T) {
	withKey := func(key string) func(*bmov1alpha1.HostClaim) {
		return func(c *bmov1alpha1.HostClaim) { c.Annotations[NodeReuseKeyAnnotation] = key }
	}
	tests := []struct {
		name          string
		claim         *bmov1alpha1.HostClaim
		hosts         []bmov1alpha1.BareMetalHost
		admitted      []string
		want          []string
		wantWait      string
		wantSummary   []string
		wantErrSubstr string
	}{
		{
			name:     "available hosts of admitted namespaces, by namespace and name",
			claim:    claim(),
			hosts:    []bmov1alpha1.BareMetalHost{host("p2/a"), host("p1/b"), host("p1/a"), host("other/a")},
			admitted: []string{"p1", "p2"},
			want:     []string{"p1/a", "p1/b", "p2/a"},
		},
		{
			name:        "unavailable hosts are skipped and counted",
			claim:       claim(),
			hosts:       []bmov1alpha1.BareMetalHost{host("p/a", consumed), host("p/b", broken), host("p/c", state(bmov1alpha1.StateInspecting)), host("p/d", consumed)},
			admitted:    []string{"p"},
			wantSummary: []string{"none of the 4 hosts", "(p)", "2 in use", "1 inspecting", "1 reporting an error"},
		},
		{
			name:        "no admitted namespace",
			claim:       claim(),
			hosts:       []bmov1alpha1.BareMetalHost{host("p/a")},
			admitted:    nil,
			wantSummary: []string{"no host in the admitted namespaces"},
		},
		{
			name:     "inNamespace narrows the admitted namespaces",
			claim:    claim(func(c *bmov1alpha1.HostClaim) { c.Spec.HostSelector.InNamespace = "p2" }),
			hosts:    []bmov1alpha1.BareMetalHost{host("p1/a"), host("p2/a")},
			admitted: []string{"p1", "p2"},
			want:     []string{"p2/a"},
		},
		{
			name:     "inNamespace not admitted gives nothing",
			claim:    claim(func(c *bmov1alpha1.HostClaim) { c.Spec.HostSelector.InNamespace = "p3" }),
			hosts:    []bmov1alpha1.BareMetalHost{host("p3/a")},
			admitted: []string{"p1"},
		},
		{
			name: "invalid selector is an error",
			claim: claim(func(c *bmov1alpha1.HostClaim) {
				c.Spec.HostSelector.MatchExpressions = []bmov1alpha1.HostSelectorRequirement{{Key: "x", Operator: "near"}}
			}),
			admitted:      []string{"p"},
			wantErrSubstr: "matchExpressions[0]",
		},
		{
			name:     "a host kept for another key is not offered",
			claim:    claim(withKey("md-1")),
			hosts:    []bmov1alpha1.BareMetalHost{host("p/a", annotate(KeptForAnnotation, "team-a/md-2")), host("p/b", annotate(KeptForAnnotation, "team-b/md-1")), host("p/c")},
			admitted: []string{"p"},
			want:     []string{"p/c"},
		},
		{
			name:     "a kept host is not offered to a claim without a key",
			claim:    claim(),
			hosts:    []bmov1alpha1.BareMetalHost{host("p/a", annotate(KeptForAnnotation, "team-a/md-1"))},
			admitted: []string{"p"},
		},
		{
			name:        "the claim waits for its kept host still deprovisioning",
			claim:       claim(withKey("md-1")),
			hosts:       []bmov1alpha1.BareMetalHost{host("p/a"), host("p/z", annotate(KeptForAnnotation, "team-a/md-1"), state(bmov1alpha1.StateDeprovisioning))},
			admitted:    []string{"p"},
			wantWait:    "p/z",
			wantSummary: []string{"waiting for host p/z", "deprovisioning"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(tt.claim, tt.hosts, tt.admitted)
			if tt.wantErrSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrSubstr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErrSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if gotNames := names(got.Candidates); !slices.Equal(gotNames, tt.want) && (len(gotNames) > 0 || len(tt.want) > 0) {
				t.Errorf("candidates = %v, want %v", gotNames, tt.want)
			}
			gotWait := ""
			if got.WaitFor != nil {
				gotWait = got.WaitFor.Namespace + "/" + got.WaitFor.Name
			}
			if gotWait != tt.wantWait {
				t.Errorf("wait for %q, want %q", gotWait, tt.wantWait)
			}
			summary := got.Summary()
			for _, want := range tt.wantSummary {
				if !strings.Contains(summary, want) {
					t.Errorf("summary %q does not say %q", summary, want)
				}
			}
		})
	}
}
