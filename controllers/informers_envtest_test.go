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
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// informerRecorder is the manager's cache, noting each kind an informer is
// asked for.
type informerRecorder struct {
	cache.Cache
	scheme *runtime.Scheme
	mu     sync.Mutex
	kinds  map[schema.GroupVersionKind]bool
}

func (r *informerRecorder) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if gvk, err := apiutil.GVKForObject(obj, r.scheme); err == nil {
		r.mu.Lock()
		r.kinds[gvk] = true
		r.mu.Unlock()
	}
	return r.Cache.GetInformer(ctx, obj, opts...)
}

// TestKindsEveryAssociationReadsAreListedWithTheManager: the kinds a
// Metal3Machine's association reads from the cache without a watch set up
// with the manager get their informers at setup, so they list with the
// manager's cache. Asked for by the first association after a start
// instead, each informer held that reconcile until listed: 1.0–1.3 s in
// every association run of make bench-scale for MachineDeployments, whose
// first watch the busy API server answered with 429 (client-go retries a
// second later), and 0.2 s for in-cluster BareMetalHosts
// (docs/performance.md). A management cluster that serves no
// BareMetalHosts starts without them (its tenants all have identities).
func TestKindsEveryAssociationReadsAreListedWithTheManager(t *testing.T) {
	for _, tt := range []struct {
		name     string
		hosts    bool
		listed   []client.Object
		unlisted []client.Object
	}{
		{
			name: "a management cluster with the Bare Metal Operator's CRDs", hosts: withHosts,
			listed: []client.Object{&clusterv1.MachineDeployment{}, &bmov1alpha1.BareMetalHost{}},
		},
		{
			name: "a management cluster without them", hosts: noHosts,
			listed: []client.Object{&clusterv1.MachineDeployment{}}, unlisted: []client.Object{&bmov1alpha1.BareMetalHost{}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			scheme := testScheme(t)
			mgmt := managementCluster(t, scheme, tt.hosts)
			recorder := &informerRecorder{scheme: scheme, kinds: map[schema.GroupVersionKind]bool{}}
			mgr, err := ctrl.NewManager(mgmt.Config, ctrl.Options{
				Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
				NewCache: func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
					c, err := cache.New(cfg, opts)
					recorder.Cache = c
					return recorder, err
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if _, err := Setup(ctx, mgr, SetupOptions{
				Remote: testRemoteOptions(), Workload: testWorkloadOptions(),
				Controller: controller.Options{SkipNameValidation: ptr.To(true)},
			}); err != nil {
				t.Fatal(err)
			}
			asked := func(kind client.Object) bool {
				gvk, err := apiutil.GVKForObject(kind, scheme)
				if err != nil {
					t.Fatal(err)
				}
				recorder.mu.Lock()
				defer recorder.mu.Unlock()
				return recorder.kinds[gvk]
			}
			for _, kind := range tt.listed {
				if !asked(kind) {
					t.Errorf("no %T informer is set up with the manager: the first association after a start waits for it to list", kind)
				}
			}
			for _, kind := range tt.unlisted {
				if asked(kind) {
					t.Errorf("a %T informer is set up on a management cluster that does not serve the kind", kind)
				}
			}
		})
	}
}
