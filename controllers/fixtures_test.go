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
	"maps"
	"os"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/workload"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// Whether a management API server also serves BareMetalHosts (hosts next to
// the machines, as upstream CAPM3) or only the provider's and CAPI's kinds.
const (
	withHosts = true
	noHosts   = false
)

// managementCluster is the test's management API server, shared with the
// package's other tests: the provider's CRDs (as kustomize builds them) and
// CAPI's, and BareMetalHost CRDs if hosts. The one without hosts serves the
// IP address managers' CRDs and runs the real Metal3 IPAM and CAPI
// in-cluster IPAM provider.
func managementCluster(t *testing.T, scheme *runtime.Scheme, hosts bool) *testenv.Env {
	t.Helper()
	return sharedMgmt[hosts].Get(t, &suite, func(s testenv.T) *testenv.Env {
		crdPaths := []string{testenv.CAPICRDPath(s)}
		if hosts {
			crdPaths = append(crdPaths, testenv.BMOCRDPath(s))
		} else {
			crdPaths = append(crdPaths, testenv.IPAMCRDPath(s), testenv.InClusterIPAMCRDPath(s))
		}
		env := testenv.Start(s, testenv.Options{Scheme: scheme, CRDs: testenv.ProviderCRDs(s), CRDDirectoryPaths: crdPaths})
		if !hosts {
			env.StartIPAM(s)
			env.StartInClusterIPAM(s)
		}
		return env
	})
}

// ipamManagementCluster is a management API server without hosts that runs
// the real IP address managers.
func ipamManagementCluster(t *testing.T, scheme *runtime.Scheme) *testenv.Env {
	t.Helper()
	return managementCluster(t, scheme, noHosts)
}

// poolCluster is one of the two shared API servers holding BareMetalHosts
// only: pools reached through identities.
func poolCluster(t *testing.T, scheme *runtime.Scheme, i int) *testenv.Env {
	t.Helper()
	return sharedPools[i].Get(t, &suite, func(s testenv.T) *testenv.Env { return privatePoolCluster(s, scheme) })
}

// privatePoolCluster starts a pool API server for the test alone, for one
// that stops it.
func privatePoolCluster(t testenv.T, scheme *runtime.Scheme) *testenv.Env {
	t.Helper()
	return testenv.Start(t, testenv.Options{Scheme: scheme, CRDDirectoryPaths: []string{testenv.BMOCRDPath(t)}})
}

// startControllers runs a manager with the provider's controllers against
// the management API server. namespaces, when given, limits the manager to
// them, as --namespace does: two such managers are two independent
// providers. Without, it watches the namespaces the test named so far.
func startControllers(t *testing.T, mgmt *testenv.Env, scheme *runtime.Scheme, namespaces ...string) *hostaccess.IdentityCache {
	t.Helper()
	identities, _ := startStoppableControllers(t, mgmt, scheme, namespaces...)
	return identities
}

// startStoppableControllers is startControllers with a function stopping
// the manager before the test ends, as a provider restart would.
func startStoppableControllers(t *testing.T, mgmt *testenv.Env, scheme *runtime.Scheme, namespaces ...string) (*hostaccess.IdentityCache, func()) {
	t.Helper()
	return startControllersWith(t, mgmt, scheme, fixtureOptions{namespaces: namespaces, remote: testRemoteOptions()})
}

// testRemoteOptions are the remote-client cache settings of the tests:
// fast probes and backoff so outages show within seconds, and loopback
// allowed, since every envtest API server listens there.
func testRemoteOptions() hostaccess.Options {
	return hostaccess.Options{
		ProbeInterval: 500 * time.Millisecond, ProbeTimeout: 500 * time.Millisecond, FailureThreshold: 2,
		MinBackoff: 500 * time.Millisecond, MaxBackoff: 2 * time.Second, ConnectTimeout: 5 * time.Second,
		Policy: kubeguard.ServerPolicy{AllowLoopback: true},
	}
}

