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
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// This file holds what reaches the controllers: the sources that tell them
// an identity Secret changed or an identity connected or disconnected, the
// watches they register on the hosts' clusters, and who uses an identity.

// sourceBuffer is how many notifications a controller's source holds; a
// full buffer means a controller far behind that resyncs its objects anyway.
const sourceBuffer = 1024

// routes are the controllers' sources and the watches on the management
// cluster's cache (the in-cluster identity's).
type routes struct {
	mu sync.Mutex
	// sources are the channels of the controllers' sources, by name.
	sources map[string]chan event.GenericEvent
	// inClusterWatches are the watcher names started on the manager's cache.
	inClusterWatches map[string]bool
}

func newRoutes() routes {
	return routes{sources: map[string]chan event.GenericEvent{}, inClusterWatches: map[string]bool{}}
}

// Source implements Cache.
func (c *IdentityCache) Source(name string, mapFunc SecretMapFunc) source.Source {
	c.routes.mu.Lock()
	defer c.routes.mu.Unlock()
	ch, ok := c.routes.sources[name]
	if !ok {
		ch = make(chan event.GenericEvent, sourceBuffer)
		c.routes.sources[name] = ch
	}
	return source.Channel(ch, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []ctrl.Request {
		return mapFunc(ctx, client.ObjectKeyFromObject(obj))
	}))
}

// notify tells every source that secret, or an identity of it, changed.
func (r *routes) notify(secret types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, ch := range r.sources {
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: secret.Namespace, Name: secret.Name}}
		select {
		case ch <- event.GenericEvent{Object: obj}:
		default:
			ctrl.Log.WithName("hostaccess").Info("Source buffer full, dropping a notification", "source", name, "secret", klog.KRef(secret.Namespace, secret.Name))
		}
	}
}

// watchSecrets forwards every change of a Secret's metadata to the sources:
// their map functions find the users of the Secret through an index, so
// only identity Secrets yield requests. A Secret created after its users
// wakes them: they were waiting with SecretNotFound.
func (c *IdentityCache) watchSecrets(ctx context.Context) (stop func(), err error) {
	informer, err := c.opts.ManagementCache.GetInformer(ctx, secretMetadata())
	if err != nil {
		return nil, fmt.Errorf("watch identity Secrets: %w", err)
	}
	changed := func(obj any) {
		if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		if secret, ok := obj.(client.Object); ok {
			c.routes.notify(client.ObjectKeyFromObject(secret))
		}
	}
	registration, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, obj any) { changed(obj) },
		DeleteFunc: changed,
	})
	if err != nil {
		return nil, fmt.Errorf("watch identity Secrets: %w", err)
	}
	return func() { _ = informer.RemoveEventHandler(registration) }, nil
}

// Watch implements Cache.
func (c *IdentityCache) Watch(ctx context.Context, key identity.Key, w Watcher) error {
	if key.IsInCluster() {
		c.routes.mu.Lock()
		defer c.routes.mu.Unlock()
		if c.routes.inClusterWatches[w.Name()] {
			return nil
		}
		if err := w.Watch(kindSource(c.opts.ManagementCache, w)); err != nil {
			return fmt.Errorf("watch %T for in-cluster hosts (%s): %w", w.Object(), w.Name(), err)
		}
		c.routes.inClusterWatches[w.Name()] = true
		return nil
	}
	if !key.Resolved() {
		return fmt.Errorf("%s is not resolved: it has no hosts to watch", key)
	}
	// One watch per Secret and context, whichever Metal3ClusterIdentity
	// asks: the watcher's mapping compares them
	// (identity.Key.SameConnection). Identities of other Secrets with the
	// same credentials share the accessor's informer and its one handler
	// per watcher name, which hands each event to every identity's
	// watcher, each mapping it to its own objects (watches.go).
	key = key.Connection()
	c.mu.Lock()
	state, ok := c.states[key]
	var acc *accessor
	if ok {
		acc = state.accessor
	}
	c.mu.Unlock()
	if acc == nil {
		return fmt.Errorf("identity %s is not connected: its watch %s starts once it is", key, w.Name())
	}
	return acc.watch(ctx, key, w)
}

// Release implements Cache.
func (c *IdentityCache) Release(ctx context.Context, key identity.Key, leaving client.Object) error {
	if key.IsInCluster() || !key.Resolved() {
		// An unresolved cluster identity was never connected for this user.
		return nil
	}
	key = key.Connection()
	inUse, err := c.inUse(ctx, key, leaving)
	if err != nil || inUse {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if state, ok := c.states[key]; ok {
		// The accessor stops with its last identity.
		c.detachLocked(key, state, nil)
		delete(c.states, key)
	}
	return nil
}

// inUse reports whether an object other than leaving records using the
// connection key, in any namespace: the users of a Metal3ClusterIdentity's
// Secret are in other namespaces than the Secret.
func (c *IdentityCache) inUse(ctx context.Context, key identity.Key, leaving client.Object) (bool, error) {
	for _, newList := range c.opts.Users {
		list := newList()
		if err := c.opts.ManagementCache.List(ctx, list,
			client.MatchingFields{identity.UsedIndex: identity.UsedKey(key)}); err != nil {
			return true, fmt.Errorf("list users of identity %s: %w", key, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return true, err
		}
		for _, item := range items {
			if obj, ok := item.(client.Object); ok && (leaving == nil || obj.GetUID() != leaving.GetUID()) {
				return true, nil
			}
		}
	}
	return false, nil
}

// SecretMetadata implements Cache.
func (c *IdentityCache) SecretMetadata() client.Reader { return c.opts.ManagementCache }

func secretMetadata() *metav1.PartialObjectMetadata {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return meta
}
