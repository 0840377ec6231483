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

package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/workload"
)

// Concurrency is the number of workers of each controller. Bare metal
// provisioning is slow and mostly waits on hosts, so the defaults stay
// small; zero fields take DefaultConcurrency's.
type Concurrency struct {
	Metal3Cluster         int
	Metal3Machine         int
	Metal3MachineTemplate int
	Metal3DataTemplate    int
	Metal3Data            int
	Metal3Remediation     int
}

// DefaultReconcileTimeout bounds one reconcile: every request to a tenant's
// server ends within the connect timeout (15 s), so this leaves room for a
// reconcile's few requests to a slow server, and no more.
const DefaultReconcileTimeout = 2 * time.Minute

// patchTimeout bounds the status patch that ends a reconcile. It runs on a
// context of its own (patchContext): a reconcile cut short by its timeout
// still records what it did.
const patchTimeout = 30 * time.Second

// patchContext is the context of the status patch deferred by a reconcile
// whose context is ctx: ctx's values, not its deadline or cancellation.
func patchContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), patchTimeout)
}

// DefaultConcurrency is the manager's default, shared by its flags.
func DefaultConcurrency() Concurrency {
	return Concurrency{
		Metal3Cluster: 10, Metal3Machine: 10, Metal3MachineTemplate: 10,
		Metal3DataTemplate: 10, Metal3Data: 10, Metal3Remediation: 10,
	}
}

// withDefaults fills zero fields from DefaultConcurrency.
func (c Concurrency) withDefaults() Concurrency {
	d := DefaultConcurrency()
	for _, f := range []struct{ value, def *int }{
		{&c.Metal3Cluster, &d.Metal3Cluster}, {&c.Metal3Machine, &d.Metal3Machine},
		{&c.Metal3MachineTemplate, &d.Metal3MachineTemplate}, {&c.Metal3DataTemplate, &d.Metal3DataTemplate},
		{&c.Metal3Data, &d.Metal3Data}, {&c.Metal3Remediation, &d.Metal3Remediation},
	} {
		if *f.value <= 0 {
			*f.value = *f.def
		}
	}
	return c
}

// SetupOptions configure the provider's controllers as a whole.
type SetupOptions struct {
	// Remote configures the identity cache; its clients, readers, users and
	// recorder are filled in from the manager.
	Remote           hostaccess.Options
	WatchFilterValue string
	Concurrency      Concurrency
	// FastTrack leaves released hosts powered on for a faster next
	// provisioning (upstream CAPM3's CAPM3_FAST_TRACK).
	FastTrack bool
	// HostNameIPClaims names Metal3 IPAM claims "<host>-<pool>" instead of
	// "<Metal3Data>-<pool>" (upstream CAPM3's
	// --enableBMHNameBasedPreallocation), so an IPPool's preAllocations can
	// give each host its own address.
	HostNameIPClaims bool
	// Controller holds options applied to every controller (e.g.
	// SkipNameValidation when several managers share a process in tests).
	Controller controller.Options
	// ProviderNamespace is the namespace the provider runs in, where a
	// Metal3ClusterIdentity's secretRef without a namespace points;
	// identity.DefaultProviderNamespace when empty.
	ProviderNamespace string
	// ReconcileTimeout bounds one reconcile of any controller;
	// DefaultReconcileTimeout when zero.
	ReconcileTimeout time.Duration
	// Workload configures the connections to workload clusters (their
	// Nodes); its readers, scheme and client limits are filled in from the
	// manager and Remote.
	Workload workload.ClustersOptions
}

// Controllers are what Setup started, for callers that need them.
type Controllers struct {
	Identities       *hostaccess.IdentityCache
	WorkloadClusters *workload.Clusters
}

