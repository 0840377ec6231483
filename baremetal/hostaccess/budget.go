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

package hostaccess

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cacheBudget bounds what one accessor's informers hold: objects, and
// bytes as their JSON encoding counts them. A tenant's API server decides
// what it sends; without a bound, one that streams distinct objects with
// large annotations (each response within MaxResponseBytes) grows the
// provider's memory until it is killed, taking every tenant down with it.
//
// Objects are counted as they arrive, in the cache's transform (transform),
// which the informer runs on each object before it queues it: once over
// the budget, the transform refuses every object, so neither the queue nor
// the store grows any more, and the budget trips, once: the accessor is
// then disconnected for every identity it serves, its informers and what
// they held dropped, and retried after backoff. Deletions are counted by
// an event handler on each informer (deletions).
type cacheBudget struct {
	maxObjects int
	maxBytes   int64
	// trip is called once, the first time the budget is exceeded, with why.
	trip func(problem string)

	mu      sync.Mutex
	sizes   map[string]int64
	bytes   int64
	tripped bool
}

// errOverBudget refuses an object to an informer whose budget tripped.
var errOverBudget = errors.New("the identity's objects are over the provider's budget")

func newCacheBudget(maxObjects int, maxBytes int64, trip func(problem string)) *cacheBudget {
	return &cacheBudget{maxObjects: maxObjects, maxBytes: maxBytes, trip: trip, sizes: map[string]int64{}}
}

// transform is next followed by the budget's count of its output.
func (b *cacheBudget) transform(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(in any) (any, error) {
		out, err := next(in)
		if err != nil {
			return out, err
		}
		if err := b.put(out); err != nil {
			return nil, err
		}
		return out, nil
	}
}

// deletions counts the objects informers drop.
func (b *cacheBudget) deletions() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if gone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = gone.Obj
		}
		if k, ok := budgetKey(obj); ok {
			b.remove(k)
		}
	}}
}

// budgetKey tells objects apart across the accessor's informers.
func budgetKey(obj any) (string, bool) {
	o, ok := obj.(client.Object)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%T/%s/%s", o, o.GetNamespace(), o.GetName()), true
}

func (b *cacheBudget) put(obj any) error {
	k, ok := budgetKey(obj)
	if !ok {
		return nil
	}
	size := encodedSize(obj)
	b.mu.Lock()
	if b.tripped {
		b.mu.Unlock()
		return errOverBudget
	}
	b.bytes += size - b.sizes[k]
	b.sizes[k] = size
	problem := ""
	switch {
	case b.maxObjects > 0 && len(b.sizes) > b.maxObjects:
		problem = fmt.Sprintf("%d objects (--remote-max-cached-objects)", b.maxObjects)
	case b.maxBytes > 0 && b.bytes > b.maxBytes:
		problem = fmt.Sprintf("%d MiB (--remote-max-cached-bytes)", b.maxBytes>>20)
	}
	b.tripped = problem != ""
	b.mu.Unlock()
	if problem != "" {
		b.trip(problem)
		return errOverBudget
	}
	return nil
}

func (b *cacheBudget) remove(k string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bytes -= b.sizes[k]
	delete(b.sizes, k)
}

// encodedSize is obj's size as JSON, what its strings, maps and lists
// cost; an object that cannot be encoded counts as big as it can be.
func encodedSize(obj any) int64 {
	data, err := json.Marshal(obj)
	if err != nil {
		return 1 << 30
	}
	return int64(len(data))
}
