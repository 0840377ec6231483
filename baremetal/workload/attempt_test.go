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

package workload

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard/kubeguardtest"
)

// TestSilentWorkloadServerHoldsNoWorker stands for the attack "a tenant's
// server that accepts the connection and never answers holds the
// provider's workers", through the workload kubeconfig a tenant writes: its
// Cluster's kubeconfig names a listener that accepts and never responds,
// and its machines are reconciled by several workers at once. Connecting
// runs on a goroutine of Clusters, so every call for that cluster returns
// after ConnectWait, well before the attempt's Timeout, saying Connecting,
// and joins the one attempt; meanwhile another cluster is reached. When
// the attempt gives up, Source is told and the cluster is Unreachable.
// Were connecting done in the callers' reconciles, each call would be held
// for the whole Timeout.
func TestSilentWorkloadServerHoldsNoWorker(t *testing.T) {
	const connectWait, timeout = 500 * time.Millisecond, 8 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, scheme := newSecretStore(t)
	clusters, err := NewClusters(ClustersOptions{
		SecretMetadata: store, SecretReader: store.apiReader, Scheme: scheme, Policy: kubeguard.ServerPolicy{AllowLoopback: true},
		MinBackoff: time.Hour, MaxBackoff: time.Hour, Timeout: timeout, ConnectWait: connectWait,
	})
	if err != nil {
		t.Fatal(err)
	}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()
	if err := clusters.Source(func(_ context.Context, obj client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(obj)}}
	}).Start(ctx, queue); err != nil {
		t.Fatal(err)
	}

	healthy, _ := apiServer(t)
	store.write(t, kubeconfigFor(healthy, "t"))
	silentAddr, accepted := kubeguardtest.Silent(t)
	silent := types.NamespacedName{Namespace: testCluster.Namespace, Name: "cluster-silent"}
	store.writeFor(t, silent, []byte(strings.Replace(string(kubeconfigFor(healthy, "t")), healthy.URL, "https://"+silentAddr, 1)))

	// Workers reconciling the silent tenant's machines, while another
	// cluster is reached.
	type outcome struct {
		held time.Duration
		err  error
	}
	outcomes := make(chan outcome, 4)
	var wg sync.WaitGroup
	for range cap(outcomes) {
		wg.Go(func() {
			start := time.Now()
			_, err := clusters.Client(ctx, silent)
			outcomes <- outcome{held: time.Since(start), err: err}
		})
	}
	c, err := clusters.Client(ctx, testCluster)
	if err != nil {
		t.Fatalf("the healthy cluster: %v", err)
	}
	if err := c.List(ctx, &corev1.NodeList{}); err != nil {
		t.Fatalf("the healthy cluster's Nodes: %v", err)
	}
	wg.Wait()
	close(outcomes)
	for o := range outcomes {
		if we, ok := AsError(o.err); !ok || we.Reason != infrav1.IdentityConnectingReason || we.Terminal {
			t.Errorf("a call for the silent cluster got %v, want Connecting", o.err)
		}
		if o.held >= timeout/2 {
			t.Errorf("a call for the silent cluster was held %s, not let go after ConnectWait (%s)", o.held, connectWait)
		}
	}
	if we, known := clusters.State(silent); !known || we == nil || we.Reason != infrav1.IdentityConnectingReason {
		t.Errorf("state of the silent cluster = %v, %v; want Connecting while the attempt is under way", we, known)
	}
	if got := accepted.Load(); got != 1 {
		t.Errorf("the silent server saw %d connections, want one attempt for every call", got)
	}

	// The attempt gives up after Timeout: Source hears it, and the cluster
	// is Unreachable until its backoff ends.
	for queue.Len() > 0 {
		req, _ := queue.Get()
		queue.Done(req)
	}
	woken := make(chan struct{})
	go func() {
		defer close(woken)
		for {
			req, shutdown := queue.Get()
			if shutdown {
				return
			}
			queue.Done(req)
			if req.NamespacedName == silent {
				return
			}
		}
	}()
	select {
	case <-woken:
	case <-time.After(2 * timeout):
		t.Fatal("Source did not hear of the silent cluster's attempt ending")
	}
	_, err = clusters.Client(ctx, silent)
	if we, ok := AsError(err); !ok || we.Reason != kubeguard.ReasonUnreachable || we.Terminal {
		t.Fatalf("after the attempt: %v, want Unreachable, retried", err)
	}
	if got := accepted.Load(); got != 1 {
		t.Errorf("the silent server saw %d connections, want none more within the backoff", got)
	}
}
