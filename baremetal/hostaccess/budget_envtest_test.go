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
	"runtime"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// TestHostileIdentityIsBounded plays a tenant whose identity points at an
// API server of its own, on an address the policy allows, that passes
// every check and then streams distinct hosts with 64 KiB annotations
// without end: without a bound the provider caches them all and is killed,
// taking every tenant with it. The identity's connection is dropped once
// it holds more than its budget (8 MiB here), the identity says
// LimitExceeded naming the flag, the stream is closed, and the heap comes
// back down; another tenant's identity keeps its hosts and its watch all
// along.
func TestHostileIdentityIsBounded(t *testing.T) {
	g := NewWithT(t)
	const budget = 8 << 20
	tc := startTwoClustersWith(t, nil, func(o *Options) {
		o.MaxCachedBytes = budget
		o.MinBackoff, o.MaxBackoff = time.Minute, time.Minute // one attempt in this test
	})
	recorder, watcher := tc.startHostRecorder(t)
	good := tc.tenant(t, "tenant-good", "tenant-good", "pool-good")
	goodAccess := tc.hostAccess(t, good)
	g.Expect(tc.cache.Watch(tc.ctx, good.Key, watcher)).To(Succeed())

	hostile := testenv.StartHostileAPIServer(t, 64<<10)
	hostileNS := tc.ns("tenant-hostile")
	tc.mgmt.GrantInNamespace(t, hostileNS, "unused-tenant-hostile")
	g.Expect(tc.mgmt.Client.Create(tc.ctx, testenv.IdentitySecret(hostileNS, "hostile-kubeconfig", hostile.Kubeconfig("hosts")))).To(Succeed())
	hostileID := identity.Identity{Key: identity.Key{SecretNamespace: hostileNS, SecretName: "hostile-kubeconfig"}, ObjectNamespace: hostileNS}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	g.Eventually(func() string {
		_, err := tc.cache.HostAccess(tc.ctx, hostileID)
		if ie, ok := identity.AsError(err); ok {
			return ie.Reason + ": " + ie.Message
		}
		return "connected"
	}).WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(And(
		HavePrefix(infrav1.IdentityLimitExceededReason+": "), ContainSubstring("--remote-max-cached-bytes")),
		"the identity is cut off once over its budget")
	streamed := hostile.Streamed.Load()
	g.Expect(streamed).To(BeNumerically(">=", budget/(64<<10)), "it was cut off because of what it sent")
	g.Eventually(hostile.Streamed.Load).WithTimeout(10 * time.Second).Should(BeNumerically("<", streamed+10_000))
	g.Consistently(func() int64 {
		s := hostile.Streamed.Load()
		time.Sleep(500 * time.Millisecond)
		return hostile.Streamed.Load() - s
	}).
		WithTimeout(3*time.Second).Should(BeZero(), "its stream is closed and not reopened within the backoff")
	g.Expect(tc.cache.ConnectedKeys()).NotTo(ContainElement(hostileID.Key))

	// What it sent is gone with its informers.
	g.Eventually(func() uint64 {
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if after.HeapAlloc < before.HeapAlloc {
			return 0
		}
		return after.HeapAlloc - before.HeapAlloc
	}).WithTimeout(10*time.Second).Should(BeNumerically("<", uint64(budget)), "the heap comes back down")

	// The other tenant was served all along.
	g.Expect(tc.pool.Client.Create(tc.ctx, host(tc.ns("pool-good"), "host-0"))).To(Succeed())
	g.Eventually(recorder.saw).WithTimeout(20*time.Second).Should(
		ContainElement(types.NamespacedName{Namespace: tc.ns("pool-good"), Name: "host-0"}), "the other tenant's watch still works")
	g.Expect(goodAccess.Client().Get(context.Background(), types.NamespacedName{Namespace: tc.ns("pool-good"), Name: "host-0"},
		&bmov1alpha1.BareMetalHost{})).To(Succeed(), "and its cache serves it")
}
