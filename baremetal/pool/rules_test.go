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

package pool_test

import (
	"maps"
	"slices"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/selection"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// consumerAsk is what a consumer asks, in neither mode's words.
type consumerAsk struct {
	matchLabels   map[string]string
	expressions   []pool.Requirement
	failureDomain string
}

// hostMode is one mode's caller of the pool's rules, and the way that mode
// marks a host kept for node reuse.
type hostMode struct {
	name string
	// keep marks host kept for the consumer (mine) or for another owner of
	// the consumer's tenant.
	keep   func(host *bmov1alpha1.BareMetalHost, mine bool)
	choose func(t *testing.T, hosts []bmov1alpha1.BareMetalHost, ask consumerAsk) *pool.Selection
	// spreads: equal hosts come in a per-consumer order, not by name.
	spreads bool
}

const (
	poolNamespace = "pool"
	tenant        = "tenant-a"
	cluster       = tenant + "/c1"
)

// The two callers every rule runs through: direct mode's
// hostbinding.Choose for a Metal3Machine, and the binder's hostclaim.Select
// for a HostClaim (as the provider's claim binding writes it).
var hostModes = []hostMode{
	{
		name: "direct (Metal3Machine takes a BareMetalHost)",
		keep: func(host *bmov1alpha1.BareMetalHost, mine bool) {
			owner := map[bool]string{true: "md-workers", false: "md-big"}[mine]
			host.Labels[hostbinding.NodeReuseLabel] = owner
			host.Annotations[hostbinding.NodeReuseClusterAnnotation] = cluster
		},
		choose: func(t *testing.T, hosts []bmov1alpha1.BareMetalHost, ask consumerAsk) *pool.Selection {
			t.Helper()
			sel := &infrav1.HostSelector{MatchLabels: ask.matchLabels}
			for _, e := range ask.expressions {
				sel.MatchExpressions = append(sel.MatchExpressions,
					infrav1.HostSelectorRequirement{Key: e.Key, Operator: selection.Operator(e.Operator), Values: e.Values})
			}
			machine := &infrav1.Metal3Machine{
				ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "m", UID: "uid-m"},
				Spec:       infrav1.Metal3MachineSpec{HostSelector: sel},
			}
			reuse := hostbinding.Reuse{Owner: "md-workers", Cluster: cluster, LiveOwners: []string{"md-workers", "md-big"}}
			chosen, err := hostbinding.Choose(hosts, machine, ask.failureDomain, reuse)
			if err != nil {
				t.Fatal(err)
			}
			return chosen
		},
		spreads: true,
	},
	{
		name: "HostClaim (the binder binds a claim)",
		keep: func(host *bmov1alpha1.BareMetalHost, mine bool) {
			host.Annotations[hostclaim.KeptForAnnotation] = tenant + "/" + map[bool]string{true: "c1/md-workers", false: "c1/md-big"}[mine]
		},
		choose: func(t *testing.T, hosts []bmov1alpha1.BareMetalHost, ask consumerAsk) *pool.Selection {
			t.Helper()
			claim := &bmov1alpha1.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "m", UID: "uid-m",
				Annotations: map[string]string{hostclaim.NodeReuseKeyAnnotation: "c1/md-workers"}}}
			claim.Spec.FailureDomain = ask.failureDomain
			claim.Spec.HostSelector.MatchLabels = ask.matchLabels
			for _, e := range ask.expressions {
				claim.Spec.HostSelector.MatchExpressions = append(claim.Spec.HostSelector.MatchExpressions,
					bmov1alpha1.HostSelectorRequirement{Key: e.Key, Operator: selection.Operator(e.Operator), Values: e.Values})
			}
			chosen, err := hostclaim.Select(claim, hosts, []string{poolNamespace})
			if err != nil {
				t.Fatal(err)
			}
			return chosen
		},
	},
}

// hostSpec builds a host of the pool: available unless an option says
// otherwise.
type hostSpec struct {
	name string
	opts []func(*bmov1alpha1.BareMetalHost)
	// kept: "mine" or "other": kept for node reuse, marked the mode's way.
	kept string
}

