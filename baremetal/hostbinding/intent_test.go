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

package hostbinding

import (
	"context"
	"errors"
	"strings"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// consumedByWorker0 is host claimed by the fixture's machine.
func consumedByWorker0(host *bmov1alpha1.BareMetalHost) *bmov1alpha1.BareMetalHost {
	host.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: "tenant-a", Name: "worker-0", UID: "uid-worker-0"}
	return host
}

// TestIntendedHost: the host a machine records with its finalizer, before
// the claim, is an intent until its status confirms the claim. Each case
// is one step of a reconcile, on the machine as the previous one left it.
func TestIntendedHost(t *testing.T) {
	ctx := context.Background()
	labelled := func(host *bmov1alpha1.BareMetalHost, value string) *bmov1alpha1.BareMetalHost {
		host.Labels = map[string]string{"pool": value}
		return host
	}
	tests := []struct {
		name     string
		hosts    []client.Object
		recorded string
		// confirmed: the machine's status confirms the record.
		confirmed bool
		selector  map[string]string
		// step is Intend, Bind or Host.
		step         string
		wantHost     string // the host the step returns ("" none)
		wantErr      error
		wantRecorded string // the annotation afterwards ("" none)
		wantClaimed  string // the host whose consumerRef is the machine afterwards
	}{
		{
			name: "a fresh machine intends the best host and writes nothing", step: "Intend",
			hosts: []client.Object{availableHost("host-0")}, wantRecorded: "host-0",
		},
		{
			name: "a machine that consumes a host already intends that one", step: "Intend",
			hosts:        []client.Object{availableHost("host-0"), consumedByWorker0(availableHost("host-1"))},
			wantRecorded: "host-1", wantClaimed: "host-1",
		},
		{
			name: "a machine with no host available intends none", step: "Intend",
			hosts: []client.Object{claimedBy(availableHost("host-0"), "tenant-b", "worker-9")},
		},
		{
			name: "the claim goes to the intended host", step: "Bind", recorded: "host-1",
			hosts:    []client.Object{availableHost("host-0"), availableHost("host-1"), availableHost("host-2")},
			wantHost: "host-1", wantRecorded: "host-1", wantClaimed: "host-1",
		},
		{
			name: "the intended host went to someone else: the next, and the record follows", step: "Bind", recorded: "host-0",
			hosts:    []client.Object{claimedBy(availableHost("host-0"), "tenant-b", "worker-9"), availableHost("host-1")},
			wantHost: "host-1", wantRecorded: "host-1", wantClaimed: "host-1",
		},
		{
			name: "the intended host went to someone else and none is left: the intent goes", step: "Bind", recorded: "host-0",
			hosts:   []client.Object{claimedBy(availableHost("host-0"), "tenant-b", "worker-9")},
			wantErr: ErrNoAvailableHost,
		},
		{
			// The attack: a tenant writes the intent itself, naming a host
			// its hostSelector does not offer it (another tenant's, say).
			// An intent is a preference among the machine's candidates only.
			name: "an intent for a host the pool does not offer the machine is not followed", step: "Bind", recorded: "host-1",
			selector: map[string]string{"pool": "a"},
			hosts:    []client.Object{labelled(availableHost("host-0"), "a"), labelled(availableHost("host-1"), "b")},
			wantHost: "host-0", wantRecorded: "host-0", wantClaimed: "host-0",
		},
		{
			name: "an intended host never claimed is not missing", step: "Host", recorded: "host-0",
			hosts: []client.Object{availableHost("host-0")}, wantRecorded: "host-0",
		},
		{
			name: "a claim that landed on another host before a crash: the record follows it", step: "Host", recorded: "host-0",
			hosts:    []client.Object{availableHost("host-0"), consumedByWorker0(availableHost("host-1"))},
			wantHost: "host-1", wantRecorded: "host-1", wantClaimed: "host-1",
		},
		{
			name: "a confirmed record never moves", step: "Host", recorded: "host-0", confirmed: true,
			hosts:    []client.Object{availableHost("host-0"), consumedByWorker0(availableHost("host-1"))},
			wantHost: "host-1", wantRecorded: "host-0", wantClaimed: "host-1",
		},
		{
			name: "a confirmed host that is gone is missing", step: "Host", recorded: "host-0", confirmed: true,
			hosts: []client.Object{availableHost("host-1")}, wantErr: ErrHostNotFound, wantRecorded: "host-0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newBindingFixture(t, interceptor.Funcs{}, tt.hosts...)
			if tt.recorded != "" {
				f.m3m.Annotations[infrav1.HostAnnotation] = poolNamespace + "/" + tt.recorded
			}
			if tt.confirmed {
				confirmAssociation(f.m3m)
			}
			if tt.selector != nil {
				f.m3m.Spec.HostSelector = &infrav1.HostSelector{MatchLabels: tt.selector}
			}
			var host *Host
			var err error
			switch tt.step {
			case "Intend":
				err = f.binding.Intend(ctx)
			case "Bind":
				host, err = f.binding.Bind(ctx)
			case "Host":
				host, err = f.binding.Host(ctx)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("%s = %v, want %v", tt.step, err, tt.wantErr)
			}
			if got := hostName(host); got != tt.wantHost {
				t.Errorf("%s returned host %q, want %q", tt.step, got, tt.wantHost)
			}
			want := ""
			if tt.wantRecorded != "" {
				want = poolNamespace + "/" + tt.wantRecorded
			}
			if got := f.m3m.Annotations[infrav1.HostAnnotation]; got != want {
				t.Errorf("the machine records %q, want %q", got, want)
			}
			for _, obj := range tt.hosts {
				bmh := f.host(t, obj.GetName())
				if claimed := Consumes(bmh, f.m3m); claimed != (bmh.Name == tt.wantClaimed) {
					t.Errorf("host %s consumed by the machine: %v, want %v", bmh.Name, claimed, !claimed)
				}
			}
		})
	}
}

