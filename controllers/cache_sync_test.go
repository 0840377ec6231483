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

// TestWriteRecorderWaitsForTheNewestWrite: the recorder keeps the newest
// resourceVersion of the writes through it, and waiting returns at once
// when nothing was written.
func TestWriteRecorderWaitsForTheNewestWrite(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cm).Build()
	w := &writeRecorder{Client: c}
	w.waitForWrites(ctx, c, cm) // nothing written: returns

	live := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), live); err != nil {
		t.Fatal(err)
	}
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
	// The fake client is its own cache: the write is visible at once.
	w.waitForWrites(ctx, c, cm)
}
