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
	"errors"
	"fmt"
	"strings"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

func budgetHost(name string, annotationBytes int) *bmov1alpha1.BareMetalHost {
	host := &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "pool", Name: name}}
	if annotationBytes > 0 {
		host.Annotations = map[string]string{"example.com/blob": strings.Repeat("x", annotationBytes)}
	}
	return host
}

// TestCacheBudget: objects are counted as the informer's transform sees
// them, updates replace their size, deletions give room back; the first
// object over the budget trips it, once, and every object after is refused.
func TestCacheBudget(t *testing.T) {
	tests := []struct {
		name         string
		maxObjects   int
		maxBytes     int64
		steps        func(b *cacheBudget, transform toolscache.TransformFunc) error
		wantTripped  string
		wantRefusals int
	}{
		{name: "under the budget", maxObjects: 3, maxBytes: 1 << 20, steps: func(b *cacheBudget, transform toolscache.TransformFunc) error {
			for i := range 3 {
				if _, err := transform(budgetHost(fmt.Sprint(i), 100)); err != nil {
					return err
				}
			}
			// An update replaces the object's size, it does not add to it.
			_, err := transform(budgetHost("0", 200))
			return err
		}},
		{name: "over the objects", maxObjects: 3, maxBytes: 1 << 20, wantTripped: "3 objects", wantRefusals: 2,
			steps: func(b *cacheBudget, transform toolscache.TransformFunc) error {
				for i := range 5 {
					_, _ = transform(budgetHost(fmt.Sprint(i), 0))
				}
				return nil
			}},
		{name: "over the bytes: a hostile server's large annotations", maxObjects: 1000, maxBytes: 1 << 20, wantTripped: "1 MiB",
			wantRefusals: 2, steps: func(b *cacheBudget, transform toolscache.TransformFunc) error {
				for i := range 4 {
					_, _ = transform(budgetHost(fmt.Sprint(i), 400<<10))
				}
				return nil
			}},
		{name: "deletions give room back", maxObjects: 2, maxBytes: 1 << 20, steps: func(b *cacheBudget, transform toolscache.TransformFunc) error {
			deletions := b.deletions()
			for i := range 6 {
				host := budgetHost(fmt.Sprint(i), 100)
				if _, err := transform(host); err != nil {
					return err
				}
				deletions.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "pool/" + host.Name, Obj: host})
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tripped []string
			b := newCacheBudget(tt.maxObjects, tt.maxBytes, func(problem string) { tripped = append(tripped, problem) })
			refusals := 0
			transform := b.transform(func(in any) (any, error) { return in, nil })
			counting := func(in any) (any, error) {
				out, err := transform(in)
				if errors.Is(err, errOverBudget) {
					refusals++
				}
				return out, err
			}
			if err := tt.steps(b, counting); err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.wantTripped == "" && len(tripped) > 0:
				t.Fatalf("tripped: %v", tripped)
			case tt.wantTripped != "" && (len(tripped) != 1 || !strings.Contains(tripped[0], tt.wantTripped)):
				t.Fatalf("tripped %v, want once with %q", tripped, tt.wantTripped)
			}
			if refusals != tt.wantRefusals {
				t.Errorf("%d objects refused, want %d (the one over the budget and every one after)", refusals, tt.wantRefusals)
			}
		})
	}
}

// TestDefaultBudgetFitsLargePools: a host as the cache keeps it, with the
// inspection data the provider reads, is a few KiB; the default budget
// holds the largest pools' namespaces.
func TestDefaultBudgetFitsLargePools(t *testing.T) {
	host := budgetHost("worker-0001", 0)
	host.Labels = map[string]string{"infrastructure.example.com/rack": "r01", "infrastructure.example.com/pool": "pool"}
	host.Spec = bmov1alpha1.BareMetalHostSpec{
		Online: true, BootMACAddress: "00:5c:52:31:3a:01", BootMode: bmov1alpha1.UEFI,
		BMC:             bmov1alpha1.BMCDetails{Address: "redfish-virtualmedia://10.10.0.1/redfish/v1/Systems/System.Embedded.1", CredentialsName: "worker-0001-bmc-secret"},
		RootDeviceHints: &bmov1alpha1.RootDeviceHints{DeviceName: "/dev/sda"}, AutomatedCleaningMode: bmov1alpha1.CleaningModeMetadata,
		ConsumerRef: &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: "tenant-a", Name: "worker-0", UID: "6f1c"}, Image: &bmov1alpha1.Image{URL: "http://172.22.0.1/images/node.qcow2", Checksum: "http://172.22.0.1/images/node.qcow2.sha256sum"},
	}
	host.Status.Provisioning.State = bmov1alpha1.StateProvisioned
	host.Status.HardwareDetails = &bmov1alpha1.HardwareDetails{Hostname: "worker-0001"}
	for i := range 8 {
		host.Status.HardwareDetails.NIC = append(host.Status.HardwareDetails.NIC,
			bmov1alpha1.NIC{Name: fmt.Sprintf("enp%ds0", i), MAC: fmt.Sprintf("00:5c:52:31:3b:%02x", i), IP: fmt.Sprintf("192.168.%d.21", i)})
	}
	trimmed, err := TransformHost()(host)
	if err != nil {
		t.Fatal(err)
	}
	size := encodedSize(trimmed)
	if fits := DefaultMaxCachedBytes / size; fits < DefaultMaxCachedObjects {
		t.Errorf("a cached host is %d bytes: the default budget of %d MiB holds %d, fewer than its %d objects",
			size, DefaultMaxCachedBytes>>20, fits, DefaultMaxCachedObjects)
	}
	t.Logf("a cached host is %d bytes of JSON", size)
}
