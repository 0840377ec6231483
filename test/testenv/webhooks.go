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

package testenv

import (
	"context"
	"crypto/tls"
	"net"
	"path/filepath"
	"strconv"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/metal3-io/cluster-api-provider-metal3/internal/webhooks"
)

// ProviderWebhookPaths is the provider's generated webhook configuration,
// for Options.WebhookPaths: envtest installs it pointing at its local
// serving address, which ServeProviderWebhooks then serves.
func ProviderWebhookPaths(t T) []string {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return []string{filepath.Join(root, "config", "webhook", "manifests.yaml")}
}

// ServeProviderWebhooks runs the provider's defaulting and validating
// webhooks for the environment (started with ProviderWebhookPaths) until the
// test ends, and returns once they answer. others register more webhooks
// (or conversions) on the same server.
func (e *Env) ServeProviderWebhooks(t T, others ...func(ctrl.Manager) error) {
	t.Helper()
	wio := e.WebhookInstallOptions
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir,
		}),
	})
	if err != nil {
		t.Fatalf("create webhook manager: %v", err)
	}
	for _, setup := range append([]func(ctrl.Manager) error{webhooks.SetupWithManager}, others...) {
		if err := setup(mgr); err != nil {
			t.Fatalf("set up webhooks: %v", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("webhook manager: %v", err)
		}
	})

	addr := net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort))
	deadline := time.Now().Add(30 * time.Second)
	for {
		dialer := &tls.Dialer{
			NetDialer: &net.Dialer{Timeout: time.Second},
			// A local test server with a throw-away certificate.
			Config: &tls.Config{InsecureSkipVerify: true},
		}
		conn, err := dialer.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = conn.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook server did not start serving on %s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