func h(name string, opts ...func(*bmov1alpha1.BareMetalHost)) hostSpec {
	return hostSpec{name: name, opts: opts}
}

func (s hostSpec) keptFor(whom string) hostSpec { s.kept = whom; return s }

func inState(state bmov1alpha1.ProvisioningState) func(*bmov1alpha1.BareMetalHost) {
	return func(h *bmov1alpha1.BareMetalHost) { h.Status.Provisioning.State = state }
}
func withLabel(k, v string) func(*bmov1alpha1.BareMetalHost) {
	return func(h *bmov1alpha1.BareMetalHost) { h.Labels[k] = v }
}
func withAnnotation(k, v string) func(*bmov1alpha1.BareMetalHost) {
	return func(h *bmov1alpha1.BareMetalHost) { h.Annotations[k] = v }
}
func consumed(h *bmov1alpha1.BareMetalHost) {
	h.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: "tenant-b", Name: "other"}
}
func errorMessage(h *bmov1alpha1.BareMetalHost) { h.Status.ErrorMessage = "power management failed" }
func errorStatus(h *bmov1alpha1.BareMetalHost) {
	h.Status.OperationalStatus = bmov1alpha1.OperationalStatusError
}
func deleting(h *bmov1alpha1.BareMetalHost) {
	now := metav1.Now()
	h.DeletionTimestamp = &now
	h.Finalizers = []string{"metal3.io/test"}
}

