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
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// reconcilesPerRound is the workload size the issue asks to compare.
const reconcilesPerRound = 200

// requestCounter counts HTTP requests through a transport.
type requestCounter struct{ n atomic.Int64 }

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		c.n.Add(1)
		return rt.RoundTrip(req)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// machineShapedReconcile does what one Metal3Machine reconcile does with its
// host: get the host access for its identity, list the hosts (choosing one),
// read the associated host, read its user-data Secret, and patch the host.
func machineShapedReconcile(ctx context.Context, cache *IdentityCache, user client.Object, id identity.Identity, hostName string, round int) error {
	access, err := cache.HostAccess(ctx, id)
	if err != nil {
		return err
	}
	c := access.Client()
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := c.List(ctx, hosts, client.InNamespace(access.Namespace())); err != nil {
		return err
	}
	host := &bmov1alpha1.BareMetalHost{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: access.Namespace(), Name: hostName}, host); err != nil {
		return err
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: access.Namespace(), Name: hostName + "-user-data"}, &corev1.Secret{}); err != nil {
		return err
	}
	patch := client.MergeFrom(host.DeepCopy())
	if host.Annotations == nil {
		host.Annotations = map[string]string{}
	}
	host.Annotations["bench.example.com/round"] = fmt.Sprint(round)
	return c.Patch(ctx, host, patch)
}

// BenchmarkRemoteVsInCluster runs the same 200 Metal3Machine-shaped
// reconciles through the in-cluster identity and through a kubeconfig
// identity pointing at the same API server, with warm caches, and reports
// the ratios of time and of API requests (remote / in-cluster).
func BenchmarkRemoteVsInCluster(b *testing.B) {
	scheme := newScheme(&testing.T{})
	env := testenv.Start(b, testenv.Options{Scheme: scheme, CRDDirectoryPaths: []string{testenv.BMOCRDPath(b)}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Hosts and their user-data Secrets, in the in-cluster namespace and in
	// the pool namespace of the remote identity.
	const hostName = "host-3"
	for _, ns := range []string{"tenant-a", "pool-a"} {
		env.GrantInNamespace(b, ns, "bench-"+ns, testenv.HostProviderRules()...)
		for i := range 10 {
			name := fmt.Sprintf("host-%d", i)
			if err := env.Client.Create(ctx, host(ns, name)); err != nil {
				b.Fatal(err)
			}
			if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-user-data"}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := env.Client.Create(ctx, testenv.IdentitySecret("tenant-a", "pool-kubeconfig", env.UserKubeconfig(b, "bench-pool-a", "pool", "pool-a"))); err != nil {
		b.Fatal(err)
	}

	var inClusterRequests, remoteRequests requestCounter
	mgmtConfig := rest.CopyConfig(env.Config)
	mgmtConfig.Wrap(inClusterRequests.wrap)
	mgr, err := ctrl.NewManager(mgmtConfig, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		// As main.go configures the manager: Secrets are never cached.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	cache, err := NewIdentityCache(Options{
		SecretReader: mgr.GetAPIReader(), ManagementCache: mgr.GetCache(), InClusterClient: mgr.GetClient(), Scheme: scheme,
		WrapTransport: remoteRequests.wrap,
		// The same client limits as the manager's, so neither is throttled differently.
		QPS: mgmtConfig.QPS, Burst: mgmtConfig.Burst,
		// envtest's API servers listen on loopback.
		Policy: kubeguard.ServerPolicy{AllowLoopback: true},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := mgr.Add(cache); err != nil {
		b.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		b.Fatal("cache did not sync")
	}

	inCluster := identity.Identity{ObjectNamespace: "tenant-a"}
	remote := identity.Identity{Key: identity.Key{SecretNamespace: "tenant-a", SecretName: "pool-kubeconfig"}, ObjectNamespace: "tenant-a"}
	// One machine per identity: a machine that switched identity would
	// release the other (correctly) and reconnect it every round.
	users := map[identity.Key]client.Object{
		inCluster.Key: machine("tenant-a", "worker-in-cluster"),
		remote.Key:    machine("tenant-a", "worker-remote"),
	}

	// Warm up both paths: informers synced, identity connected.
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range []identity.Identity{inCluster, remote} {
		for {
			err := machineShapedReconcile(ctx, cache, users[id.Key], id, hostName, 0)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("warm-up through %s: %v", id.Key, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	var inClusterTime, remoteTime time.Duration
	var inClusterCount, remoteCount int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, run := range []struct {
			id       identity.Identity
			elapsed  *time.Duration
			requests *int64
			counter  *requestCounter
		}{
			{inCluster, &inClusterTime, &inClusterCount, &inClusterRequests},
			{remote, &remoteTime, &remoteCount, &remoteRequests},
		} {
			startRequests := inClusterRequests.n.Load() + remoteRequests.n.Load()
			start := time.Now()
			for r := range reconcilesPerRound {
				if err := machineShapedReconcile(ctx, cache, users[run.id.Key], run.id, hostName, i*reconcilesPerRound+r+1); err != nil {
					b.Fatalf("reconcile through %s: %v", run.id.Key, err)
				}
			}
			*run.elapsed += time.Since(start)
			// Every request either path makes counts, on both clusters'
			// clients: the remote path must not hide work on the management side.
			*run.requests += inClusterRequests.n.Load() + remoteRequests.n.Load() - startRequests
		}
	}
	b.StopTimer()
	rounds := float64(b.N)
	b.ReportMetric(float64(inClusterTime.Microseconds())/rounds/reconcilesPerRound, "µs/reconcile-in-cluster")
	b.ReportMetric(float64(remoteTime.Microseconds())/rounds/reconcilesPerRound, "µs/reconcile-remote")
	b.ReportMetric(float64(inClusterCount)/rounds/reconcilesPerRound, "requests/reconcile-in-cluster")
	b.ReportMetric(float64(remoteCount)/rounds/reconcilesPerRound, "requests/reconcile-remote")
	b.ReportMetric(float64(remoteTime)/float64(inClusterTime), "time-ratio")
	b.ReportMetric(float64(remoteCount)/float64(inClusterCount), "request-ratio")
}
