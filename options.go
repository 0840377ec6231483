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

package main

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/component-base/logs"
	logsv1 "k8s.io/component-base/logs/api/v1"
	"sigs.k8s.io/cluster-api/controllers/crdmigrator"
	"sigs.k8s.io/cluster-api/util/flags"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
	"github.com/metal3-io/cluster-api-provider-metal3/controllers"
)

// options is everything the manager can be told on its command line. It is a
// value, not a set of package globals, so a test can start several managers
// in one process with different settings.
type options struct {
	kubeconfig string

	healthAddr string

	leaderElect              bool
	leaderElectionID         string
	leaderElectionNamespace  string
	leaderElectLeaseDuration time.Duration
	leaderElectRenewDeadline time.Duration
	leaderElectRetryPeriod   time.Duration

	// watchNamespace limits the manager to one namespace (CAPI contract:
	// --namespace); empty means every namespace.
	watchNamespace string
	// providerNamespace is the namespace the provider runs in, where
	// Metal3ClusterIdentities' Secrets without a namespace are.
	providerNamespace string
	// watchFilterValue limits reconciles to objects labelled
	// cluster.x-k8s.io/watch-filter=<value> (CAPI contract: --watch-filter).
	watchFilterValue string

	webhookPort int
	// skipCRDMigrationPhases are phases of the CRD migrator not to run.
	skipCRDMigrationPhases []string
	webhookCertDir         string
	// webhookHost is the address the webhook server binds to; empty means all
	// interfaces. Tests bind to loopback.
	webhookHost string

	syncPeriod      time.Duration
	restConfigQPS   float32
	restConfigBurst int

	concurrency controllers.Concurrency
	// reconcileTimeout bounds one reconcile of any controller.
	reconcileTimeout time.Duration
	remote           remoteOptions
	// workloadPolicy says which API servers workload clusters' kubeconfigs
	// may send the provider to.
	workloadPolicy serverPolicyFlags
	// workloadQPS and workloadBurst limit the requests to each workload
	// cluster (upstream's --clustercache-client-qps and -burst).
	workloadQPS   float32
	workloadBurst int

	// fastTrack leaves released hosts powered on (CAPM3_FAST_TRACK).
	fastTrack bool
	// hostNameIPClaims names Metal3 IPAM claims after hosts.
	hostNameIPClaims bool

	managerOptions flags.ManagerOptions
	logOptions     *logs.Options
}

// remoteOptions tune the clients of identities with a kubeconfig.
type remoteOptions struct {
	probeInterval    time.Duration
	probeTimeout     time.Duration
	failureThreshold int
	connectTimeout   time.Duration
	maxResponseBytes int64
	maxCachedObjects int
	maxCachedBytes   int64
	qps              float32
	burst            int
	// maxRequestsInFlight bounds the requests in flight to one connection.
	maxRequestsInFlight int
	policy              serverPolicyFlags
}

// serverPolicyFlags say which API servers tenants' kubeconfigs of one kind
// (identities', workload clusters') may send the provider to
// (kubeguard.ServerPolicy); prefix names the flags, --<prefix>-allow-http...
type serverPolicyFlags struct {
	prefix                     string
	allowHTTP                  bool
	allowLoopback              bool
	allowInsecureSkipTLSVerify bool
	allowProxyURL              bool
	allowedCIDRs               []string
	allowedHostSuffixes        []string
}