// TestPoolRules runs every rule of the pool through both modes' callers:
// the same hosts, the same consumer, the same answer. The rows marked
// "(was: …)" pin a behaviour on which the two modes' own copies of the
// rules disagreed before they were written once.
func TestPoolRules(t *testing.T) {
	tests := []struct {
		rule  string
		ask   consumerAsk
		hosts []hostSpec
		// want are the candidates; in order if ordered, else as a set.
		want    []string
		ordered bool
		// wantWait is the kept host the consumer waits for.
		wantWait string
		// wantExcluded, if set, counts the hosts left out by reason.
		wantExcluded map[string]int
		// wantDeprecated are the hosts marked unhealthy under the
		// deprecated name alone, which the modes log.
		wantDeprecated []string
	}{
		{
			rule: "availability: only registered, inspected hosts free of consumers, errors, marks and deletion " +
				"(was: direct mode took a host whose operational status is error without a message)",
			hosts: []hostSpec{
				h("available"), h("ready", inState(bmov1alpha1.StateReady)),
				h("registering", inState(bmov1alpha1.StateNone)), h("inspecting", inState(bmov1alpha1.StateInspecting)),
				h("provisioned", inState(bmov1alpha1.StateProvisioned)), h("consumed", consumed),
				h("error-message", errorMessage), h("error-status-only", errorStatus),
				h("unhealthy", withAnnotation(pool.UnhealthyAnnotation, "")),
				h("unhealthy-deprecated", withAnnotation(pool.DeprecatedUnhealthyAnnotation, "")),
				h("paused", withAnnotation(bmov1alpha1.PausedAnnotation, "")),
				h("detached", withAnnotation(bmov1alpha1.DetachedAnnotation, "")),
				h("deleting", deleting),
			},
			want:           []string{"available", "ready"},
			wantDeprecated: []string{"unhealthy-deprecated"},
		},
		{
			rule: "unhealthy: a host marked under either name (upstream v1.13+'s or the deprecated one), with any value, " +
				"is never offered; one marked under the deprecated name alone is reported, for the modes to log",
			hosts: []hostSpec{
				h("free"),
				h("marked", withAnnotation(pool.UnhealthyAnnotation, pool.UnhealthyValue)),
				h("marked-deprecated", withAnnotation(pool.DeprecatedUnhealthyAnnotation, "")),
				h("marked-both", withAnnotation(pool.UnhealthyAnnotation, ""), withAnnotation(pool.DeprecatedUnhealthyAnnotation, "operator")),
			},
			want:           []string{"free"},
			wantExcluded:   map[string]int{pool.MarkedUnhealthy: 3},
			wantDeprecated: []string{"marked-deprecated"},
		},
		{
			rule: "selector: matchLabels and matchExpressions, operators of any case as stored objects of every age have them " +
				"(was: the binder refused a claim's \"In\")",
			ask: consumerAsk{matchLabels: map[string]string{"size": "large"}, expressions: []pool.Requirement{
				{Key: "gpu", Operator: "In", Values: []string{"a100", "h100"}},
				{Key: "broken", Operator: "!"},
			}},
			hosts: []hostSpec{
				h("ok", withLabel("size", "large"), withLabel("gpu", "h100")),
				h("small", withLabel("size", "small"), withLabel("gpu", "h100")),
				h("no-gpu", withLabel("size", "large")),
			},
			want: []string{"ok"},
		},
		{
			rule:    "failure domain: preferred, not required",
			ask:     consumerAsk{failureDomain: "rack-2"},
			hosts:   []hostSpec{h("a", withLabel(pool.FailureDomainLabel, "rack-1")), h("b", withLabel(pool.FailureDomainLabel, "rack-2"))},
			want:    []string{"b", "a"},
			ordered: true,
		},
		{
			rule: "node reuse: the host kept for the consumer before its failure domain; a host kept for another never",
			ask:  consumerAsk{failureDomain: "rack-2"},
			hosts: []hostSpec{
				h("in-domain", withLabel(pool.FailureDomainLabel, "rack-2")),
				h("kept", withLabel(pool.FailureDomainLabel, "rack-1")).keptFor("mine"),
				h("kept-for-other").keptFor("other"),
			},
			want:    []string{"kept", "in-domain"},
			ordered: true,
		},
		{
			rule:     "node reuse: the consumer waits for its kept host while it is deprovisioned, taking no other",
			hosts:    []hostSpec{h("free"), h("kept", inState(bmov1alpha1.StateDeprovisioning)).keptFor("mine")},
			wantWait: "kept",
		},
		{
			rule: "node reuse: and while its last consumer still holds it, being released " +
				"(was: direct mode took another host)",
			hosts:    []hostSpec{h("free"), h("kept", inState(bmov1alpha1.StateProvisioned), consumed).keptFor("mine")},
			wantWait: "kept",
		},
		{
			rule: "node reuse: never for a kept host only the pool admin can bring back " +
				"(was: direct mode waited for ever for one in error or marked unhealthy)",
			hosts: []hostSpec{
				h("free"),
				h("kept-error", inState(bmov1alpha1.StateDeprovisioning), errorMessage).keptFor("mine"),
				h("kept-unhealthy", withAnnotation(pool.UnhealthyAnnotation, "")).keptFor("mine"),
				h("kept-unhealthy-deprecated", withAnnotation(pool.DeprecatedUnhealthyAnnotation, "")).keptFor("mine"),
				h("kept-deleting", deleting).keptFor("mine"),
			},
			want:           []string{"free"},
			wantDeprecated: []string{"kept-unhealthy-deprecated"},
		},
		{
			rule:  "node reuse: an available kept host wins over waiting for another",
			hosts: []hostSpec{h("kept-ready").keptFor("mine"), h("kept-cleaning", inState(bmov1alpha1.StatePreparing)).keptFor("mine")},
			want:  []string{"kept-ready"},
		},
		{
			rule: "uncleaned disks: a host deprovisioned without cleaning goes to no other cluster " +
				"(was: the binder bound it to any claim)",
			hosts: []hostSpec{h("free"), h("uncleaned", withAnnotation(pool.UncleanedAnnotation, "tenant-b/c9"))},
			want:  []string{"free"},
		},
	}
	for _, mode := range hostModes {
		for _, tt := range tests {
			t.Run(mode.name+"/"+tt.rule, func(t *testing.T) {
				var hosts []bmov1alpha1.BareMetalHost
				for _, spec := range tt.hosts {
					host := bmov1alpha1.BareMetalHost{
						ObjectMeta: metav1.ObjectMeta{Namespace: poolNamespace, Name: spec.name, Labels: map[string]string{}, Annotations: map[string]string{}},
						Status:     bmov1alpha1.BareMetalHostStatus{Provisioning: bmov1alpha1.ProvisionStatus{State: bmov1alpha1.StateAvailable}},
					}
					for _, opt := range spec.opts {
						opt(&host)
					}
					if spec.kept != "" {
						mode.keep(&host, spec.kept == "mine")
					}
					hosts = append(hosts, host)
				}
				chosen := mode.choose(t, hosts, tt.ask)
				var got []string
				for _, c := range chosen.Candidates {
					got = append(got, c.Name)
				}
				want := slices.Clone(tt.want)
				if !tt.ordered {
					slices.Sort(got)
					slices.Sort(want)
				}
				if !slices.Equal(got, want) {
					t.Errorf("candidates %v, want %v", got, tt.want)
				}
				gotWait := ""
				if chosen.WaitFor != nil {
					gotWait = chosen.WaitFor.Name
				}
				if gotWait != tt.wantWait {
					t.Errorf("waits for %q, want %q", gotWait, tt.wantWait)
				}
				if tt.wantExcluded != nil && !maps.Equal(chosen.Excluded, tt.wantExcluded) {
					t.Errorf("excluded %v, want %v", chosen.Excluded, tt.wantExcluded)
				}
				var deprecated []string
				for _, d := range chosen.DeprecatedMarks {
					deprecated = append(deprecated, d.Name)
				}
				if !slices.Equal(deprecated, tt.wantDeprecated) {
					t.Errorf("deprecated marks %v, want %v", deprecated, tt.wantDeprecated)
				}
			})
		}
	}
}