// Setup registers every controller of the provider, the identity cache
// they share, the field indexes they read through, and the connections to
// workload clusters with mgr. main and the tests use the same wiring.
func Setup(ctx context.Context, mgr ctrl.Manager, opts SetupOptions) (*Controllers, error) {
	providerNamespace := opts.ProviderNamespace
	if providerNamespace == "" {
		providerNamespace = identity.DefaultProviderNamespace
	}
	if err := identity.Indexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	if err := indexes(ctx, mgr.GetFieldIndexer(), providerNamespace); err != nil {
		return nil, err
	}
	remoteOpts := opts.Remote
	remoteOpts.ProviderNamespace = providerNamespace
	if remoteOpts.UserAgent == "" {
		remoteOpts.UserAgent = "cluster-api-provider-metal3"
	}
	if remoteOpts.QPS == 0 || remoteOpts.Burst == 0 {
		remoteOpts.QPS, remoteOpts.Burst = 20, 30
	}
	remoteOpts.SecretReader = mgr.GetAPIReader()
	remoteOpts.InClusterReader = mgr.GetAPIReader()
	remoteOpts.ManagementCache = mgr.GetCache()
	// Metal3ClusterIdentities and Namespaces are cluster-scoped: the
	// manager's cache holds them whatever namespaces it is limited to.
	remoteOpts.ClusterIdentityReader = mgr.GetCache()
	remoteOpts.InClusterClient = mgr.GetClient()
	remoteOpts.Scheme = mgr.GetScheme()
	remoteOpts.Recorder = mgr.GetEventRecorder("identity-cache")
	remoteOpts.Users = []func() client.ObjectList{
		func() client.ObjectList { return &infrav1.Metal3ClusterList{} },
		func() client.ObjectList { return &infrav1.Metal3MachineList{} },
		func() client.ObjectList { return &infrav1.Metal3DataList{} },
	}
	identities, err := hostaccess.NewIdentityCache(remoteOpts)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(identities); err != nil {
		return nil, fmt.Errorf("add identity cache: %w", err)
	}
	if err := identities.ListInClusterHostsWithTheManager(ctx); err != nil {
		return nil, err
	}
	concurrency := opts.Concurrency.withDefaults()
	reconcileTimeout := opts.ReconcileTimeout
	if reconcileTimeout <= 0 {
		reconcileTimeout = DefaultReconcileTimeout
	}
	options := func(workers int) controller.Options {
		o := opts.Controller
		o.MaxConcurrentReconciles = workers
		// A slow tenant server cannot hold a worker for longer than this,
		// however many requests one reconcile makes to it.
		o.ReconciliationTimeout = reconcileTimeout
		if o.UsePriorityQueue == nil {
			// controller-runtime v0.24.1's priority queue can deadlock at
			// shutdown: it blocks handing an item to a worker that already
			// exited while holding the lock the last worker's Done needs, so
			// the manager overruns its grace period (seen in our envtests).
			// The classic rate-limited workqueue has no such window.
			o.UsePriorityQueue = ptr.To(false)
		}
		return o
	}

	// Workload cluster clients, for Nodes' providerID when no cloud provider
	// sets it, label sync and the Nodes of remediated machines. Their
	// kubeconfigs are in tenants' namespaces: untrusted, like identities'.
	workloadOpts := opts.Workload
	workloadOpts.SecretMetadata, workloadOpts.SecretReader, workloadOpts.Scheme = mgr.GetCache(), mgr.GetAPIReader(), mgr.GetScheme()
	if workloadOpts.UserAgent == "" {
		workloadOpts.UserAgent = remoteOpts.UserAgent
	}
	if workloadOpts.QPS == 0 || workloadOpts.Burst == 0 {
		workloadOpts.QPS, workloadOpts.Burst = remoteOpts.QPS, remoteOpts.Burst
	}
	workloadClusters, err := workload.NewClusters(workloadOpts)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(workloadClusters); err != nil {
		return nil, fmt.Errorf("add workload clusters: %w", err)
	}

	if err := (&Metal3ClusterReconciler{
		Client: mgr.GetClient(), Identities: identities, WorkloadClusters: workloadClusters, WatchFilterValue: opts.WatchFilterValue,
		Recorder: mgr.GetEventRecorder("metal3cluster-controller"),
	}).SetupWithManager(ctx, mgr, options(concurrency.Metal3Cluster)); err != nil {
		return nil, fmt.Errorf("set up Metal3Cluster controller: %w", err)
	}
	if err := (&Metal3ClusterIdentityReconciler{
		Client: mgr.GetClient(), Identities: identities, ProviderNamespace: providerNamespace,
	}).SetupWithManager(ctx, mgr, options(1)); err != nil {
		return nil, fmt.Errorf("set up Metal3ClusterIdentity controller: %w", err)
	}
	if err := (&Metal3MachineReconciler{
		Client: mgr.GetClient(), Identities: identities, WorkloadClusters: workloadClusters, WatchFilterValue: opts.WatchFilterValue,
		Recorder: mgr.GetEventRecorder("metal3machine-controller"), FastTrack: opts.FastTrack,
	}).SetupWithManager(ctx, mgr, options(concurrency.Metal3Machine)); err != nil {
		return nil, fmt.Errorf("set up Metal3Machine controller: %w", err)
	}
	if err := (&Metal3MachineTemplateReconciler{
		Client: mgr.GetClient(), WatchFilterValue: opts.WatchFilterValue,
	}).SetupWithManager(ctx, mgr, options(concurrency.Metal3MachineTemplate)); err != nil {
		return nil, fmt.Errorf("set up Metal3MachineTemplate controller: %w", err)
	}
	if err := (&Metal3DataTemplateReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), WatchFilterValue: opts.WatchFilterValue,
	}).SetupWithManager(ctx, mgr, options(concurrency.Metal3DataTemplate)); err != nil {
		return nil, fmt.Errorf("set up Metal3DataTemplate controller: %w", err)
	}
	if err := (&Metal3DataReconciler{
		Client: mgr.GetClient(), Identities: identities, WatchFilterValue: opts.WatchFilterValue,
		HostNameIPClaims: opts.HostNameIPClaims,
	}).SetupWithManager(ctx, mgr, options(concurrency.Metal3Data)); err != nil {
		return nil, fmt.Errorf("set up Metal3Data controller: %w", err)
	}
	if err := (&Metal3RemediationReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Identities: identities, WorkloadClusters: workloadClusters, WatchFilterValue: opts.WatchFilterValue,
		Recorder: mgr.GetEventRecorder("metal3remediation-controller"),
	}).SetupWithManager(ctx, mgr, options(concurrency.Metal3Remediation)); err != nil {
		return nil, fmt.Errorf("set up Metal3Remediation controller: %w", err)
	}
	return &Controllers{Identities: identities, WorkloadClusters: workloadClusters}, nil
}
