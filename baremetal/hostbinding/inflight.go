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
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/metal3-io/cluster-api-provider-metal3/internal/resourceversion"
)

// claimHold bounds how long a hold outlives a claim whose result never
// reached the host cache (e.g. its identity went away).
const claimHold = 30 * time.Second

// ClaimsInFlight remembers the hosts this process is claiming or has just
// claimed, so that its other machines, choosing from a host cache that may
// not show those claims yet, pick another host instead of racing for the
// same one. Correctness does not depend on it (every claim is one update
// guarded by the host's resourceVersion, which also settles races with
// other processes); it keeps concurrent machines from paying for a lost
// race with a conflicting update and a Secret written and deleted.
// A hold ends when the claim fails, or when the cached host reaches the
// resourceVersion the claim wrote: from then on the cache tells the truth
// (the host is consumed, or was released since). The zero value is ready
// to use.
type ClaimsInFlight struct {
	mu    sync.Mutex
	holds map[string]claimHoldEntry
}

type claimHoldEntry struct {
	consumer types.UID
	// written is the resourceVersion the claim wrote; empty while the
	// claim is being sent.
	written string
	until   time.Time
}

// hold reserves host (a key naming the host's cluster and the host) for
// consumer, unless another consumer's claim of it is in flight: being sent,
// or written but not yet in the cache, whose copy of the host is at
// cachedVersion. A nil set holds everything.
func (c *ClaimsInFlight) hold(host string, consumer types.UID, cachedVersion string) bool {
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.holds == nil {
		c.holds = map[string]claimHoldEntry{}
	}
	for key, h := range c.holds {
		if now.After(h.until) {
			delete(c.holds, key)
		}
	}
	if h, held := c.holds[host]; held && h.consumer != consumer {
		if h.written == "" || !resourceversion.NotOlder(cachedVersion, h.written) {
			return false
		}
	}
	c.holds[host] = claimHoldEntry{consumer: consumer, until: now.Add(claimHold)}
	return true
}

// claimed records the resourceVersion consumer's claim of host wrote.
func (c *ClaimsInFlight) claimed(host string, consumer types.UID, written string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, held := c.holds[host]; held && h.consumer == consumer {
		h.written = written
		c.holds[host] = h
	}
}

// drop gives up consumer's hold on host (its claim failed).
func (c *ClaimsInFlight) drop(host string, consumer types.UID) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, held := c.holds[host]; held && h.consumer == consumer {
		delete(c.holds, host)
	}
}
