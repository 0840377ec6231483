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

package controllers

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// cacheSyncTimeout bounds how long reconciles wait for the informer to
// deliver their own write; the watch usually does in milliseconds.
const cacheSyncTimeout = 5 * time.Second

// writeRecorder is the client a patch helper writes through. It remembers
// the newest resourceVersion the API server returned for the object, which
// the helper does not copy back into the object it was given.
type writeRecorder struct {
	client.Client
	written string
}

func (w *writeRecorder) note(obj client.Object) {
	if rv := obj.GetResourceVersion(); w.written == "" || !pool.CacheCaughtUp(w.written, rv) {
		w.written = rv
	}
}

func (w *writeRecorder) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	err := w.Client.Patch(ctx, obj, patch, opts...)
	if err == nil {
		w.note(obj)
	}
	return err
}

func (w *writeRecorder) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	err := w.Client.Update(ctx, obj, opts...)
	if err == nil {
		w.note(obj)
	}
	return err
}

func (w *writeRecorder) Status() client.SubResourceWriter {
	return &statusWriteRecorder{SubResourceWriter: w.Client.Status(), recorder: w}
}

type statusWriteRecorder struct {
	client.SubResourceWriter
	recorder *writeRecorder
}

func (s *statusWriteRecorder) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	err := s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
	if err == nil {
		s.recorder.note(obj)
	}
	return err
}

func (s *statusWriteRecorder) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	err := s.SubResourceWriter.Update(ctx, obj, opts...)
	if err == nil {
		s.recorder.note(obj)
	}
	return err
}

// ownWrites remembers, per object, the newest resourceVersion this
// process wrote of it, until its informer cache shows that version (or a
// later one). The zero value is ready to use.
//
// Why: the next reconcile of an object is often already queued by another
// event (its host changing state after the claim) when this one patches.
// Started from a cache that lags its own write, it would recompute and
// resend the status already written. Such a reconcile returns at once
// instead (stale): the write's own watch event, which every update of the
// object brings, queues the next one once the cache shows it. The worker
// is not held while the cache catches up, as a wait after each write
// would: at N machines associating at once, that wait was a share of
// every reconcile's time.
type ownWrites struct {
	mu      sync.Mutex
	pending map[client.ObjectKey]ownWrite
}

type ownWrite struct {
	version string
	at      time.Time
}

// record notes that w wrote key (nothing if it wrote nothing).
func (o *ownWrites) record(key client.ObjectKey, w *writeRecorder) {
	if w.written == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pending == nil {
		o.pending = map[client.ObjectKey]ownWrite{}
	}
	o.pending[key] = ownWrite{version: w.written, at: time.Now()}
}

// stale reports whether the cached copy of key, at cachedVersion, is
// older than this process's last write of it. A write the cache shows, or
// older than cacheSyncTimeout (its event lost to a watch that restarted
// and relisted a later version, or never coming), is forgotten.
func (o *ownWrites) stale(key client.ObjectKey, cachedVersion string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	written, ok := o.pending[key]
	if !ok {
		return false
	}
	if pool.CacheCaughtUp(cachedVersion, written.version) || time.Since(written.at) > cacheSyncTimeout {
		delete(o.pending, key)
		return false
	}
	return true
}

// forget drops key (the object is gone).
func (o *ownWrites) forget(key client.ObjectKey) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.pending, key)
}
