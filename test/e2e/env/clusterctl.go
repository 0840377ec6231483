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

package env

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

	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// ClusterctlManagement is a management cluster as users build one:
// `clusterctl init` installed Cluster API (core and kubeadm) and an
// infrastructure provider from a local repository, their CRDs, webhook
// configurations and RBAC from the components of the release, not from
// envtest. Cluster API's core reconcilers run in-process as in the rest of
// the environment, its webhooks and conversions served in-process at the
// address the installed configurations are routed to; the Bare Metal
// Operator in test mode holds the hosts of the clusters (no identityRef:
// hosts in the cluster's namespace); Metal3's IP address manager serves
// IPPools; and a kubelet stand-in registers the provisioned hosts as Nodes
// of a workload API server of its own. The infrastructure provider's
// manager is the test's to start: upstream's (StartUpstreamCAPM3) or ours
// (StartProvider), each run as its release ships it.
type ClusterctlManagement struct {
	*Management
	// Workload is the API server every cluster's nodes register with.
	Workload *testenv.Env
	// Repository is where clusterctl installs and upgrades from.
	Repository *testenv.ClusterctlRepository
}

// StartClusterctlManagement starts a management cluster on which
// `clusterctl init` installs Cluster API and infrastructure
// ("metal3:<version>") from repo, until t ends. The API server writes an
// audit log (Management.AuditLogPath).
func StartClusterctlManagement(t testenv.T, name string, repo *testenv.ClusterctlRepository, infrastructure string) *ClusterctlManagement {
	t.Helper()
	mgmt := testenv.Start(t, testenv.Options{
		Scheme: Scheme(),
		// cert-manager's API, so that clusterctl installs none of it; the
		// Bare Metal Operator's and the IP address manager's, which users
		// install with those components.
		CRDDirectoryPaths: []string{testenv.CertManagerCRDPath(t), testenv.BMOCRDPath(t), testenv.IPAMCRDPath(t)},
		AuditLogPath:      filepath.Join(t.TempDir(), name+"-audit.log"),
	})
	mgmt.ClusterctlInit(t, repo, infrastructure)
	serveShippedCAPIWebhooks(t, mgmt, repo.CoreShipped(t))
	// The IP address manager needs Cluster API's IPAM CRDs, from init.
	mgmt.StartIPAM(t)
	mgmt.StartBMO(t, "baremetal-operator-system")
	startPacer(t, mgmt)
	startCAPI(t, mgmt.Config)
	workload := testenv.Start(t, testenv.Options{Scheme: Scheme()})
	startKubelet(t, workload, mgmt)
	return &ClusterctlManagement{
		Management: &Management{Env: mgmt, Name: name},
		Workload:   workload,
		Repository: repo,
	}
}

// serveShippedCAPIWebhooks serves Cluster API's admission webhooks and
// conversions in-process where the configurations and CRDs that `clusterctl
// init` installed from core (Cluster API's core components) call them,
// once routed as cert-manager, its CA injector and the Service would.
func serveShippedCAPIWebhooks(t testenv.T, mgmt *testenv.Env, core *testenv.Shipped) {
	t.Helper()
	routed := mgmt.RouteShippedWebhooks(t, core)
	mgr, err := ctrl.NewManager(mgmt.Config, ctrl.Options{
		Scheme:                 Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: "127.0.0.1", Port: routed.Port, CertDir: routed.CertDir,
		}),
	})
	if err != nil {
		t.Fatalf("Cluster API webhook manager: %v", err)
	}
	if err := setupCAPIWebhooks(mgr); err != nil {
		t.Fatalf("Cluster API webhooks: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Cluster API webhook manager: %v", err)
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(routed.Port))
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
			t.Fatalf("Cluster API's webhook server did not start serving on %s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ShippedManager is an infrastructure provider's manager run as its
// release ships it.
type ShippedManager struct {
	*testenv.UpstreamManager
}

// StartProvider runs the manager built from this tree as the Deployment
// `clusterctl init` or `clusterctl upgrade` installed from this tree's
// release runs it (testenv.RunShipped: its ServiceAccount, ClusterRoles,
// Roles and arguments), its webhooks and /convert served for real: the
// release's Certificate issued and the installed configurations and CRDs
// routed to the manager (testenv.RouteShippedWebhooks). Only what cannot
// be the same here differs: the webhook port and certificate directory,
// probes and metrics on free loopback ports, and loopback allowed for
// identities and workload clusters (every test server is on loopback).
// extraArgs (--name=value) replace the Deployment's flags of the same
// names. It returns once the manager is ready (its webhook server serves);
// the process is also Management.Provider.
func (m *ClusterctlManagement) StartProvider(t testenv.T, extraArgs ...string) *ShippedManager {
	t.Helper()
	path, err := testenv.Manager.Path()
	if err != nil {
		t.Fatalf("%v", err)
	}
	shipped := testenv.ShippedProvider(t, nil)
	routed := m.RouteShippedWebhooks(t, shipped)
	flags := map[string]string{
		"webhook-port":            strconv.Itoa(routed.Port),
		"webhook-cert-dir":        routed.CertDir,
		"health-addr":             testenv.FreeLoopbackAddr(t),
		"diagnostics-address":     testenv.FreeLoopbackAddr(t),
		"identity-allow-loopback": "true",
		"workload-allow-loopback": "true",
	}
	testenv.AddFlags(flags, extraArgs)
	manager := &ShippedManager{UpstreamManager: &testenv.UpstreamManager{
		Process:         m.RunShipped(t, shipped, path, flags),
		HealthAddr:      flags["health-addr"],
		DiagnosticsAddr: flags["diagnostics-address"],
	}}
	m.Provider = manager.Process
	if err := manager.WaitReady(2 * time.Minute); err != nil {
		t.Fatalf("the provider: %v", err)
	}
	return manager
}

// UpgradeInfrastructure runs `clusterctl upgrade apply --infrastructure
// <infrastructure>` ("metal3:<version>") from the repository. installed
// is the infrastructure provider as `clusterctl init` (or the last
// upgrade) installed it and the test routed its webhooks: they are given
// back their Service first, as a cluster has them, for clusterctl patches
// the CRDs from the new release.
func (m *ClusterctlManagement) UpgradeInfrastructure(t testenv.T, installed *testenv.Shipped, infrastructure string) {
	t.Helper()
	m.UnrouteShippedWebhooks(t, installed)
	m.ClusterctlUpgrade(t, m.Repository, infrastructure)
}
