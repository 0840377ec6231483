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

package main

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
)

// A timed window (an association run and its floor) must load the API
// server under test with the same work on both sides, and only with the
// work being measured. Three things loaded only the provider's side:
//   - Cluster API's controllers ran beside it (env.ManagementOptions'
//     WithoutClusterAPI was never read): at N = 1,000 they sent 22 % of
//     the server's requests during the provider's window (Machine and
//     Machine status patches), none during the floor's, and none in
//     upstream CAPM3's association runs, which never started them;
//   - the benchmark listed every Metal3Machine five times a second to see
//     whether they were associated (at N = 1,000, five thousand objects
//     encoded a second by the server the provider shares two cores with);
//     the floor knows when its own writes return and never polled;
//   - it read each Machine inside the window before creating its
//     Metal3Machine, and the floor's Metal3Machines were created before its
//     window.
//
// Now the benchmark watches (watchNamespace), reads the Machines before the
// window, and the floor's Metal3Machines are created in its window as the
// provider's are in its own (floorMachines).

// watchNamespace caches objs of namespace on the server at cfg until ctx
// ends, synced before it returns: a window's waits read this cache, so the
// server under test serves one watch per kind instead of a list per poll.
func watchNamespace(ctx context.Context, cfg *rest.Config, namespace string, objs ...client.Object) (client.Reader, error) {
	watched, err := cache.New(cfg, cache.Options{
		Scheme: env.Scheme(), DefaultNamespaces: map[string]cache.Config{namespace: {}},
		DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, fmt.Errorf("cache of namespace %s: %w", namespace, err)
	}
	for _, obj := range objs {
		if _, err := watched.GetInformer(ctx, obj); err != nil {
			return nil, fmt.Errorf("watch %T in namespace %s: %w", obj, namespace, err)
		}
	}
	go func() { _ = watched.Start(ctx) }()
	if !watched.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("cache of namespace %s did not sync: %w", namespace, ctx.Err())
	}
	return watched, nil
}

// floorMachines creates a floor's Metal3Machines inside its window, as the
// provider's are created inside its own: 8 at a time, as fast as the server
// takes them, while the floor's workers associate those that exist.
type floorMachines struct {
	created []chan struct{} // created[i] is closed once machine i exists
	done    chan struct{}   // closed once every creation returned; err says how
	err     error
}

// startFloorMachines starts creating the n objects that machine(i) makes.
func startFloorMachines(ctx context.Context, c client.Client, n int, machine func(int) client.Object) *floorMachines {
	f := &floorMachines{created: make([]chan struct{}, n), done: make(chan struct{})}
	for i := range f.created {
		f.created[i] = make(chan struct{})
	}
	go func() {
		defer close(f.done)
		f.err = parallel(n, 8, func(i int) error {
			if err := c.Create(ctx, machine(i)); err != nil {
				return fmt.Errorf("create floor machine %d: %w", i, err)
			}
			close(f.created[i])
			return nil
		})
	}()
	return f
}

// wait returns once machine i exists, or with the error that stopped the
// creations before it.
func (f *floorMachines) wait(i int) error {
	select {
	case <-f.created[i]:
		return nil
	case <-f.done:
		select {
		case <-f.created[i]:
			return nil
		default:
			return f.err
		}
	}
}

// finish waits for every creation and returns the first error.
func (f *floorMachines) finish() error {
	<-f.done
	return f.err
}