// addFlags registers the policy's flags; whose names the kubeconfigs.
func (f *serverPolicyFlags) addFlags(fs *pflag.FlagSet, whose string) {
	fs.BoolVar(&f.allowHTTP, f.prefix+"-allow-http", false,
		"Let "+whose+" name plain-http API servers (development only).")
	fs.BoolVar(&f.allowLoopback, f.prefix+"-allow-loopback", false,
		"Let "+whose+" name API servers on loopback addresses (local environments only).")
	fs.BoolVar(&f.allowInsecureSkipTLSVerify, f.prefix+"-allow-insecure-skip-tls-verify", false,
		"Let "+whose+" disable certificate verification with insecure-skip-tls-verify.")
	fs.BoolVar(&f.allowProxyURL, f.prefix+"-allow-proxy-url", false,
		"Let "+whose+" name a proxy-url (the provider cannot judge what the proxy then reaches).")
	fs.StringSliceVar(&f.allowedCIDRs, f.prefix+"-allowed-cidrs", nil,
		"If set, the API servers of "+whose+" must be dialled at an address in one of these CIDRs (comma-separated).")
	fs.StringSliceVar(&f.allowedHostSuffixes, f.prefix+"-allowed-host-suffixes", nil,
		"If set, the API servers of "+whose+" must be named by a host name equal to or under one of these DNS suffixes (comma-separated).")
}

// serverPolicy converts the flags; validate has checked the CIDRs.
func (f serverPolicyFlags) serverPolicy() (kubeguard.ServerPolicy, error) {
	policy := kubeguard.ServerPolicy{
		AllowHTTP:                  f.allowHTTP,
		AllowLoopback:              f.allowLoopback,
		AllowInsecureSkipTLSVerify: f.allowInsecureSkipTLSVerify,
		AllowProxyURL:              f.allowProxyURL,
		AllowedHostSuffixes:        nonEmpty(f.allowedHostSuffixes),
		Flags:                      f.prefix,
	}
	for _, cidr := range nonEmpty(f.allowedCIDRs) {
		prefix, err := netip.ParsePrefix(cidr)
		if err != nil {
			return kubeguard.ServerPolicy{}, fmt.Errorf("--%s-allowed-cidrs: %q is not a CIDR: %w", f.prefix, cidr, err)
		}
		policy.AllowedCIDRs = append(policy.AllowedCIDRs, prefix.Masked())
	}
	return policy, nil
}

