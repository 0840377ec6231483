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

package datatemplate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

func dataScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, infrav1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

// claim of template "nodes", created age ago (older claims come first).
func claim(name string, age time.Duration) *infrav1.Metal3DataClaim {
	return &infrav1.Metal3DataClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "tenant-a", Name: name, UID: k8stypes.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(-age)),
		},
		Spec: infrav1.Metal3DataClaimSpec{Template: &infrav1.Metal3ObjectRef{Name: "nodes"}},
	}
}

func dataFor(claimName string, index int32) *infrav1.Metal3Data {
	return &infrav1.Metal3Data{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: fmt.Sprintf("nodes-%d", index)},
		Spec: infrav1.Metal3DataSpec{
			Index:    ptr.To(index),
			Template: &infrav1.Metal3ObjectRef{Name: "nodes"},
			Claim:    &infrav1.Metal3ObjectRef{Name: claimName},
		},
	}
}

// indexMap is status.indexes as the map it was before v1beta2.
func indexMap(entries []infrav1.IndexEntry) map[string]int32 {
	out := map[string]int32{}
	for _, e := range entries {
		out[e.Name] = ptr.Deref(e.Index, -1)
	}
	return out
}

// TestAllocateIndexes: claims get the lowest free indexes in the order
// they came, existing data keep theirs, and a failed creation allocates
// nothing (the next reconcile retries from what exists).
func TestAllocateIndexes(t *testing.T) {
	tests := []struct {
		name        string
		objects     []client.Object
		failCreate  bool
		wantIndexes map[string]int32
		wantErr     bool
	}{
		{
			name:        "in the order the claims came",
			objects:     []client.Object{claim("c", time.Minute), claim("a", 3*time.Minute), claim("b", 2*time.Minute)},
			wantIndexes: map[string]int32{"a": 0, "b": 1, "c": 2},
		},
		{
			name: "existing data keep their index; a new claim fills the gap",
			objects: []client.Object{
				claim("a", 3*time.Minute), dataFor("a", 2), claim("b", 2*time.Minute), dataFor("b", 0), claim("c", time.Minute),
			},
			wantIndexes: map[string]int32{"a": 2, "b": 0, "c": 1},
		},
		{
			name:       "a creation that fails allocates nothing",
			objects:    []client.Object{claim("a", time.Minute)},
			failCreate: true,
			wantErr:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			template := &infrav1.Metal3DataTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "nodes", UID: "uid-nodes"}}
			objects := append([]client.Object{template}, tt.objects...)
			funcs := interceptor.Funcs{}
			if tt.failCreate {
				funcs.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if _, ok := obj.(*infrav1.Metal3Data); ok {
						return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "metal3datas"}, obj.GetName())
					}
					return c.Create(ctx, obj, opts...)
				}
			}
			c := fake.NewClientBuilder().WithScheme(dataScheme(t)).WithObjects(objects...).
				WithStatusSubresource(&infrav1.Metal3DataClaim{}).WithInterceptorFuncs(funcs).Build()
			m := &DataTemplateManager{Client: c, Reader: c, Template: template}
			_, err := m.AllocateIndexes(ctx)
			if tt.wantErr {
				if !apierrors.IsAlreadyExists(err) {
					t.Fatalf("AllocateIndexes = %v, want the creation's error", err)
				}
				if len(template.Status.Indexes) != 0 {
					t.Fatalf("indexes %v recorded after a failed creation", template.Status.Indexes)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := indexMap(template.Status.Indexes); fmt.Sprint(got) != fmt.Sprint(tt.wantIndexes) {
				t.Fatalf("indexes %v, want %v", got, tt.wantIndexes)
			}
			if !slices.IsSortedFunc(template.Status.Indexes, func(a, b infrav1.IndexEntry) int { return strings.Compare(a.Name, b.Name) }) {
				t.Errorf("indexes %v are not sorted by claim name", template.Status.Indexes)
			}
			for name, index := range tt.wantIndexes {
				got := &infrav1.Metal3DataClaim{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: name}, got); err != nil {
					t.Fatal(err)
				}
				if ref := got.Status.RenderedData; ref == nil || ref.Name != fmt.Sprintf("nodes-%d", index) {
					t.Errorf("claim %s records %+v, want nodes-%d", name, ref, index)
				}
			}
		})
	}
}