// testWorkloadOptions are the workload cluster settings of the tests: fast
// backoff, and loopback allowed, since every envtest API server listens
// there.
func testWorkloadOptions() workload.ClustersOptions {
	return workload.ClustersOptions{
		MinBackoff: 500 * time.Millisecond, MaxBackoff: 2 * time.Second, Timeout: 5 * time.Second,
		Policy: kubeguard.ServerPolicy{AllowLoopback: true, Flags: "workload"},
	}
}

// fixtureOptions vary the provider a test starts.
type fixtureOptions struct {
	// namespaces limit the manager to them, as --namespace does.
	namespaces []string
	remote     hostaccess.Options
	// hostNameIPClaims: --enable-bmh-name-based-preallocation.
	hostNameIPClaims bool
	// providerNamespace: --provider-namespace, where Metal3ClusterIdentities'
	// Secrets are; the manager must watch it (a test namespace).
	providerNamespace string
	// workload configures workload cluster access; nil: testWorkloadOptions.
	workload *workload.ClustersOptions
}

// startControllersWith runs the provider's controllers as configured, and
// returns its identity cache and a function stopping it.
func startControllersWith(t *testing.T, mgmt *testenv.Env, scheme *runtime.Scheme, opts fixtureOptions) (*hostaccess.IdentityCache, func()) {
	t.Helper()
	cacheOptions := cache.Options{}
	if len(opts.namespaces) == 0 {
		opts.namespaces = namespacesOf(t)
		if len(opts.namespaces) == 0 {
			t.Fatal("the test names no namespace (testNamespace) for its provider to watch")
		}
	}
	if len(opts.namespaces) > 0 {
		cacheOptions.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range opts.namespaces {
			cacheOptions.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(mgmt.Config, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Cache: cacheOptions,
		// As main.go: Secrets are never cached.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	workloadOpts := testWorkloadOptions()
	if opts.workload != nil {
		workloadOpts = *opts.workload
	}
	ctx, cancel := context.WithCancel(context.Background())
	started, err := Setup(ctx, mgr, SetupOptions{
		Remote:            opts.remote,
		Workload:          workloadOpts,
		HostNameIPClaims:  opts.hostNameIPClaims,
		ProviderNamespace: opts.providerNamespace,
		Concurrency:       Concurrency{Metal3Cluster: 4, Metal3Machine: 4, Metal3MachineTemplate: 1},
		Controller:        controller.Options{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	identities := started.Identities
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return identities, stop
}

// workloadCluster creates what CAPI would for a cluster with one machine
// per name: Cluster (infrastructure provisioned), Metal3Cluster, and per
// machine a bootstrap Secret, a Machine and its Metal3Machine.
type workloadCluster struct {
	namespace, name string
	identityRef     *infrav1.IdentityRef
	hostMode        infrav1.HostMode
	// noCloudProvider leaves cloudProviderEnabled unset: the provider sets
	// the Nodes' providerID, as upstream CAPM3 does by default.
	noCloudProvider bool
}

func (w workloadCluster) cloudProvider() *bool {
	if w.noCloudProvider {
		return nil
	}
	return ptr.To(true)
}

func (w workloadCluster) create(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: w.name},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "Metal3Cluster", Name: w.name,
		}},
	}
	if err := c.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	if err := c.Status().Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	m3c := &infrav1.Metal3Cluster{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: w.namespace, Name: w.name, Labels: map[string]string{clusterv1.ClusterNameLabel: w.name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: w.name, UID: cluster.UID}},
		},
		Spec: infrav1.Metal3ClusterSpec{
			ControlPlaneEndpoint: infrav1.APIEndpoint{Host: "192.168.111.249", Port: 6443}, IdentityRef: w.identityRef,
			HostMode: w.hostMode,
			// Most tests have no workload cluster: a cloud provider stands
			// for whoever gives Nodes their providerID. Tests about Nodes
			// unset it.
			CloudProviderEnabled: w.cloudProvider(),
		},
	}
	if err := c.Create(ctx, m3c); err != nil {
		t.Fatal(err)
	}
}

