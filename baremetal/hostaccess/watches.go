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

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// This file holds the identities an accessor serves and the controllers'
// watches on its cache. A controller's watcher maps host events to its
// objects that use one identity (hostToMetal3Machine(key)), so an accessor
// shared by several identities needs each identity's mapping; but one
// handler per identity on the informer would cost each a goroutine pair
// and an event buffer. So each watcher name has one handler on the
// accessor's informer (dispatch), started once, which hands every event to
// the watcher of each identity that registered it: the API server sees one
// watch per kind, the provider keeps one event stream per controller, and
// an identity that leaves just drops out of the dispatch.

// attach makes key one of the identities the accessor serves.
func (a *accessor) attach(key identity.Key) {
	a.usersMu.Lock()
	defer a.usersMu.Unlock()
	if a.users[key] {
		return
	}
	a.users[key] = true
	recordAttached(key, a.lastProbe.Load())
}

// detach stops serving key, and the watchers registered for it, and
// returns how many identities the accessor still serves.
func (a *accessor) detach(key identity.Key) int {
	a.usersMu.Lock()
	defer a.usersMu.Unlock()
	if a.users[key] {
		delete(a.users, key)
		recordDetached(key)
	}
	for _, d := range a.watches {
		d.remove(key)
	}
	return len(a.users)
}

// userKeys are the identities the accessor serves.
func (a *accessor) userKeys() []identity.Key {
	a.usersMu.Lock()
	defer a.usersMu.Unlock()
	keys := make([]identity.Key, 0, len(a.users))
	for key := range a.users {
		keys = append(keys, key)
	}
	return keys
}

// watch registers w for key on the accessor's cache, once per watcher name
// and identity, until key leaves the accessor or the accessor stops. The
// first registration of a name starts the watch on w's controller; the
// watchers of one name must share their controller and kind, as the
// watchers a controller registers for each identity do.
func (a *accessor) watch(ctx context.Context, key identity.Key, w Watcher) error {
	a.usersMu.Lock()
	if !a.users[key] {
		a.usersMu.Unlock()
		// key left the accessor since the caller looked it up.
		return fmt.Errorf("identity %s is not connected: its watch %s starts once it is", key, w.Name())
	}
	d, running := a.watches[w.Name()]
	if !running {
		d = &dispatch{watchers: map[identity.Key]Watcher{}}
	}
	// w is in the dispatch before the watch starts: the informer hands the
	// objects it holds to the dispatch as soon as it is.
	queue, added := d.add(key, w)
	if !running {
		src := &queueSource{SyncingSource: source.Kind(a.cache, w.Object(), handlerFor(d)), dispatch: d}
		if err := w.Watch(src); err != nil {
			a.usersMu.Unlock()
			return fmt.Errorf("watch %T through %s (%s): %w", w.Object(), key, w.Name(), err)
		}
		a.watches[w.Name()] = d
	}
	a.usersMu.Unlock()
	if !running || !added || queue == nil {
		// Registered already; or the watch is starting, or has not started
		// yet, and its start hands w every object already cached.
		return nil
	}
	// A watcher joining a running watch hears of the objects already
	// cached, as a handler added to an informer does: a change made just
	// before it joined is not missed.
	if err := a.replay(ctx, key, w, queue); err != nil {
		// Registered again, and replayed, at the next use of key.
		d.remove(key)
		return err
	}
	return nil
}

// replay hands w a creation event of every object of its kind the
// accessor's cache holds.
func (a *accessor) replay(ctx context.Context, key identity.Key, w Watcher, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	scheme := a.owner.opts.Scheme
	gvk, err := apiutil.GVKForObject(w.Object(), scheme)
	if err != nil {
		return fmt.Errorf("watch %T through %s (%s): %w", w.Object(), key, w.Name(), err)
	}
	obj, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return fmt.Errorf("watch %T through %s (%s): %w", w.Object(), key, w.Name(), err)
	}
	list, ok := obj.(client.ObjectList)
	if !ok {
		return fmt.Errorf("watch %T through %s (%s): %T is not a list", w.Object(), key, w.Name(), obj)
	}
	listCtx, cancel := context.WithTimeout(ctx, a.owner.opts.ConnectTimeout)
	defer cancel()
	if err := a.cache.List(listCtx, list, client.InNamespace(a.namespace)); err != nil {
		return classify(key, a.endpoint.Server.Display, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	handler := w.EventHandler()
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok {
			continue
		}
		e := event.CreateEvent{Object: obj, IsInInitialList: true}
		if passes(w.Predicates(), func(p predicate.Predicate) bool { return p.Create(e) }) {
			handler.Create(ctx, e, queue)
		}
	}
	return nil
}

// dispatch is one watcher name's handler on an accessor's informer: it
// hands each event to the watcher of every identity that registered the
// name, with that watcher's predicates and mapping, into the controller's
// queue.
type dispatch struct {
	mu       sync.RWMutex
	watchers map[identity.Key]Watcher
	// queue is the controller's, once it started the watch.
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// add registers w for key, and returns whether it was not yet, with the
// controller's queue if the watch has started.
func (d *dispatch) add(key identity.Key, w Watcher) (workqueue.TypedRateLimitingInterface[reconcile.Request], bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.watchers[key]; ok {
		return nil, false
	}
	d.watchers[key] = w
	return d.queue, true
}

func (d *dispatch) remove(key identity.Key) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.watchers, key)
}

func (d *dispatch) started(queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.queue = queue
}

// each calls do for the watcher of every identity registered, holding the
// read lock: an identity that leaves gets no event once detach returned.
func (d *dispatch) each(do func(Watcher)) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, w := range d.watchers {
		do(w)
	}
}

// handlerFor is d as the event handler of the watch's source.
func handlerFor(d *dispatch) *dispatchHandler { return &dispatchHandler{d: d} }

type dispatchHandler struct{ d *dispatch }

func (h *dispatchHandler) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.d.each(func(w Watcher) {
		if passes(w.Predicates(), func(p predicate.Predicate) bool { return p.Create(e) }) {
			w.EventHandler().Create(ctx, e, q)
		}
	})
}

func (h *dispatchHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.d.each(func(w Watcher) {
		if passes(w.Predicates(), func(p predicate.Predicate) bool { return p.Update(e) }) {
			w.EventHandler().Update(ctx, e, q)
		}
	})
}

func (h *dispatchHandler) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.d.each(func(w Watcher) {
		if passes(w.Predicates(), func(p predicate.Predicate) bool { return p.Delete(e) }) {
			w.EventHandler().Delete(ctx, e, q)
		}
	})
}

func (h *dispatchHandler) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.d.each(func(w Watcher) {
		if passes(w.Predicates(), func(p predicate.Predicate) bool { return p.Generic(e) }) {
			w.EventHandler().Generic(ctx, e, q)
		}
	})
}

// passes reports whether every predicate admits the event, as a Kind
// source's own predicates would.
func passes(predicates []predicate.Predicate, admits func(predicate.Predicate) bool) bool {
	for _, p := range predicates {
		if !admits(p) {
			return false
		}
	}
	return true
}

// queueSource is the watch's Kind source, telling its dispatch the
// controller's queue when the controller starts it.
type queueSource struct {
	source.SyncingSource
	dispatch *dispatch
}

func (s *queueSource) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.dispatch.started(queue)
	return s.SyncingSource.Start(ctx, queue)
}

func (s *queueSource) String() string { return fmt.Sprint(s.SyncingSource) }
