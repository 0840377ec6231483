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
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestOwnWritesKeepReconcilesOffStaleCopies: the recorder keeps the newest
// resourceVersion of the writes through it; a reconcile that finds the
// cache older than that returns (stale) until the cache shows it, and a
// reconcile that wrote nothing leaves no mark.
func TestOwnWritesKeepReconcilesOffStaleCopies(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cm).Build()
	key := client.ObjectKeyFromObject(cm)
	var own ownWrites
	own.record(key, &writeRecorder{Client: c})
	if own.stale(key, "1") {
		t.Fatal("a reconcile that wrote nothing made the next one wait")
	}

	live := &corev1.ConfigMap{}
	if err := c.Get(ctx, key, live); err != nil {
		t.Fatal(err)
	}
	read := live.ResourceVersion
	w := &writeRecorder{Client: c}
	for i := range 2 {
		patch := client.MergeFrom(live.DeepCopy())
		live.Data = map[string]string{"round": string(rune('a' + i))}
		if err := w.Patch(ctx, live, patch); err != nil {
			t.Fatal(err)
		}
	}
	if w.written != live.ResourceVersion {
		t.Fatalf("recorded %q, want the last write's %q", w.written, live.ResourceVersion)
	}
	own.record(key, w)
	if !own.stale(key, read) {
		t.Fatal("a cache at the version read before the writes is not stale")
	}
	if own.stale(key, live.ResourceVersion) {
		t.Fatal("a cache that shows the last write is stale")
	}
	if own.stale(key, read) {
		t.Fatal("a write the cache showed once is not forgotten")
	}
	own.record(key, w)
	own.forget(key)
	if own.stale(key, read) {
		t.Fatal("a forgotten object is stale")
	}
}
