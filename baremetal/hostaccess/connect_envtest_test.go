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
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard/kubeguardtest"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// TestSilentServerHoldsNoWorker stands for the attack "a tenant's server
// that accepts the connection and never answers holds the provider's
// workers": a tenant points its identity at a listener that accepts and
// never responds, and its objects are reconciled by several workers at
// once. Connecting runs on a goroutine of the cache, so every call for
// that identity returns after ConnectWait, well before the attempt's
// ConnectTimeout, saying Connecting, and joins the one attempt rather than
// dialling again; meanwhile another tenant's identity connects. When the
// attempt gives up, the identity's users are told through their Source and
// the identity says Unreachable. Were connecting done in the callers'
// reconciles, each call would be held for the whole ConnectTimeout.
func TestSilentServerHoldsNoWorker(t *testing.T) {
	g := NewWithT(t)
	const connectWait, connectTimeout = time.Second, 10 * time.Second
	tc := startTwoClustersWith(t, nil, func(o *Options) {
		o.ConnectWait, o.ConnectTimeout = connectWait, connectTimeout
		o.MinBackoff, o.MaxBackoff = time.Minute, time.Minute // one attempt in this test
	})
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()
	g.Expect(tc.cache.Source("test-silent", func(_ context.Context, secret types.NamespacedName) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: secret}}
	}).Start(tc.ctx, queue)).To(Succeed())

	healthy := tc.tenant(t, "tenant-healthy", "tenant-healthy", "pool-healthy")
	silentAddr, accepted := kubeguardtest.Silent(t)
	silentNS := tc.ns("tenant-silent")
	tc.pool.GrantInNamespace(t, tc.ns("pool-silent"), "tenant-silent", testenv.HostProviderRules()...)
	tc.mgmt.GrantInNamespace(t, silentNS, "unused-tenant-silent") // creates the namespace
	g.Expect(tc.mgmt.Client.Create(tc.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "silent-kubeconfig", Namespace: silentNS},
		Data: map[string][]byte{"kubeconfig": withServer(t, tc.pool.UserKubeconfig(t, "tenant-silent", "pool", tc.ns("pool-silent")),
			"https://"+silentAddr)},
	})).To(Succeed())
	silent := identity.Identity{Key: identity.Key{SecretNamespace: silentNS, SecretName: "silent-kubeconfig"}, ObjectNamespace: silentNS}

	// A worker's call: how long it was held, and what it was told.
	type outcome struct {
		Held   time.Duration
		Reason string
	}
	call := func() outcome {
		start := time.Now()
		_, err := tc.cache.HostAccess(tc.ctx, silent)
		return outcome{Held: time.Since(start), Reason: reasonAndMessage(err)}
	}
	// The management cache may not have the Secret yet: SecretNotFound,
	// at once, until it does.
	g.Eventually(call).WithTimeout(connectTimeout/2).Should(And(
		HaveField("Reason", HavePrefix(infrav1.IdentityConnectingReason+": ")),
		HaveField("Held", BeNumerically("<", connectTimeout/2)),
	), "a call for the silent identity is not held for the attempt's timeout")

	// Workers reconciling the silent tenant's objects, while another
	// tenant's identity connects.
	var (
		wg       sync.WaitGroup
		outcomes = make(chan outcome, 4)
	)
	for range cap(outcomes) {
		wg.Go(func() { outcomes <- call() })
	}
	access := tc.hostAccess(t, healthy)
	g.Expect(access.Namespace()).To(Equal(tc.ns("pool-healthy")), "the healthy tenant connects meanwhile")
	wg.Wait()
	close(outcomes)
	for o := range outcomes {
		g.Expect(o.Reason).To(HavePrefix(infrav1.IdentityConnectingReason+": "), "still connecting")
		g.Expect(o.Held).To(BeNumerically("<", connectTimeout/2), "each worker is let go after ConnectWait")
	}
	g.Expect(call().Reason).To(HavePrefix(infrav1.IdentityConnectingReason+": "),
		"the silent attempt was still under way while the healthy identity connected")
	g.Expect(accepted.Load()).To(BeNumerically("==", 1), "every call joined the one attempt")

	// The attempt gives up after ConnectTimeout: the silent identity's
	// users are told, and it is Unreachable until its backoff ends.
	drain(queue) // what came before the attempt ended
	g.Eventually(func() []types.NamespacedName { return drain(queue) }).WithTimeout(2*connectTimeout).
		Should(ContainElement(silent.Key.Secret()), "the silent identity's users are woken when the attempt ends")
	g.Expect(call().Reason).To(HavePrefix(infrav1.IdentityUnreachableReason + ": "))
	g.Expect(accepted.Load()).To(BeNumerically("==", 1), "no new attempt within the backoff")
	g.Expect(tc.cache.ConnectedKeys()).To(ConsistOf(healthy.Key))
}
