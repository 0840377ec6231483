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
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// cacheSyncTimeout bounds how long a reconcile waits for the informer to
// deliver its own write; the watch usually does in milliseconds.
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

// waitForWrites returns once the informer cache holds obj at the newest
// resourceVersion w recorded, or a later one. It sends no request.
//
// Why: the next reconcile of an object is often already queued by another
// event (a host changing state) when this one patches. Started from a cache
// that lags its own write, it would recompute and resend status already
// written, and its condition patch, which is optimistically locked, would
// fail with 409 Conflict and be retried. Waiting here keeps one object's
// reconciles in order at the cost of a few milliseconds per write.
func (w *writeRecorder) waitForWrites(ctx context.Context, cache client.Reader, obj client.Object) {
	if w.written == "" {
		return // nothing was written
	}
	key := client.ObjectKeyFromObject(obj)
	cached := obj.DeepCopyObject().(client.Object)
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, cacheSyncTimeout, true, func(ctx context.Context) (bool, error) {
		if err := cache.Get(ctx, key, cached); err != nil {
			// Gone (the finalizer was the last thing removed): nothing
			// left to be stale about.
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		}
		return pool.CacheCaughtUp(cached.GetResourceVersion(), w.written), nil
	})
	if err != nil {
		ctrl.LoggerFrom(ctx).V(4).Info("The cache did not show the object's own write in time; the next reconcile may start from a stale copy",
			"resourceVersion", w.written, "error", err.Error())
	}
}
