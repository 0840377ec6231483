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

package hostclaimbinder

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/metal3-io/cluster-api-provider-metal3/internal/resourceversion"
)

// holdFor bounds how long a hold outlives a binding whose result never
// reaches the host cache.
const holdFor = 30 * time.Second

// claimsInFlight remembers the hosts this process is binding or has just
// bound, until its host cache shows it. Concurrent reconciles choose from a
// cache that may not show a binding yet: a hold makes the others choose
// another host rather than race for it (the guarded update would refuse
// all but one; this saves the failed updates), and lets a claim find the
// host it was just given before the cache does (boundHost). The zero value
// is ready to use.
type claimsInFlight struct {
	mu    sync.Mutex
	holds map[types.NamespacedName]hold
}

type hold struct {
	claim types.UID
	// written is the resourceVersion the binding wrote; empty while it is
	// being sent.
	written string
	until   time.Time
}

// hold reserves host for claim unless another claim's binding of it is in
// flight: being sent, or written but not yet in the cache, whose copy of
// the host is at cachedVersion.
func (c *claimsInFlight) hold(host types.NamespacedName, claim types.UID, cachedVersion string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire()
	if h, held := c.holds[host]; held && h.claim != claim {
		if h.written == "" || !resourceversion.NotOlder(cachedVersion, h.written) {
			return false
		}
	}
	if c.holds == nil {
		c.holds = map[types.NamespacedName]hold{}
	}
	c.holds[host] = hold{claim: claim, until: time.Now().Add(holdFor)}
	return true
}

// claimed records the resourceVersion claim's binding of host wrote.
func (c *claimsInFlight) claimed(host types.NamespacedName, claim types.UID, written string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, held := c.holds[host]; held && h.claim == claim {
		h.written = written
		c.holds[host] = h
	}
}

// drop ends claim's hold on host (its binding failed).
func (c *claimsInFlight) drop(host types.NamespacedName, claim types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, held := c.holds[host]; held && h.claim == claim {
		delete(c.holds, host)
	}
}

// hostOf is the host claim's binding wrote recently, if any.
func (c *claimsInFlight) hostOf(claim types.UID) (types.NamespacedName, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire()
	for host, h := range c.holds {
		if h.claim == claim && h.written != "" {
			return host, true
		}
	}
	return types.NamespacedName{}, false
}

func (c *claimsInFlight) expire() {
	now := time.Now()
	for key, h := range c.holds {
		if now.After(h.until) {
			delete(c.holds, key)
		}
	}
}