// TestIntentsOfConcurrentMachines: the machines of one process intend
// different hosts (each holds its own in InFlight until its claim), so
// their claims, which follow, do not race.
func TestIntentsOfConcurrentMachines(t *testing.T) {
	ctx := context.Background()
	f := newBindingFixture(t, interceptor.Funcs{}, availableHost("host-0"), availableHost("host-1"))
	inFlight := &ClaimsInFlight{}
	intended := map[string]bool{}
	for _, name := range []string{"worker-0", "worker-1"} {
		m3m := &infrav1.Metal3Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name, UID: k8stypes.UID("uid-" + name)},
			Spec:       f.m3m.Spec,
		}
		infrav1.EnsureConsumerID(m3m)
		opts := bindingOptions(t, f.pool, m3m)
		opts.InFlight = inFlight
		if err := ForBareMetalHosts(opts).Intend(ctx); err != nil {
			t.Fatal(err)
		}
		recorded := m3m.Annotations[infrav1.HostAnnotation]
		if recorded == "" || intended[recorded] {
			t.Fatalf("%s intends %q; already intended: %v", name, recorded, intended)
		}
		intended[recorded] = true
	}
	for _, name := range []string{"host-0", "host-1"} {
		if f.host(t, name).Spec.ConsumerRef != nil {
			t.Errorf("Intend wrote host %s", name)
		}
	}
}

func hostName(host *Host) string {
	if host == nil {
		return ""
	}
	return host.Name
}

// TestHostsReadOncePerReconcile: the reconcile that associates a machine
// asks Intend, Host and Bind of one binding, which reads the identity's
// hosts once (hostsRead): each read copies every host of the namespace out
// of the cache. What it read may be stale by the claim: a host taken by
// someone else since Intend read it is found out by the claim, which moves
// to the next candidate; and the binding's own claim, which it does not
// show, empties it.
func TestHostsReadOncePerReconcile(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		// takenMeanwhile is claimed by another machine between Intend and
		// Bind.
		takenMeanwhile bool
		wantClaimed    string
	}{
		{name: "the intended host is claimed", wantClaimed: "host-0"},
		{name: "the intended host was taken since it was read: the next is claimed", takenMeanwhile: true, wantClaimed: "host-1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lists := 0
			// lagging: Get serves the hosts as they were before the claim,
			// as a cache that has not seen it yet does.
			var lagging map[string]*bmov1alpha1.BareMetalHost
			f := newBindingFixture(t, interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					if _, ok := list.(*bmov1alpha1.BareMetalHostList); ok {
						lists++
					}
					return c.List(ctx, list, opts...)
				},
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if host, ok := obj.(*bmov1alpha1.BareMetalHost); ok && lagging[key.Name] != nil {
						lagging[key.Name].DeepCopyInto(host)
						return nil
					}
					return c.Get(ctx, key, obj, opts...)
				},
			}, availableHost("host-0"), availableHost("host-1"))
			if err := f.binding.Intend(ctx); err != nil {
				t.Fatal(err)
			}
			intended := f.m3m.Annotations[infrav1.HostAnnotation]
			if tt.takenMeanwhile {
				_, name, _ := strings.Cut(intended, "/")
				taken := claimedBy(f.host(t, name), "tenant-b", "worker-9")
				if err := f.pool.Update(ctx, taken); err != nil {
					t.Fatal(err)
				}
			}
			if host, err := f.binding.Host(ctx); err != nil || host != nil {
				t.Fatalf("Host = %v, %v; want none yet", host, err)
			}
			beforeClaim := map[string]*bmov1alpha1.BareMetalHost{}
			for _, name := range []string{"host-0", "host-1"} {
				beforeClaim[name] = f.host(t, name)
			}
			host, err := f.binding.Bind(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := intended
			if tt.takenMeanwhile {
				want = otherHost(intended)
			}
			if got := host.Namespace + "/" + host.Name; got != want {
				t.Errorf("claimed %s, want %s (intended %s)", got, want, intended)
			}
			if !Consumes(f.host(t, host.Name), f.m3m) {
				t.Errorf("host %s does not name the machine as its consumer", host.Name)
			}
			if lists != 1 {
				t.Errorf("the reconcile listed the hosts %d times, want once", lists)
			}

			// What was read before the claim does not show it: asked again
			// once the claim is confirmed, while the cache's copy of the
			// host lags, the binding finds it by reading the hosts anew,
			// not missing (ErrHostNotFound).
			confirmAssociation(f.m3m)
			lagging = beforeClaim
			again, err := f.binding.Host(ctx)
			if err != nil || again == nil || again.Name != host.Name {
				t.Errorf("Host after the claim = %v, %v; want %s", again, err, host.Name)
			}
		})
	}
}

// otherHost is the fixture's host that recorded is not.
func otherHost(recorded string) string {
	if strings.HasSuffix(recorded, "/host-0") {
		return poolNamespace + "/host-1"
	}
	return poolNamespace + "/host-0"
}