// reservedByUpstream marks host the way upstream CAPM3 v1.14 keeps a
// released host for node reuse: its unscoped label naming the owner, and a
// consumerRef pointing at the machine's Cluster.
func reservedByUpstream(clusterName, owner string) func(*bmov1alpha1.BareMetalHost) {
	return func(h *bmov1alpha1.BareMetalHost) {
		h.Labels[hostbinding.NodeReuseLabel] = owner
		h.Spec.ConsumerRef = &corev1.ObjectReference{
			APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Cluster", Namespace: tenant, Name: clusterName,
		}
	}
}

// TestUpstreamNodeReuseReservation: a host upstream CAPM3 v1.14 reserved
// for node reuse (its consumerRef is the Cluster) comes back to the
// consumer its label and Cluster name, in direct mode, where a pool shared
// with (or upgraded from) upstream holds such hosts; for every other
// consumer, and for the binder, which serves no upstream machine, it is in
// use. Without the rule, the machine it is kept for would wait for it for
// ever (KeptForConsumer, yet in use).
func TestUpstreamNodeReuseReservation(t *testing.T) {
	hosts := []hostSpec{
		h("free"),
		h("kept-by-upstream", reservedByUpstream("c1", "md-workers")),
		h("kept-by-upstream-deprovisioning", inState(bmov1alpha1.StateDeprovisioning), reservedByUpstream("c1", "md-workers")),
		h("kept-for-another-cluster", reservedByUpstream("c2", "md-workers")),
		h("kept-for-another-owner", reservedByUpstream("c1", "md-big")),
	}
	tests := []struct {
		mode hostMode
		want []string
	}{
		{mode: hostModes[0], want: []string{"kept-by-upstream", "free"}},
		{mode: hostModes[1], want: []string{"free"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode.name, func(t *testing.T) {
			var pool []bmov1alpha1.BareMetalHost
			for _, spec := range hosts {
				host := bmov1alpha1.BareMetalHost{
					ObjectMeta: metav1.ObjectMeta{Namespace: poolNamespace, Name: spec.name, Labels: map[string]string{}, Annotations: map[string]string{}},
					Status:     bmov1alpha1.BareMetalHostStatus{Provisioning: bmov1alpha1.ProvisionStatus{State: bmov1alpha1.StateAvailable}},
				}
				for _, opt := range spec.opts {
					opt(&host)
				}
				pool = append(pool, host)
			}
			chosen := tt.mode.choose(t, pool, consumerAsk{})
			var got []string
			for _, c := range chosen.Candidates {
				got = append(got, c.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("candidates %v, want %v", got, tt.want)
			}
			if chosen.WaitFor != nil {
				t.Errorf("waits for %s, want no wait: an available kept host is taken", chosen.WaitFor.Name)
			}
		})
	}
}