func newOptions() *options {
	o := &options{logOptions: logs.NewOptions()}
	o.remote.policy.prefix, o.workloadPolicy.prefix = "identity", "workload"
	return o
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	logsv1.AddFlags(o.logOptions, fs)

	fs.StringVar(&o.kubeconfig, "kubeconfig", "",
		"Path to a kubeconfig for the management cluster. Empty: $KUBECONFIG, then in-cluster configuration.")
	fs.StringVar(&o.healthAddr, "health-addr", ":9440",
		"The address the health (/healthz) and readiness (/readyz) probe endpoints bind to.")

	fs.BoolVar(&o.leaderElect, "leader-elect", false,
		"Enable leader election, so that only one of several replicas reconciles at a time.")
	fs.StringVar(&o.leaderElectionID, "leader-elect-id", "controller-leader-election-capm3",
		"Name of the Lease object used for leader election.")
	fs.StringVar(&o.leaderElectionNamespace, "leader-elect-namespace", "",
		"Namespace of the leader election Lease. Empty: the provider's namespace (--provider-namespace).")
	fs.DurationVar(&o.leaderElectLeaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"How long non-leader candidates wait before trying to take over an unrenewed lease.")
	fs.DurationVar(&o.leaderElectRenewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"How long the leader keeps retrying to renew its lease before giving up leadership.")
	fs.DurationVar(&o.leaderElectRetryPeriod, "leader-elect-retry-period", 2*time.Second,
		"How long leader election clients wait between attempts.")

	fs.StringVar(&o.watchNamespace, "namespace", "",
		"Namespace the controllers watch for Metal3 objects. Empty: all namespaces.")
	fs.StringVar(&o.providerNamespace, "provider-namespace", defaultProviderNamespace(),
		"Namespace the provider runs in, where a Metal3ClusterIdentity's kubeconfig Secret is when its secretRef names no namespace. Default: $POD_NAMESPACE, else "+identity.DefaultProviderNamespace+".")
	fs.StringVar(&o.watchFilterValue, "watch-filter", "",
		"Only reconcile objects whose cluster.x-k8s.io/watch-filter label has this value. Empty: no filter.")

	fs.IntVar(&o.webhookPort, "webhook-port", 9443,
		"Port the webhook server listens on. 0 disables the webhook server.")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs/",
		"Directory holding tls.crt and tls.key for the webhook server.")
	fs.StringVar(&o.webhookHost, "webhook-host", "",
		"Address the webhook server binds to. Empty: all interfaces.")

	fs.DurationVar(&o.syncPeriod, "sync-period", 10*time.Minute,
		"How often every watched object is reconciled even without changes.")
	// Cluster API's own managers (core, kubeadm bootstrap and control
	// plane) default to 100 and 200 since v1.14; upstream CAPM3 keeps
	// client-go's 20 and 30. The limits apply per kind, and at 20 a burst
	// of machines queued behind the Metal3Machine kind alone (see
	// docs/performance.md); the API server's priority and fairness protects
	// it from a busy client either way.
	fs.Float32Var(&o.restConfigQPS, "kube-api-qps", 100,
		"Maximum queries per second to the management cluster's API server, per kind.")
	fs.IntVar(&o.restConfigBurst, "kube-api-burst", 200,
		"Maximum burst of queries to the management cluster's API server, per kind.")

	// Upstream reads CAPM3_FAST_TRACK only, from the capm3fasttrack-configmap
	// its Deployment loads into the environment; so does the default here.
	envFastTrack, _ := strconv.ParseBool(os.Getenv("CAPM3_FAST_TRACK"))
	fs.BoolVar(&o.fastTrack, "fast-track", envFastTrack,
		"Leave released hosts powered on, so their next provisioning is faster (unless automated cleaning is disabled). Default: $CAPM3_FAST_TRACK, as upstream CAPM3 reads it from its capm3fasttrack-configmap.")
	fs.BoolVar(&o.hostNameIPClaims, "enable-bmh-name-based-preallocation", false,
		"Name Metal3 IPAM claims <host>-<pool> instead of <Metal3Data>-<pool>, so IPPool preAllocations can give each host its own address.")
	// Upstream CAPM3's spelling of the same switch, so existing deployments keep working.
	fs.BoolVar(&o.hostNameIPClaims, "enableBMHNameBasedPreallocation", false, "Deprecated spelling of --enable-bmh-name-based-preallocation.")
	_ = fs.MarkHidden("enableBMHNameBasedPreallocation")

	defaults := controllers.DefaultConcurrency()
	for _, c := range []struct {
		value *int
		def   int
		flag  string
		kinds string
	}{
		{&o.concurrency.Metal3Cluster, defaults.Metal3Cluster, "metal3cluster-concurrency", "Metal3Clusters"},
		{&o.concurrency.Metal3Machine, defaults.Metal3Machine, "metal3machine-concurrency", "Metal3Machines"},
		{&o.concurrency.Metal3MachineTemplate, defaults.Metal3MachineTemplate, "metal3machinetemplate-concurrency", "Metal3MachineTemplates"},
		{&o.concurrency.Metal3DataTemplate, defaults.Metal3DataTemplate, "metal3datatemplate-concurrency", "Metal3DataTemplates"},
		{&o.concurrency.Metal3Data, defaults.Metal3Data, "metal3data-concurrency", "Metal3Data"},
		{&o.concurrency.Metal3Remediation, defaults.Metal3Remediation, "metal3remediation-concurrency", "Metal3Remediations"},
	} {
		fs.IntVar(c.value, c.flag, c.def, "Number of "+c.kinds+" reconciled in parallel.")
	}

	fs.DurationVar(&o.reconcileTimeout, "reconcile-timeout", controllers.DefaultReconcileTimeout,
		"Longest one reconcile of any object may take, whatever the servers it talks to do; its status is still written after.")

	fs.DurationVar(&o.remote.probeInterval, "remote-probe-interval", 10*time.Second,
		"How often the API server of each identity with a kubeconfig is probed.")
	fs.DurationVar(&o.remote.probeTimeout, "remote-probe-timeout", 5*time.Second,
		"How long one probe of an identity's API server may take.")
	fs.IntVar(&o.remote.failureThreshold, "remote-probe-failure-threshold", 3,
		"Consecutive failed probes after which an identity is reported Unreachable and disconnected.")
	fs.DurationVar(&o.remote.connectTimeout, "remote-connect-timeout", 15*time.Second,
		"How long connecting to an identity's API server may take, and any single request to it but watches.")
	fs.IntVar(&o.remote.maxCachedObjects, "remote-max-cached-objects", hostaccess.DefaultMaxCachedObjects,
		"Most objects the provider caches for one pool's API server, per set of credentials; over it the connection is dropped (LimitExceeded) and retried after backoff.")
	fs.Int64Var(&o.remote.maxCachedBytes, "remote-max-cached-bytes", hostaccess.DefaultMaxCachedBytes,
		"Most bytes (as JSON) the provider caches for one pool's API server, per set of credentials; over it the connection is dropped (LimitExceeded) and retried after backoff.")
	fs.Int64Var(&o.remote.maxResponseBytes, "remote-max-response-bytes", hostaccess.DefaultMaxResponseBytes,
		"Largest response body read from an identity's API server (for a watch: per connection, then reopened).")
	fs.Float32Var(&o.remote.qps, "remote-client-qps", 20,
		"Maximum queries per second to a pool's API server, per set of credentials (identities holding the same ones share it).")
	fs.IntVar(&o.remote.burst, "remote-client-burst", 30,
		"Maximum burst of queries to a pool's API server, per set of credentials.")

	fs.IntVar(&o.remote.maxRequestsInFlight, "remote-max-requests-in-flight", hostaccess.DefaultMaxRequestsInFlight,
		"Most requests in flight at once to one pool's API server, per set of credentials: a slow server holds no more of the manager's workers.")

	// Tenants' kubeconfigs are untrusted: by default the provider only
	// dials https servers outside loopback, link-local and metadata ranges.
	// Identities (pools) and workload clusters have a policy each: their
	// servers usually live in different networks.
	o.remote.policy.addFlags(fs, "identities' kubeconfigs")
	o.workloadPolicy.addFlags(fs, "workload clusters' kubeconfigs (<cluster>-kubeconfig Secrets)")
	// Upstream's names: its workload clusters' clients are Cluster API's
	// cluster cache clients.
	fs.Float32Var(&o.workloadQPS, "clustercache-client-qps", 20,
		"Maximum queries per second to each workload cluster's API server.")
	fs.IntVar(&o.workloadBurst, "clustercache-client-burst", 30,
		"Maximum burst of queries to each workload cluster's API server.")

	fs.StringArrayVar(&o.skipCRDMigrationPhases, "skip-crd-migration-phases", nil,
		"Phases of the CRD migrator to skip (StorageVersionMigration, CleanupManagedFields): by default the manager "+
			"rewrites objects stored in an older version into v1beta2 and drops managedFields of versions no longer served.")

	// Flags of upstream CAPM3 with nothing to set here, accepted so that an
	// upstream Deployment runs with this image unchanged; using one logs
	// why it has no effect.
	fs.Int("metal3labelsync-concurrency", 10, "")
	_ = fs.MarkDeprecated("metal3labelsync-concurrency",
		"label sync runs within the Metal3Machine controller here: --metal3machine-concurrency sets both")

	// --diagnostics-address (metrics, served over authenticated HTTPS unless
	// --insecure-diagnostics), --tls-min-version, --tls-cipher-suites and
	// --tls-curve-preferences: the same flags and semantics as every CAPI provider.
	flags.AddManagerOptions(fs, &o.managerOptions)
}

