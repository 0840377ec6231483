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

// Package fake has a hostaccess.Cache for unit tests: host accesses over
// clients the test builds (typically controller-runtime's fake client, with
// interceptors for conflicts or errors), identity errors on demand, and a
// record of the watches and releases controllers ask for.
package fake

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// HostAccess is a hostaccess.HostAccess over a client the test provides.
type HostAccess struct {
	IdentityKey   identity.Key
	HostNamespace string
	HostClient    client.Client
	// HostReader defaults to HostClient.
	HostReader client.Reader
}

var _ hostaccess.HostAccess = &HostAccess{}

func (h *HostAccess) Key() identity.Key     { return h.IdentityKey }
func (h *HostAccess) Namespace() string     { return h.HostNamespace }
func (h *HostAccess) Client() client.Client { return h.HostClient }
func (h *HostAccess) Reader() client.Reader {
	if h.HostReader != nil {
		return h.HostReader
	}
	return h.HostClient
}

// Cache is a hostaccess.Cache whose identities are what the test sets.
type Cache struct {
	mu sync.Mutex
	// Accesses are returned by HostAccess, by identity key; a missing key
	// gets an Unreachable identity error.
	Accesses map[identity.Key]hostaccess.HostAccess
	// Errors are returned by HostAccess instead, by identity key.
	Errors map[identity.Key]error
	// Backoff is what RetryAfter returns; one second when zero.
	Backoff time.Duration
	// Secrets serves SecretMetadata; nil means no Secret exists.
	Secrets client.Reader
	// ClusterIdentities resolves Metal3ClusterIdentities (e.g. an
	// identity.ClusterIdentities over a fake client); nil finds none.
	ClusterIdentities interface {
		Resolve(ctx context.Context, id identity.Identity) (identity.Identity, error)
	}

	watches  map[identity.Key][]string
	releases []identity.Key
	sources  map[string]chan event.GenericEvent
}

var _ hostaccess.Cache = &Cache{}

// NewCache returns an empty fake cache.
func NewCache() *Cache {
	return &Cache{
		Accesses: map[identity.Key]hostaccess.HostAccess{},
		Errors:   map[identity.Key]error{},
		watches:  map[identity.Key][]string{},
		sources:  map[string]chan event.GenericEvent{},
	}
}

// Add makes HostAccess return access for its key.
func (c *Cache) Add(access hostaccess.HostAccess) *Cache {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Accesses[access.Key()] = access
	return c
}

// Resolve implements hostaccess.Cache.
func (c *Cache) Resolve(ctx context.Context, id identity.Identity) (identity.Identity, error) {
	name := id.Key.ClusterIdentity
	if name == "" {
		return id, nil
	}
	if c.ClusterIdentities == nil {
		id.Key = identity.Key{ClusterIdentity: name}
		return id, identity.NewError(id.Key, "IdentityNotFound", true, nil, "the fake cache resolves no Metal3ClusterIdentity")
	}
	return c.ClusterIdentities.Resolve(ctx, id)
}

// HostAccess implements hostaccess.Cache.
func (c *Cache) HostAccess(_ context.Context, id identity.Identity) (hostaccess.HostAccess, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err, ok := c.Errors[id.Key]; ok {
		return nil, err
	}
	if access, ok := c.Accesses[id.Key]; ok {
		return access, nil
	}
	return nil, identity.NewError(id.Key, "Unreachable", false, nil, "the fake cache has no access for %s", id.Key)
}

// Watch implements hostaccess.Cache; it records the watcher's name.
func (c *Cache) Watch(_ context.Context, key identity.Key, w hostaccess.Watcher) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.Accesses[key]; !ok {
		return fmt.Errorf("identity %s is not connected", key)
	}
	for _, name := range c.watches[key] {
		if name == w.Name() {
			return nil
		}
	}
	c.watches[key] = append(c.watches[key], w.Name())
	return nil
}

// Watches are the watcher names registered for key.
func (c *Cache) Watches(key identity.Key) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.watches[key]...)
}

// Source implements hostaccess.Cache; Notify feeds it.
func (c *Cache) Source(name string, mapFunc hostaccess.SecretMapFunc) source.Source {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan event.GenericEvent, 64)
	c.sources[name] = ch
	return source.Channel(ch, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []ctrl.Request {
		return mapFunc(ctx, client.ObjectKeyFromObject(obj))
	}))
}

// Notify sends secret to every source, as a Secret change would.
func (c *Cache) Notify(secret types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.sources {
		ch <- event.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: secret.Namespace, Name: secret.Name}}}
	}
}

// Release implements hostaccess.Cache; it records the key.
func (c *Cache) Release(_ context.Context, key identity.Key, _ client.Object) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.releases = append(c.releases, key)
	return nil
}

// Releases are the keys released so far.
func (c *Cache) Releases() []identity.Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]identity.Key(nil), c.releases...)
}

// RetryAfter implements hostaccess.Cache.
func (c *Cache) RetryAfter(identity.Key) time.Duration {
	if c.Backoff == 0 {
		return time.Second
	}
	return c.Backoff
}

// SecretMetadata implements hostaccess.Cache.
func (c *Cache) SecretMetadata() client.Reader { return c.Secrets }
