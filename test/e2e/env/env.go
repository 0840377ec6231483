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

// Package env is the end-to-end environment of the provider, with no
// container and no kind: real API servers (envtest's kube-apiserver and
// etcd) for the management clusters, the BareMetalHost pool and the
// workload cluster; Cluster API's core controllers and webhooks in-process;
// the provider's manager as a process built from this tree; the real Bare
// Metal Operator in test mode on the pool, paced as Ironic would pace it
// (powerPacer); and a stand-in for kubelet that
// registers a Node for every provisioned, powered-on host, and whose
// kubelets a test can wedge or break. The e2e suite (test/e2e), the
// remediation tests (test/remediation) and `make demo` (test/e2e/demo) run
// on it.
package env

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	addonsv1beta1 "sigs.k8s.io/cluster-api/api/addons/v1beta1"
	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ipamv1alpha1 "sigs.k8s.io/cluster-api/api/ipam/v1alpha1"
	ipamv1beta1 "sigs.k8s.io/cluster-api/api/ipam/v1beta1"
	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	runtimev1alpha1 "sigs.k8s.io/cluster-api/api/runtime/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1beta1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// Scheme holds every kind the environment's clients read and write: both
// versions of Cluster API's kinds and of ours (the environment's /convert
// serves both from this scheme), the hosts'.
func Scheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		clusterv1beta1.AddToScheme, clusterv1.AddToScheme, addonsv1beta1.AddToScheme, addonsv1.AddToScheme,
		ipamv1alpha1.AddToScheme, ipamv1beta1.AddToScheme, ipamv1.AddToScheme,
		runtimev1alpha1.AddToScheme, runtimev1.AddToScheme,
		bootstrapv1.AddToScheme, controlplanev1.AddToScheme, clusterctlv1.AddToScheme,
		infrav1beta1.AddToScheme, infrav1.AddToScheme, bmov1alpha1.AddToScheme,
	} {
		utilruntime.Must(add(scheme))
	}
	return scheme
}

// Environment is a running pool, a workload cluster and one management
// cluster; more management clusters can be added (for move, and for two
// management clusters sharing a pool).
type Environment struct {
	// Management is the first management cluster.
	Management *Management
	// Pool is the API server where the BareMetalHosts live, with the Bare
	// Metal Operator.
	Pool *testenv.Env
	// Workload is the API server every cluster's nodes register with.
	Workload *testenv.Env

	t testenv.T
	// poolBMO is the Bare Metal Operator of the pool.
	poolBMO *testenv.Process
	kubelet *kubelet
	mu      sync.Mutex
	// binders are the clusters running a HostClaim binder, started with
	// their first claim pool.
	binders map[*testenv.Env]bool
	// audited are the running API servers where the provider or the
	// binder runs as shipped, each writing an audit log (Forbidden);
	// forbidden keeps what those stopped already were refused.
	audited   []*testenv.Env
	forbidden map[string][]string
}

// Management is a management cluster: Cluster API and the provider.
type Management struct {
	*testenv.Env
	// Name tells management clusters apart in logs and kubeconfig files.
	Name string
	// Provider is the provider's manager process, which a test may kill
	// and restart as a crash would.
	Provider *testenv.Process
}

// Start starts the environment; it stops when t ends.
func Start(t testenv.T) *Environment {
	t.Helper()
	e := &Environment{t: t, binders: map[*testenv.Env]bool{}}
	e.Pool = testenv.Start(t, testenv.Options{
		Scheme: Scheme(), CRDDirectoryPaths: []string{testenv.BMOCRDPath(t)},
		AuditLogPath: filepath.Join(t.TempDir(), "pool-audit.log"),
	})
	e.audited = append(e.audited, e.Pool)
	e.poolBMO = e.Pool.StartBMO(t, "baremetal-operator-system")
	startPacer(t, e.Pool)
	e.Workload = testenv.Start(t, testenv.Options{Scheme: Scheme()})
	e.Management = e.AddManagement(t, ManagementOptions{Name: "management", WithIPAM: true})
	// The first management cluster also holds hosts of its own, for
	// clusters without identityRef (hosts in the cluster's namespace).
	e.Management.StartBMO(t, "baremetal-operator-system")
	startPacer(t, e.Management.Env)
	e.kubelet = startKubelet(t, e.Workload, e.Pool, e.Management.Env)
	return e
}

