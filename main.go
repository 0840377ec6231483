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

// Command manager runs the Cluster API infrastructure provider for Metal3: the
// controllers and webhooks for Metal3Cluster, Metal3Machine, the data
// templates and remediation.
package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	logsv1 "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/flags"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
)

const (
	// controllerName identifies this manager to API servers (user agent, field manager).
	controllerName = "cluster-api-provider-metal3-manager"

	// gracefulShutdownTimeout bounds how long in-flight reconciles may take to
	// finish after the manager is told to stop.
	gracefulShutdownTimeout = 30 * time.Second
)

func main() {
	opts, err := parseOptions(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// Logging is process-wide and can be configured once, so it is set up
	// here rather than in run, which tests call repeatedly.
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

// parseOptions reads and checks the command line.
func parseOptions(args []string) (*options, error) {
	opts := newOptions()
	fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
	opts.addFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return opts, nil
}

// run builds the manager and blocks until ctx is cancelled or the manager
// fails. It is main without the process: tests call it directly.
func run(ctx context.Context, opts *options) error {
	log := ctrl.Log.WithName("setup")

	restConfig, err := loadRestConfig(opts.kubeconfig)
	if err != nil {
		return err
	}
	restConfig.QPS = opts.restConfigQPS
	restConfig.Burst = opts.restConfigBurst
	restConfig.UserAgent = rest.DefaultKubernetesUserAgent() + "/" + controllerName

	scheme, err := newScheme()
	if err != nil {
		return err
	}

	mgr, err := newManager(restConfig, scheme, opts)
	if err != nil {
		return err
	}
	if err := setupReconcilers(ctx, mgr, opts); err != nil {
		return err
	}
	if err := setupWebhooks(mgr, opts); err != nil {
		return err
	}
	if err := setupChecks(mgr, opts); err != nil {
		return err
	}

	log.Info("starting manager", "namespace", opts.watchNamespace, "providerNamespace", opts.providerNamespace,
		"watchFilter", opts.watchFilterValue)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}

// loadRestConfig reads the management cluster's configuration from an
// explicit kubeconfig path, else from controller-runtime's usual sources
// ($KUBECONFIG, in-cluster service account, ~/.kube/config).
func loadRestConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("load management cluster configuration: %w", err)
	}
	return cfg, nil
}

func newManager(restConfig *rest.Config, scheme *runtime.Scheme, opts *options) (ctrl.Manager, error) {
	tlsOptions, metricsOptions, err := flags.GetManagerOptions(opts.managerOptions)
	if err != nil {
		return nil, fmt.Errorf("TLS or diagnostics options: %w", err)
	}

	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                *metricsOptions,
		HealthProbeBindAddress: opts.healthAddr,
		LeaderElection:         opts.leaderElect,
		LeaderElectionID:       opts.leaderElectionID,
		// The Lease is in the provider's namespace unless told otherwise:
		// its Role allows leases there, and outside a Pod (where
		// controller-runtime finds no namespace of its own) too.
		LeaderElectionNamespace:       cmp.Or(opts.leaderElectionNamespace, opts.providerNamespace),
		LeaderElectionResourceLock:    resourcelock.LeasesResourceLock,
		LeaseDuration:                 &opts.leaderElectLeaseDuration,
		RenewDeadline:                 &opts.leaderElectRenewDeadline,
		RetryPeriod:                   &opts.leaderElectRetryPeriod,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr.To(gracefulShutdownTimeout),
		Cache:                         cacheOptions(opts),
		Client: client.Options{
			Cache: &client.CacheOptions{
				// Bootstrap data and identity Secrets are read rarely and
				// cluster-wide caching of every Secret would cost memory for
				// nothing; read them from the API server.
				DisableFor: uncachedObjects(),
			},
		},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    opts.webhookHost,
			Port:    opts.webhookPort,
			CertDir: opts.webhookCertDir,
			TLSOpts: tlsOptions,
		}),
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	return mgr, nil
}

// cacheOptions configure the manager's cache: limited to --namespace when
// set, except for the metadata of Secrets, which also includes the
// provider's namespace, where Metal3ClusterIdentities' Secrets are.
// Cluster-scoped kinds (Metal3ClusterIdentities, Namespaces) are cached
// cluster-wide in any case.
func cacheOptions(opts *options) cache.Options {
	options := cache.Options{
		SyncPeriod: &opts.syncPeriod,
		// In-cluster hosts are cached as the remote identities' are: only
		// what the provider reads. A default transform and not a ByObject
		// entry, which has the manager look the kind up at start: the
		// management cluster may serve no BareMetalHost API at all.
		DefaultTransform: transformHosts(),
		ByObject:         map[client.Object]cache.ByObject{},
	}
	if opts.watchNamespace != "" {
		options.DefaultNamespaces = map[string]cache.Config{opts.watchNamespace: {}}
		if opts.providerNamespace != opts.watchNamespace {
			options.ByObject[&corev1.Secret{}] = cache.ByObject{Namespaces: map[string]cache.Config{
				opts.watchNamespace: {}, opts.providerNamespace: {},
			}}
		}
	}
	return options
}

// transformHosts is hostaccess.TransformHost for BareMetalHosts, and leaves
// every other kind alone.
func transformHosts() toolscache.TransformFunc {
	transformHost := hostaccess.TransformHost()
	return func(in any) (any, error) {
		if _, ok := in.(*bmov1alpha1.BareMetalHost); ok {
			return transformHost(in)
		}
		return in, nil
	}
}

// setupChecks registers the probe endpoints. Readiness includes the webhook
// server when it runs, so a pod is not put behind the webhook Service before
// it can answer.
func setupChecks(mgr ctrl.Manager, opts *options) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add readyz check: %w", err)
	}
	if webhooksEnabled(opts) {
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return fmt.Errorf("add webhook readyz check: %w", err)
		}
	}
	return nil
}

func webhooksEnabled(opts *options) bool { return opts.webhookPort != 0 }