// validate rejects combinations the manager cannot run with, before anything starts.
func (o *options) validate() error {
	if o.leaderElect && o.leaderElectRenewDeadline >= o.leaderElectLeaseDuration {
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be shorter than --leader-elect-lease-duration (%s)",
			o.leaderElectRenewDeadline, o.leaderElectLeaseDuration)
	}
	if _, _, err := flags.GetManagerOptions(o.managerOptions); err != nil {
		return fmt.Errorf("TLS or diagnostics flags: %w", err)
	}
	for _, phase := range o.skipCRDMigrationPhases {
		if phase != string(crdmigrator.StorageVersionMigrationPhase) && phase != string(crdmigrator.CleanupManagedFieldsPhase) {
			return fmt.Errorf("--skip-crd-migration-phases: unknown phase %q (StorageVersionMigration or CleanupManagedFields)", phase)
		}
	}
	if o.webhookPort < 0 || o.webhookPort > 65535 {
		return fmt.Errorf("--webhook-port %d is not a port", o.webhookPort)
	}
	if o.restConfigQPS <= 0 || o.restConfigBurst <= 0 {
		return fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive")
	}
	if o.remote.probeInterval <= 0 || o.remote.probeTimeout <= 0 || o.remote.failureThreshold < 1 {
		return fmt.Errorf("--remote-probe-interval, --remote-probe-timeout and --remote-probe-failure-threshold must be positive")
	}
	if o.remote.connectTimeout <= 0 || o.remote.maxResponseBytes <= 0 {
		return fmt.Errorf("--remote-connect-timeout and --remote-max-response-bytes must be positive")
	}
	if o.remote.maxCachedObjects <= 0 || o.remote.maxCachedBytes <= 0 {
		return fmt.Errorf("--remote-max-cached-objects and --remote-max-cached-bytes must be positive")
	}
	if o.reconcileTimeout <= 0 {
		return fmt.Errorf("--reconcile-timeout must be positive")
	}
	if _, err := o.remote.policy.serverPolicy(); err != nil {
		return err
	}
	if _, err := o.workloadPolicy.serverPolicy(); err != nil {
		return err
	}
	if o.remote.maxRequestsInFlight < 1 {
		return fmt.Errorf("--remote-max-requests-in-flight must be at least 1")
	}
	if o.workloadQPS <= 0 || o.workloadBurst <= 0 {
		return fmt.Errorf("--clustercache-client-qps and --clustercache-client-burst must be positive")
	}
	if o.remote.qps <= 0 || o.remote.burst <= 0 {
		return fmt.Errorf("--remote-client-qps and --remote-client-burst must be positive")
	}
	if o.providerNamespace == "" {
		return fmt.Errorf("--provider-namespace must not be empty")
	}
	if o.syncPeriod <= 0 {
		return fmt.Errorf("--sync-period must be positive")
	}
	for name, n := range map[string]int{
		"metal3cluster": o.concurrency.Metal3Cluster, "metal3machine": o.concurrency.Metal3Machine,
		"metal3machinetemplate": o.concurrency.Metal3MachineTemplate, "metal3datatemplate": o.concurrency.Metal3DataTemplate,
		"metal3data": o.concurrency.Metal3Data, "metal3remediation": o.concurrency.Metal3Remediation,
	} {
		if n < 1 {
			return fmt.Errorf("--%s-concurrency must be at least 1, got %d", name, n)
		}
	}
	return nil
}

// defaultProviderNamespace is the pod's namespace, which the deployment
// passes as POD_NAMESPACE, else clusterctl's default one.
func defaultProviderNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return identity.DefaultProviderNamespace
}

// nonEmpty drops blank entries of a list flag: an unset clusterctl variable
// renders as --flag="" (clusterctl needs a non-empty default), which must
// mean no list rather than a list of one empty entry.
func nonEmpty(values []string) []string {
	var out []string
	for _, v := range values {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
