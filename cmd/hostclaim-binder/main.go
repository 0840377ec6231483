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

// Command hostclaim-binder is the pool side of HostClaim mode: run by the
// pool admin in the pool cluster, it binds HostClaims to BareMetalHosts of
// the namespaces HostDeployPolicies open to them (docs/hostclaim-binder.md).
package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/component-base/logs"
	logsv1 "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/metal3-io/cluster-api-provider-metal3/internal/hostclaimbinder"
)

const (
	// binderName identifies the binder to API servers (user agent).
	binderName = "hostclaim-binder"
	// gracefulShutdownTimeout bounds how long in-flight reconciles may
	// take to finish once the binder is told to stop.
	gracefulShutdownTimeout = 30 * time.Second
)

// options is the binder's command line.
type options struct {
	metricsAddr             string
	healthAddr              string
	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string
	nodeReuseGrace          time.Duration
	concurrency             int
	deploy                  hostclaimbinder.DeployPolicy
	maxUnhealthy            int
	logOptions              *logs.Options
}

func parseOptions(args []string) (*options, error) {
	opts := &options{logOptions: logs.NewOptions()}
	fs := pflag.NewFlagSet(binderName, pflag.ContinueOnError)
	fs.StringVar(&opts.metricsAddr, "metrics-bind-address", ":8080",
		"Address the metrics endpoint binds to (plain HTTP); 0 disables it.")
	fs.StringVar(&opts.healthAddr, "health-probe-bind-address", ":8081",
		"Address the /healthz and /readyz endpoints bind to.")
	fs.BoolVar(&opts.leaderElect, "leader-elect", false,
		"Elect a leader among replicas, so that one binds at a time.")
	fs.StringVar(&opts.leaderElectionID, "leader-election-id", "hostclaim-binder.metal3.io",
		"Name of the Lease of the leader election.")
	fs.StringVar(&opts.leaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the Lease; empty: $POD_NAMESPACE, else the binder's own namespace when run in a Pod.")
	fs.DurationVar(&opts.nodeReuseGrace, "node-reuse-grace", hostclaimbinder.DefaultNodeReuseGrace,
		"How long a host stays kept for a node reuse key that no claim of its namespace carries any more.")
	fs.IntVar(&opts.concurrency, "concurrency", 4, "How many HostClaims are reconciled at once.")
	// Claims are tenant input passed to hosts the tenants never see: what
	// they may ask hosts to deploy is the pool admin's to decide.
	fs.StringSliceVar(&opts.deploy.ImageSchemes, "allowed-image-schemes", hostclaimbinder.DefaultImageSchemes,
		"URL schemes a claim's image and checksum may use (file is refused unless listed).")
	fs.StringSliceVar(&opts.deploy.ImageHosts, "allowed-image-hosts", nil,
		"If set, host names (or DNS suffixes) a claim's image and checksum must be served from.")
	fs.StringSliceVar(&opts.deploy.CustomDeployMethods, "allowed-custom-deploy-methods", nil,
		"If set, the only custom deploy methods a claim may ask for.")
	fs.IntVar(&opts.maxUnhealthy, "max-unhealthy-hosts-per-namespace", hostclaimbinder.DefaultMaxUnhealthyHostsPerNamespace,
		"How many hosts the claims of one namespace may have marked unhealthy at a time; 0: claims never mark hosts.")
	logsv1.AddFlags(opts.logOptions, fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if opts.nodeReuseGrace <= 0 {
		return nil, fmt.Errorf("--node-reuse-grace must be positive, not %s", opts.nodeReuseGrace)
	}
	if opts.concurrency < 1 {
		return nil, fmt.Errorf("--concurrency must be at least 1, not %d", opts.concurrency)
	}
	if opts.maxUnhealthy < 0 {
		return nil, fmt.Errorf("--max-unhealthy-hosts-per-namespace must not be negative, not %d", opts.maxUnhealthy)
	}
	opts.deploy.ImageSchemes = nonEmpty(opts.deploy.ImageSchemes)
	opts.deploy.ImageHosts = nonEmpty(opts.deploy.ImageHosts)
	opts.deploy.CustomDeployMethods = nonEmpty(opts.deploy.CustomDeployMethods)
	return opts, nil
}

func main() {
	opts, err := parseOptions(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := logsv1.ValidateAndApply(opts.logOptions, nil); err != nil {
		fmt.Fprintf(os.Stderr, "apply logging options: %v\n", err)
		os.Exit(2)
	}
	ctrl.SetLogger(klog.Background())
	if err := run(ctrl.SetupSignalHandler(), opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// nonEmpty drops blank entries of a list flag (an unset variable renders
// as --flag="").
func nonEmpty(values []string) []string {
	var out []string
	for _, v := range values {
		if v = strings.TrimSpace(strings.Trim(v, `"`)); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("add Kubernetes types to the scheme: %w", err)
	}
	if err := bmov1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("add metal3.io types to the scheme: %w", err)
	}
	return scheme, nil
}

// run builds the manager and blocks until ctx is cancelled or it fails.
func run(ctx context.Context, opts *options) error {
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("load the pool cluster's configuration: %w", err)
	}
	restConfig.UserAgent = rest.DefaultKubernetesUserAgent() + "/" + binderName
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: opts.metricsAddr},
		HealthProbeBindAddress:        opts.healthAddr,
		LeaderElection:                opts.leaderElect,
		LeaderElectionID:              opts.leaderElectionID,
		LeaderElectionNamespace:       cmp.Or(opts.leaderElectionNamespace, os.Getenv("POD_NAMESPACE")),
		LeaderElectionResourceLock:    resourcelock.LeasesResourceLock,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr.To(gracefulShutdownTimeout),
		Cache:                         hostclaimbinder.CacheOptions(),
		Client: client.Options{
			Cache: &client.CacheOptions{
				// Secrets are many (BMC credentials among them) and the
				// binder reads few: never cached (the binder watches
				// their metadata only).
				DisableFor: []client.Object{&corev1.Secret{}},
			},
		},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	binder := hostclaimbinder.NewReconciler(mgr, hostclaimbinder.Options{
		NodeReuseGrace: opts.nodeReuseGrace, Concurrency: opts.concurrency,
		Deploy: opts.deploy, MaxUnhealthyHostsPerNamespace: ptr.To(opts.maxUnhealthy),
	})
	if err := binder.SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add readyz check: %w", err)
	}
	ctrl.Log.WithName("setup").Info("starting the HostClaim binder",
		"nodeReuseGrace", opts.nodeReuseGrace.String(), "concurrency", opts.concurrency,
		"allowedImageSchemes", opts.deploy.ImageSchemes, "allowedImageHosts", opts.deploy.ImageHosts,
		"allowedCustomDeployMethods", opts.deploy.CustomDeployMethods, "maxUnhealthyHostsPerNamespace", opts.maxUnhealthy)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}
