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

package env

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// HostState is what a watch saw of a host at one moment: its provisioning
// state, and what it is told to be provisioned with and for whom.
type HostState struct {
	// Host is namespace/name.
	Host  string
	State bmov1alpha1.ProvisioningState
	// Consumer is the consumerRef's kind/name; empty when unclaimed.
	Consumer string
	// Image is the image URL the host is to run; empty without one.
	Image string
	// UserData and MetaData name the Secrets the host is given.
	UserData, MetaData string
	Online             bool
	// Deleted: the host is gone.
	Deleted bool
	// Seen is when the watch saw it.
	Seen time.Time
}

func (s HostState) String() string {
	if s.Deleted {
		return fmt.Sprintf("%s deleted", s.Host)
	}
	return fmt.Sprintf("%s %s consumer=%q image=%q userData=%q metaData=%q online=%v",
		s.Host, s.State, s.Consumer, s.Image, s.UserData, s.MetaData, s.Online)
}

// same reports whether s and o are the same host in the same state, with
// the same spec: a watch event that changed nothing of what HostState
// records (a status heartbeat, an annotation).
func (s HostState) same(o HostState) bool {
	s.Seen, o.Seen = time.Time{}, time.Time{}
	return s == o
}

// HostRecorder records every state of every host of an API server, from
// a watch, as it happens: every state a host passes through, however
// briefly, is there.
type HostRecorder struct {
	mu     sync.Mutex
	states []HostState
	last   map[string]HostState
}

// RecordHosts starts recording the hosts of hosts until t ends; it returns
// once the watch has seen every host that exists.
func RecordHosts(t testenv.T, hosts *testenv.Env) *HostRecorder {
	t.Helper()
	r := &HostRecorder{last: map[string]HostState{}}
	ctx, cancel := context.WithCancel(context.Background())
	watch, err := cache.New(hosts.Config, cache.Options{Scheme: Scheme(), DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		cancel()
		t.Fatalf("host recorder: %v", err)
	}
	informer, err := watch.GetInformer(ctx, &bmov1alpha1.BareMetalHost{})
	if err != nil {
		cancel()
		t.Fatalf("host recorder: %v", err)
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.saw(obj, false) },
		UpdateFunc: func(_, obj any) { r.saw(obj, false) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			r.saw(obj, true)
		},
	}); err != nil {
		cancel()
		t.Fatalf("host recorder: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = watch.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !watch.WaitForCacheSync(syncCtx) {
		t.Fatalf("host recorder: the watch did not sync")
	}
	return r
}

func (r *HostRecorder) saw(obj any, deleted bool) {
	host, ok := obj.(*bmov1alpha1.BareMetalHost)
	if !ok {
		return
	}
	s := HostState{
		Host: host.Namespace + "/" + host.Name, State: host.Status.Provisioning.State,
		Online: host.Spec.Online, Deleted: deleted, Seen: time.Now(),
	}
	if ref := host.Spec.ConsumerRef; ref != nil {
		s.Consumer = ref.Kind + "/" + ref.Name
	}
	if host.Spec.Image != nil {
		s.Image = host.Spec.Image.URL
	}
	if host.Spec.UserData != nil {
		s.UserData = host.Spec.UserData.Name
	}
	if host.Spec.MetaData != nil {
		s.MetaData = host.Spec.MetaData.Name
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if last, ok := r.last[s.Host]; ok && last.same(s) {
		return
	}
	r.last[s.Host] = s
	r.states = append(r.states, s)
}

// Mark is the position of the next state the recorder will record, for
// Since.
func (r *HostRecorder) Mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.states)
}

// Since is every state recorded from mark on, in the order seen. A state
// is recorded only when it differs from the host's last one: anything
// since mark is a change.
func (r *HostRecorder) Since(mark int) []HostState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.states[mark:])
}

// Current is the last state of every host, by namespace/name.
func (r *HostRecorder) Current() map[string]HostState {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]HostState, len(r.last))
	for k, v := range r.last {
		out[k] = v
	}
	return out
}