// AddManagement starts another management cluster running Cluster API and
// the provider, until t ends.
func (e *Environment) AddManagement(t testenv.T, opts ManagementOptions) *Management {
	t.Helper()
	if opts.AuditLogPath == "" {
		opts.AuditLogPath = filepath.Join(t.TempDir(), opts.Name+"-audit.log")
	}
	m := StartManagement(t, opts)
	e.mu.Lock()
	e.audited = append(e.audited, m.Env)
	e.mu.Unlock()
	// Before the server stops and its log goes with t's directory.
	t.Cleanup(func() { e.settleAudit(m.Env) })
	return m
}

// settleAudit reads what server refused before it stops, for Forbidden.
func (e *Environment) settleAudit(server *testenv.Env) {
	forbidden, err := testenv.Forbidden(server.AuditLogPath, testenv.ProviderUser, testenv.HostClaimBinderUser)
	if err != nil {
		forbidden = []string{"audit log unreadable: " + err.Error()}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.audited = slices.DeleteFunc(e.audited, func(s *testenv.Env) bool { return s == server })
	if len(forbidden) > 0 {
		if e.forbidden == nil {
			e.forbidden = map[string][]string{}
		}
		e.forbidden[server.Config.Host] = forbidden
	}
}

// Forbidden lists, for each API server of the environment where the
// provider or the HostClaim binder runs, the requests of their shipped
// ServiceAccounts it refused with 403: a permission missing from config/.
func (e *Environment) Forbidden() (map[string][]string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := maps.Clone(e.forbidden)
	if out == nil {
		out = map[string][]string{}
	}
	for _, server := range e.audited {
		forbidden, err := testenv.Forbidden(server.AuditLogPath, testenv.ProviderUser, testenv.HostClaimBinderUser)
		if err != nil {
			return nil, err
		}
		if len(forbidden) > 0 {
			out[server.Config.Host] = forbidden
		}
	}
	return out, nil
}

// ManagementOptions describe a management cluster started on its own.
type ManagementOptions struct {
	// Name tells management clusters apart in logs and kubeconfig files.
	Name string
	// AuditLogPath: see testenv.Options.
	AuditLogPath string
	// ProviderArgs are added to the provider's command line.
	ProviderArgs []string
	// WithoutClusterAPI runs the provider alone: the caller plays Cluster
	// API's part (Machines, the Cluster's status), so that only the
	// provider's requests load the API server.
	WithoutClusterAPI bool
	// WithoutBareMetalOperator: the management cluster serves no
	// BareMetalHost API, as one where every tenant has an identity may.
	WithoutBareMetalOperator bool
	// WithIPAM runs both IP address managers (Metal3's and Cluster API's
	// in-cluster provider), with their CRDs, for data templates' pools.
	WithIPAM bool
	// Upstream, when set, runs that release of upstream CAPM3 instead of
	// this provider, as `clusterctl init` installs it: its CRDs, webhook
	// configurations and RBAC from its release (none of ours), its manager
	// run as its Deployment (testenv.Env.StartUpstreamCAPM3; ProviderArgs
	// replace its flags), and the Metal3 IPAM's CRDs it watches.
	// Management.Provider is its manager's process.
	Upstream *testenv.UpstreamRelease
}

// StartManagement starts a management cluster running Cluster API (unless
// opts.WithoutClusterAPI) and the provider, until t ends, outside any
// Environment: for benchmarks that need one API server only.
func StartManagement(t testenv.T, opts ManagementOptions) *Management {
	t.Helper()
	crdPaths := append([]string{testenv.CAPICRDPath(t), testenv.CertManagerCRDPath(t)}, testenv.CAPIKubeadmCRDPaths(t)...)
	if !opts.WithoutBareMetalOperator {
		crdPaths = append(crdPaths, testenv.BMOCRDPath(t))
	}
	if opts.WithIPAM {
		crdPaths = append(crdPaths, testenv.IPAMCRDPath(t), testenv.InClusterIPAMCRDPath(t))
	} else if opts.Upstream != nil {
		// Upstream's manager watches Metal3 IPPools: without their API its
		// controllers never start.
		crdPaths = append(crdPaths, testenv.IPAMCRDPath(t))
	}
	webhooks := capiWebhooks(t)
	var providerCRDs []*apiextensionsv1.CustomResourceDefinition
	if opts.Upstream == nil {
		providerCRDs = testenv.ProviderCRDs(t)
	} else {
		// Upstream's webhook configurations name the same kinds as ours:
		// only its own are installed.
		webhooks.Paths = nil
	}
	mgmt := testenv.Start(t, testenv.Options{
		Scheme:            Scheme(),
		CRDs:              providerCRDs,
		CRDDirectoryPaths: crdPaths,
		Webhooks:          webhooks,
		AuditLogPath:      opts.AuditLogPath,
	})
	if opts.Upstream != nil {
		// Before Cluster API starts, which reads the contract labels of
		// the infrastructure kinds' CRDs; the namespace of its webhook
		// Service comes with its RBAC.
		shipped := opts.Upstream.Shipped(t, nil)
		mgmt.InstallRBAC(t, shipped)
		mgmt.InstallShippedAPI(t, shipped)
	}
	if opts.WithIPAM {
		mgmt.StartIPAM(t)
		mgmt.StartInClusterIPAM(t)
	}
	labelForClusterctl(t, mgmt)
	mgmt.ServeProviderWebhooks(t, setupCAPIWebhooks)
	if !opts.WithoutClusterAPI {
		startCAPI(t, mgmt.Config)
	}
	if opts.Upstream != nil {
		manager := mgmt.StartUpstreamCAPM3(t, opts.Upstream, opts.ProviderArgs...)
		return &Management{Env: mgmt, Name: opts.Name, Provider: manager.Process}
	}
	provider := startProvider(t, mgmt, opts.ProviderArgs...)
	return &Management{Env: mgmt, Name: opts.Name, Provider: provider}
}

// labelForClusterctl gives every CRD the label clusterctl init sets, by
// which `clusterctl move` discovers the kinds to move.
func labelForClusterctl(t testenv.T, mgmt *testenv.Env) {
	t.Helper()
	ctx := context.Background()
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := mgmt.Client.List(ctx, crds); err != nil {
		t.Fatalf("list CRDs: %v", err)
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		if _, ok := crd.Labels[clusterctlv1.ClusterctlLabel]; ok {
			continue
		}
		patch := client.MergeFrom(crd.DeepCopy())
		if crd.Labels == nil {
			crd.Labels = map[string]string{}
		}
		crd.Labels[clusterctlv1.ClusterctlLabel] = ""
		if err := mgmt.Client.Patch(ctx, crd, patch); err != nil {
			t.Fatalf("label CRD %s for clusterctl: %v", crd.Name, err)
		}
	}
}

// StopPool stops the pool's API server, as an outage would, and returns
// the function that starts it again (same address, certificates and etcd),
// then restarts the pool's Bare Metal Operator, as its Deployment would:
// deployed, the operator runs with leader election, and an outage longer
// than its renew deadline (10 s) ends it. Left running instead, it would
// retry each host whose status it failed to save during the outage with
// its work queue's backoff, which grows to over 16 minutes; a host
// released after the outage would wait that long to deprovision. The
// restarted server lives as long as the environment.
func (e *Environment) StopPool() (restart func()) {
	restartServer := e.Pool.StopAPIServer(e.t)
	return func() {
		restartServer()
		// The operator exits if the server does not answer as it starts;
		// its Deployment would start it again until it does.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			return e.Pool.Client.List(ctx, &corev1.NamespaceList{}, client.Limit(1)) == nil, nil
		}); err != nil {
			e.t.Fatalf("the pool's API server did not come back: %v", err)
		}
		if err := e.poolBMO.Restart(); err != nil {
			e.t.Fatalf("restart the pool's Bare Metal Operator: %v", err)
		}
	}
}

// CreateNamespace creates a namespace on env.
func CreateNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(ctx, ns); err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// pollInterval is how often the environment's stand-ins look again.
const pollInterval = time.Second
