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
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// holdFor bounds how long a hold outlives a take whose result never
// reaches the host cache (e.g. its identity went away).
const holdFor = 30 * time.Second

// Holds remembers the hosts this process is taking or has just taken, by
// a key K naming the host, until its host cache shows it. Concurrent
// consumers choose from a cache that may not show a take yet: a hold makes
// the others choose another host rather than race for it. Correctness
// does not depend on it (every take is one update guarded by the host's
// resourceVersion, which also settles races with other processes); it
// saves the conflicting updates, and the Secrets written and deleted for
// a lost race. A hold ends when the take fails, when the cached host
// reaches the resourceVersion the take wrote (from then on the cache tells
// the truth), or after holdFor. The zero value is ready to use; a nil
// *Holds holds everything.
type Holds[K comparable] struct {
	mu    sync.Mutex
	holds map[K]hold
}

type hold struct {
	consumer types.UID
	// written is the resourceVersion the take wrote; empty while it is
	// being sent.
	written string
	until   time.Time
}

// Hold reserves host for consumer, unless another consumer's take of it
// is in flight: being sent, or written but not yet in the cache, whose
// copy of the host is at cachedVersion.
func (h *Holds[K]) Hold(host K, consumer types.UID, cachedVersion string) bool {
	if h == nil {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.expire()
	if held, ok := h.holds[host]; ok && held.consumer != consumer {
		if held.written == "" || !CacheCaughtUp(cachedVersion, held.written) {
			return false
		}
	}
	if h.holds == nil {
		h.holds = map[K]hold{}
	}
	h.holds[host] = hold{consumer: consumer, until: time.Now().Add(holdFor)}
	return true
}

// Taken records the resourceVersion consumer's take of host wrote.
func (h *Holds[K]) Taken(host K, consumer types.UID, written string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if held, ok := h.holds[host]; ok && held.consumer == consumer {
		held.written = written
		h.holds[host] = held
	}
}

// Drop ends consumer's hold on host (its take failed).
func (h *Holds[K]) Drop(host K, consumer types.UID) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if held, ok := h.holds[host]; ok && held.consumer == consumer {
		delete(h.holds, host)
	}
}

// TakenBy is the host consumer's take wrote recently, if any: a consumer
// finds the host it was just given before the cache shows it.
func (h *Holds[K]) TakenBy(consumer types.UID) (K, bool) {
	var none K
	if h == nil {
		return none, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.expire()
	for host, held := range h.holds {
		if held.consumer == consumer && held.written != "" {
			return host, true
		}
	}
	return none, false
}

func (h *Holds[K]) expire() {
	now := time.Now()
	for key, held := range h.holds {
		if now.After(held.until) {
			delete(h.holds, key)
		}
	}
}

// CacheCaughtUp reports whether a cached copy at resourceVersion seen
// already reflects a write that returned written: the same version, or a
// later one (every etcd-backed API server issues increasing integers, which
// apimachinery compares). Versions that are not such integers must match
// exactly.
func CacheCaughtUp(seen, written string) bool {
	c, err := resourceversion.CompareResourceVersion(seen, written)
	if err != nil {
		return seen == written
	}
	return c >= 0
}