// machine creates a bootstrap Secret, a Machine and its Metal3Machine; spec
// adjusts the Metal3Machine (e.g. its identityRef or template annotation).
func (w workloadCluster) machine(t *testing.T, c client.Client, name string, adjust func(*infrav1.Metal3Machine)) *infrav1.Metal3Machine {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{clusterv1.ClusterNameLabel: w.name}
	bootstrap := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: name + "-bootstrap", Labels: labels},
		Data:       map[string][]byte{"value": []byte("#cloud-config\nhostname: " + name + "\n"), "format": []byte("cloud-config")},
	}
	if err := c.Create(ctx, bootstrap); err != nil {
		t.Fatal(err)
	}
	m3m := &infrav1.Metal3Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: name, Labels: maps.Clone(labels)},
		Spec: infrav1.Metal3MachineSpec{Image: infrav1.Image{
			URL:          "http://172.22.0.1/images/node.qcow2",
			Checksum:     ptr.To("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
			ChecksumType: "sha256", DiskFormat: "qcow2",
		}},
	}
	if adjust != nil {
		adjust(m3m)
	}
	// Cluster API labels a Machine and its infrastructure machine alike
	// with the MachineDeployment they belong to.
	if md := m3m.Labels[clusterv1.MachineDeploymentNameLabel]; md != "" {
		labels[clusterv1.MachineDeploymentNameLabel] = md
	}
	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: name, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName: w.name,
			Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(bootstrap.Name)},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "Metal3Machine", Name: name,
			},
		},
	}
	if err := c.Create(ctx, machine); err != nil {
		t.Fatal(err)
	}
	m3m.OwnerReferences = []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: name, UID: machine.UID}}
	if err := c.Create(ctx, m3m); err != nil {
		t.Fatal(err)
	}
	return m3m
}

// availableHosts creates hosts and reports them available, as the Bare Metal
// Operator would after registration and inspection.
func availableHosts(t *testing.T, c client.Client, namespace, prefix string, n int) {
	t.Helper()
	for i := range n {
		host := &bmov1alpha1.BareMetalHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("%s-%d", prefix, i)},
			Spec:       bmov1alpha1.BareMetalHostSpec{BootMACAddress: fmt.Sprintf("00:5c:52:31:3a:%02x", i)},
		}
		if err := c.Create(context.Background(), host); err != nil {
			t.Fatal(err)
		}
		setHostState(t, c, host, bmov1alpha1.StateAvailable)
	}
}

// setHostState writes the host's status as the Bare Metal Operator does.
func setHostState(t *testing.T, c client.Client, host *bmov1alpha1.BareMetalHost, state bmov1alpha1.ProvisioningState) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(host), host); err != nil {
			return err
		}
		host.Status.Provisioning.State = state
		host.Status.OperationalStatus = bmov1alpha1.OperationalStatusOK
		if state == bmov1alpha1.StateProvisioned {
			host.Status.HardwareDetails = &bmov1alpha1.HardwareDetails{
				Hostname: host.Name,
				NIC:      []bmov1alpha1.NIC{{Name: "eth0", MAC: host.Spec.BootMACAddress, IP: "192.168.111.20"}},
			}
		}
		return c.Status().Update(context.Background(), host)
	}).Should(Succeed())
}

// consumedHosts returns the hosts of namespace consumed by a Metal3Machine,
// by "machine-namespace/name".
func consumedHosts(g Gomega, c client.Client, namespace string) map[string]bmov1alpha1.BareMetalHost {
	hosts := &bmov1alpha1.BareMetalHostList{}
	g.Expect(c.List(context.Background(), hosts, client.InNamespace(namespace))).To(Succeed())
	out := map[string]bmov1alpha1.BareMetalHost{}
	for _, h := range hosts.Items {
		if ref := h.Spec.ConsumerRef; ref != nil {
			key := ref.Namespace + "/" + ref.Name
			g.Expect(out).NotTo(HaveKey(key), "machine %s consumes two hosts", key)
			out[key] = h
		}
	}
	return out
}

func metav1ObjectMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}

// update changes obj as a person or another controller would: read it,
// apply mutate, write it, and start over on a conflict with the provider's
// own concurrent writes.
func update(t *testing.T, c client.Client, obj client.Object, mutate func()) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate()
		return c.Update(context.Background(), obj)
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
