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

package hostbinding

import (
	"context"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// TestReleaseGivesThePoolItsCleaningBack plays a tenant whose machine
// disables automated cleaning (its right, for its own deprovisioning
// speed) and then releases its host: unless the host is kept for its own
// cluster (node reuse), the host is deprovisioned with the pool's cleaning
// mode, so the next tenant's machine never lands on disks nobody wiped.
func TestReleaseGivesThePoolItsCleaningBack(t *testing.T) {
	tests := []struct {
		name     string
		poolMode bmov1alpha1.AutomatedCleaningMode
		keep     bool
		// want is the mode the host is deprovisioned with; wantUncleaned
		// the cluster its disks are kept for.
		want          bmov1alpha1.AutomatedCleaningMode
		wantUncleaned string
	}{
		{name: "pool cleans by default", want: bmov1alpha1.CleaningModeMetadata},
		{name: "pool cleans explicitly", poolMode: bmov1alpha1.CleaningModeMetadata, want: bmov1alpha1.CleaningModeMetadata},
		{name: "pool does not clean: nothing to give back", poolMode: bmov1alpha1.CleaningModeDisabled, want: bmov1alpha1.CleaningModeDisabled},
		{name: "kept for node reuse: disks kept, for this cluster only", keep: true,
			want: bmov1alpha1.CleaningModeDisabled, wantUncleaned: "tenant-a/c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			host := availableHost("host-0")
			host.Spec.AutomatedCleaningMode = tt.poolMode
			f := newBindingFixture(t, interceptor.Funcs{}, host)
			f.m3m.Spec.AutomatedCleaningMode = string(bmov1alpha1.CleaningModeDisabled)
			b := f.binding.(*bmhBinding)
			if tt.keep {
				b.Reuse = Reuse{Owner: "md-workers", Cluster: "tenant-a/c", Reserve: true, LiveOwners: []string{"md-workers"}}
			}
			if _, err := b.Bind(ctx); err != nil {
				t.Fatal(err)
			}
			bound := f.host(t, "host-0")
			if bound.Spec.AutomatedCleaningMode != bmov1alpha1.CleaningModeDisabled {
				t.Fatalf("the machine's cleaning mode is not applied: %q", bound.Spec.AutomatedCleaningMode)
			}
			bound.Status.Provisioning.State = bmov1alpha1.StateProvisioned
			if err := f.pool.Update(ctx, bound); err != nil {
				t.Fatal(err)
			}

			if done, err := b.Release(ctx); err != nil || done {
				t.Fatalf("Release = %v, %v; want deprovisioning", done, err)
			}
			deprovisioning := f.host(t, "host-0")
			if got := deprovisioning.Spec.AutomatedCleaningMode; got != tt.want {
				t.Errorf("deprovisioned with cleaning %q, want %q", got, tt.want)
			}
			if got := deprovisioning.Annotations[pool.UncleanedAnnotation]; got != tt.wantUncleaned {
				t.Errorf("%s = %q, want %q", pool.UncleanedAnnotation, got, tt.wantUncleaned)
			}

			deprovisioning.Status.Provisioning.State = bmov1alpha1.StateAvailable
			if err := f.pool.Update(ctx, deprovisioning); err != nil {
				t.Fatal(err)
			}
			if done, err := b.Release(ctx); err != nil || !done {
				t.Fatalf("Release = %v, %v; want released", done, err)
			}
			released := f.host(t, "host-0")
			if _, recorded := released.Annotations[PoolCleaningModeAnnotation]; recorded != tt.keep {
				t.Errorf("pool mode still recorded: %v, want %v (only while kept)", recorded, tt.keep)
			}
			if got := released.Annotations[pool.UncleanedAnnotation]; got != tt.wantUncleaned {
				t.Errorf("released: %s = %q, want %q", pool.UncleanedAnnotation, got, tt.wantUncleaned)
			}
		})
	}
}

// TestUncleanedHostStaysWithItsCluster: a host whose disks may hold a
// cluster's data is taken by no other cluster's machine, and one of its own
// cluster gets it with the pool's cleaning mode back under its own.
func TestUncleanedHostStaysWithItsCluster(t *testing.T) {
	uncleaned := func() *bmov1alpha1.BareMetalHost {
		host := availableHost("host-0")
		host.Spec.AutomatedCleaningMode = bmov1alpha1.CleaningModeDisabled
		host.Annotations = map[string]string{pool.UncleanedAnnotation: "tenant-a/c", PoolCleaningModeAnnotation: string(bmov1alpha1.CleaningModeMetadata)}
		return host
	}
	machine := &infrav1.Metal3Machine{}
	if chosen, err := Choose([]bmov1alpha1.BareMetalHost{*uncleaned()}, machine, "", Reuse{Cluster: "tenant-b/c"}); err != nil || len(chosen.Candidates) != 0 {
		t.Fatalf("another cluster is offered hosts (%v), want none", err)
	}
	ctx := context.Background()
	f := newBindingFixture(t, interceptor.Funcs{}, uncleaned())
	f.binding.(*bmhBinding).Reuse = Reuse{Cluster: "tenant-a/c"}
	if _, err := f.binding.Bind(ctx); err != nil {
		t.Fatalf("its own cluster: %v", err)
	}
	host := f.host(t, "host-0")
	if host.Spec.AutomatedCleaningMode != bmov1alpha1.CleaningModeMetadata {
		t.Errorf("taken with cleaning %q, want the pool's back", host.Spec.AutomatedCleaningMode)
	}
	if _, marked := host.Annotations[pool.UncleanedAnnotation]; marked {
		t.Error("the mark stays on a host its cluster took again")
	}
}
