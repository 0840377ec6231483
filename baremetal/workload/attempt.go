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
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
)

// Connecting runs here, on goroutines of Clusters: a caller starts or
// joins the attempt for its cluster's kubeconfig and waits for it
// ConnectWait at most, so a tenant's server that answers slowly, or never,
// holds no reconcile worker for the whole Timeout.

// startAttempt starts connecting cluster with kubeconfig, from its Secret
// at secretVersion, on a goroutine of Clusters, and returns the attempt. A
// client of another Secret version is closed first: the old kubeconfig
// stops before the new one starts.
func (c *Clusters) startAttempt(cluster types.NamespacedName, secretVersion string, kubeconfig *kubeguard.Kubeconfig) (client.Client, chan struct{}, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx.Err() != nil {
		return nil, nil, errors.New("workload cluster cache is stopped")
	}
	conn, ok := c.conns[cluster]
	if !ok {
		conn = &connection{}
		c.conns[cluster] = conn
	}
	if conn.endpoint != nil {
		conn.endpoint.Close()
		conn.client, conn.endpoint = nil, nil
	}
	if conn.secretVersion != secretVersion {
		// The verdict on another kubeconfig does not stand for this one.
		conn.err = nil
	}
	attempt := make(chan struct{})
	conn.secretVersion, conn.attempt, conn.server = secretVersion, attempt, kubeconfig.Server.Display
	c.attempts.Add(1)
	go c.connect(cluster, secretVersion, kubeconfig, attempt)
	return nil, attempt, nil
}

// connect is an attempt to connect cluster: the discovery handshake
// (kubeconfig.Connect) within Timeout of Clusters' lifetime, whoever waits
// for it. It records the client or the failure, unless the attempt was
// superseded meanwhile (a newer Secret, Forget), and tells Source.
func (c *Clusters) connect(cluster types.NamespacedName, secretVersion string, kubeconfig *kubeguard.Kubeconfig, attempt chan struct{}) {
	defer c.attempts.Done()
	defer close(attempt)
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.Timeout)
	defer cancel()
	endpoint, err := kubeconfig.Connect(ctx, kubeguard.ClientOptions{
		RequestTimeout: c.opts.Timeout, MaxResponseBytes: c.opts.MaxResponseBytes, MaxRequestsInFlight: c.opts.MaxRequestsInFlight,
		QPS: c.opts.QPS, Burst: c.opts.Burst, UserAgent: c.opts.UserAgent, WrapTransport: c.opts.WrapTransport,
	})
	var cl client.Client
	if err == nil {
		cl, err = client.New(endpoint.Config, client.Options{HTTPClient: endpoint.HTTPClient, Scheme: c.opts.Scheme, Mapper: workloadMapper()})
		if err != nil {
			endpoint.Close()
		}
	}
	c.mu.Lock()
	conn, ok := c.conns[cluster]
	if !ok || conn.attempt != attempt {
		c.mu.Unlock()
		if err == nil {
			endpoint.Close()
		}
		return
	}
	conn.attempt = nil
	if err != nil {
		_, _ = c.failLocked(cluster, secretVersion, err, true)
		c.mu.Unlock()
		// Whatever it says, the attempt's end is news to those waiting.
		c.changed(cluster)
		return
	}
	conn.client, conn.endpoint, conn.err, conn.failures, conn.retryAt, conn.lastUsed = cl, endpoint, nil, 0, time.Time{}, time.Now()
	c.mu.Unlock()
	ctrl.Log.WithName("workload").Info("Connected to the workload cluster", "cluster", cluster.String(), "server", endpoint.Server.Display)
	c.changed(cluster)
}

// stillConnecting is the error of a caller that stopped waiting for
// cluster's attempt (waitErr says why). Past its deadline the caller gets
// the last failure of the same kubeconfig, which stands until the attempt
// gives another verdict, else reason Connecting.
func (c *Clusters) stillConnecting(cluster types.NamespacedName, waitErr error) error {
	if !errors.Is(waitErr, kubeguard.ErrStillConnecting) {
		return waitErr
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if conn, ok := c.conns[cluster]; ok && conn.err != nil {
		return conn.err
	}
	return c.connectingLocked(cluster)
}

// connectingLocked is cluster's Connecting error.
func (c *Clusters) connectingLocked(cluster types.NamespacedName) *Error {
	server := "its API server"
	if conn, ok := c.conns[cluster]; ok && conn.server != "" {
		server = conn.server
	}
	return &Error{
		Cluster: cluster, Reason: infrav1.IdentityConnectingReason,
		Message: fmt.Sprintf("workload cluster %s (Secret %s): connecting to %s, which takes longer than %s; retried once done (within %s)",
			cluster, KubeconfigSecret(cluster).Name, server, c.opts.ConnectWait, c.opts.Timeout),
	}
}
