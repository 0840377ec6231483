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

package clusterctl_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	clusterctllog "sigs.k8s.io/cluster-api/cmd/clusterctl/log"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/workload"
	"github.com/metal3-io/cluster-api-provider-metal3/controllers"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

const (
	tenantNamespace = "tenant-a"
	poolNamespace   = "pool-east"
	clusterName     = "tenant-a-1"
)

// TestMoveWithRemotePool: after the provider has provisioned a tenant's
// machine through a remote pool, `clusterctl move` (dry run: what it would
// move) takes every kind of ours in the tenant's namespace, and the identity
// Secret, and nothing of the Bare Metal Operator: the hosts and the Secrets
// written next to them stay in the pool. The real move to a second
// management cluster then gives every object a new UID; the provider there
// finds the same host, which is neither deprovisioned nor reprovisioned, and
// deleting the machine there returns the host with no Secret of ours left.
//
// The machines' data template has no clusterName and is shared with a
// second cluster of the namespace, as upstream CAPM3 v1.14 allows: no
// Cluster owns it, so clusterctl moves it by its CRD's move label, once.
// clusterctl moves a whole namespace, both clusters with the template they
// share (a template serves only machines of its own namespace, so no
// cluster left behind can be using it); the template and both clusters'
// Metal3Data arrive with their names and indexes, nothing is allocated
// anew, and the template outlives the first cluster's machine there.
func TestMoveWithRemotePool(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	scheme := moveScheme(t)
	mgmt := startManagementCluster(t, scheme)
	pool := testenv.Start(t, testenv.Options{Scheme: scheme, CRDDirectoryPaths: []string{testenv.BMOCRDPath(t)}})
	pool.StartBMO(t, poolNamespace)
	pool.GrantInNamespace(t, poolNamespace, "tenant-a", testenv.HostProviderRules()...)
	mgmt.GrantInNamespace(t, tenantNamespace, "nobody")
	if err := testenv.RegisterHosts(ctx, pool.Client, poolNamespace, "host", 2); err != nil {
		t.Fatal(err)
	}

	// The tenant's cluster, as clusterctl generate and Cluster API leave it:
	// the owner references are those CAPI's controllers set.
	cluster, id := createTenantClusterWith(t, mgmt, pool, infrav1.HostModeBareMetalHost, sharedDataTemplate)
	template := &infrav1.Metal3MachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: clusterName + "-workers", OwnerReferences: ownedBy(cluster)},
		Spec:       infrav1.Metal3MachineTemplateSpec{Template: infrav1.Metal3MachineTemplateResource{Spec: machineSpec()}},
	}
	g.Expect(mgmt.Client.Create(ctx, template)).To(Succeed())
	createMachine(t, mgmt.Client, cluster, "worker-0")
	// A second cluster of the tenant, through the same identity, whose
	// machine uses the same data template.
	other := createClusterNamed(t, mgmt.Client, infrav1.HostModeBareMetalHost, otherClusterName)
	createMachine(t, mgmt.Client, other, "worker-1")

	// Our controllers do their part: claim the host through the identity,
	// render the data next to it, own and label what they must.
	stopSource := startProvider(t, mgmt)
	source := provisionedWorker(t, mgmt)
	provisionedMachine(t, mgmt, "worker-1")
	sourceData := renderedData(t, mgmt)
	g.Expect(sourceData).To(HaveLen(2))
	g.Expect(sourceData).To(HaveKeyWithValue("worker-0", HaveField("Cluster", clusterName)))
	g.Expect(sourceData).To(HaveKeyWithValue("worker-1", HaveField("Cluster", otherClusterName)))

	// The management cluster becomes one clusterctl knows; then the dry run.
	repo := localRepository(t)
	initManagementCluster(t, mgmt, repo)
	moved := dryRunMove(t, mgmt, repo)
	t.Logf("clusterctl move would create: %v", moved)

	for _, want := range []string{
		"Cluster/" + clusterName, "Metal3Cluster/" + clusterName, "Machine/worker-0", "Metal3Machine/worker-0",
		"Metal3MachineTemplate/" + clusterName + "-workers", "Metal3DataTemplate/" + clusterName + "-nodes",
		"Metal3DataClaim/worker-0", "Metal3Data/" + sourceData["worker-0"].Name, "Secret/" + id.Name,
		"Cluster/" + otherClusterName, "Machine/worker-1", "Metal3DataClaim/worker-1", "Metal3Data/" + sourceData["worker-1"].Name,
	} {
		g.Expect(moved).To(ContainElement(want), "clusterctl move takes %s", want)
	}
	templates := slices.DeleteFunc(slices.Clone(moved), func(name string) bool { return !hasKind(name, "Metal3DataTemplate") })
	g.Expect(templates).To(ConsistOf("Metal3DataTemplate/"+clusterName+"-nodes"), "the shared template moves once")
	for _, name := range moved {
		g.Expect(name).NotTo(HavePrefix("BareMetalHost/"), "no host moves: they are in the pool")
	}
	secrets := slices.DeleteFunc(slices.Clone(moved), func(name string) bool { return !hasKind(name, "Secret") })
	g.Expect(secrets).To(ConsistOf("Secret/"+id.Name, "Secret/worker-0-bootstrap", "Secret/worker-1-bootstrap"),
		"no Secret of a host (user data, metadata, network data, BMC credentials) is in the tenant's namespace")

	// What stays in the pool: the host, claimed by the tenant's machine,
	// and the Secrets written next to it.
	host := &bmov1alpha1.BareMetalHost{}
	hostRef := source.Annotations[infrav1.HostAnnotation]
	g.Expect(hostRef).To(HavePrefix(poolNamespace + "/"))
	g.Expect(pool.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: poolNamespace, Name: hostRef[len(poolNamespace)+1:]}, host)).To(Succeed())
	g.Expect(host.Spec.ConsumerRef).NotTo(BeNil())
	g.Expect(host.Spec.MetaData).NotTo(BeNil())
	g.Expect(pool.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: poolNamespace, Name: host.Spec.MetaData.Name}, &corev1.Secret{})).To(Succeed())

	// The real move, with the source's provider still running: it sees
	// the Cluster paused, as clusterctl leaves it, and must not let go of
	// anything while its objects are deleted.
	target := startManagementCluster(t, scheme)
	initManagementCluster(t, target, repo)
	move(t, mgmt, target, repo)
	stopSource()
	assertSharedTemplateMoved(t, mgmt, target, sourceData)
	// Status does not move: Cluster API on the target reports the second
	// cluster's infrastructure again (the first one's, below).
	moved2 := &clusterv1.Cluster{}
	g.Expect(target.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: tenantNamespace, Name: otherClusterName}, moved2)).To(Succeed())
	moved2.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	g.Expect(target.Client.Status().Update(ctx, moved2)).To(Succeed())
	assertMovedMachineKeepsItsHost(t, target, pool, source, host)
	assertSharedTemplateOutlivesMachine(t, target, sourceData["worker-1"])
}

// otherClusterName is the tenant's second cluster, sharing the data template.
const otherClusterName = "tenant-a-2"

// sharedDataTemplate, for createTenantClusterWith: a template naming no
// cluster.
const sharedDataTemplate = ""

// rendered is a claim's Metal3Data as the move must keep it.
type rendered struct {
	Name, Cluster string
	Index         int32
}

// renderedData maps the tenant's claims to their Metal3Data.
func renderedData(t *testing.T, env *testenv.Env) map[string]rendered {
	t.Helper()
	datas := &infrav1.Metal3DataList{}
	if err := env.Client.List(context.Background(), datas, ctrlclient.InNamespace(tenantNamespace)); err != nil {
		t.Fatal(err)
	}
	out := map[string]rendered{}
	for _, d := range datas.Items {
		out[d.Spec.Claim.Name] = rendered{Name: d.Name, Cluster: d.Labels[clusterv1.ClusterNameLabel], Index: ptr.Deref(d.Spec.Index, -1)}
	}
	return out
}

// assertSharedTemplateMoved: after the move of the namespace, the shared
// template is in the target once, owned by no Cluster, with both clusters'
// Metal3Data as they were, and nothing of the namespace is left in the
// source.
func assertSharedTemplateMoved(t *testing.T, source, target *testenv.Env, want map[string]rendered) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	templates := &infrav1.Metal3DataTemplateList{}
	g.Expect(target.Client.List(ctx, templates, ctrlclient.InNamespace(tenantNamespace))).To(Succeed())
	g.Expect(templates.Items).To(HaveLen(1))
	g.Expect(templates.Items[0].Name).To(Equal(clusterName + "-nodes"))
	g.Expect(templates.Items[0].OwnerReferences).To(BeEmpty(), "no Cluster owns the shared template in the target either")
	g.Expect(renderedData(t, target)).To(Equal(want), "both clusters' data arrive with their names, indexes and clusters")
	g.Expect(source.Client.List(ctx, templates, ctrlclient.InNamespace(tenantNamespace))).To(Succeed())
	g.Expect(templates.Items).To(BeEmpty(), "the namespace moved whole: no cluster is left in the source to use the template")
	g.Expect(renderedData(t, source)).To(BeEmpty())
}

// assertSharedTemplateOutlivesMachine: once the first cluster's machine is
// gone in the target, the template still serves the second cluster's, whose
// data kept its index, and the target's provider allocated nothing anew.
func assertSharedTemplateOutlivesMachine(t *testing.T, target *testenv.Env, kept rendered) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Eventually(func(g Gomega) {
		template := &infrav1.Metal3DataTemplate{}
		g.Expect(target.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: tenantNamespace, Name: clusterName + "-nodes"}, template)).To(Succeed())
		g.Expect(template.DeletionTimestamp.IsZero()).To(BeTrue())
		g.Expect(template.Status.Indexes).To(ConsistOf(infrav1.IndexEntry{Name: "worker-1", Index: ptr.To(kept.Index)}))
		g.Expect(renderedData(t, target)).To(Equal(map[string]rendered{"worker-1": kept}))
		claim := &infrav1.Metal3DataClaim{}
		g.Expect(target.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: tenantNamespace, Name: "worker-1"}, claim)).To(Succeed())
		g.Expect(claim.Status.RenderedData).To(HaveValue(HaveField("Name", kept.Name)))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
}

// createTenantCluster creates the tenant's identity Secret for its pool
// namespace, its Cluster in mode and the data template its machines use,
// which still names the cluster (spec.clusterName, deprecated).
func createTenantCluster(t *testing.T, mgmt, pool *testenv.Env, mode infrav1.HostMode) (*clusterv1.Cluster, *corev1.Secret) {
	t.Helper()
	return createTenantClusterWith(t, mgmt, pool, mode, clusterName)
}

// createTenantClusterWith is createTenantCluster with the data template's
// clusterName.
func createTenantClusterWith(t *testing.T, mgmt, pool *testenv.Env, mode infrav1.HostMode, templateCluster string) (*clusterv1.Cluster, *corev1.Secret) {
	t.Helper()
	ctx := context.Background()
	id := testenv.IdentitySecret(tenantNamespace, clusterName+"-pool-identity", pool.UserKubeconfig(t, "tenant-a", "pool-east", poolNamespace))
	if err := mgmt.Client.Create(ctx, id); err != nil {
		t.Fatal(err)
	}
	cluster := createCluster(t, mgmt.Client, mode)
	createDataTemplateFor(t, mgmt.Client, templateCluster)
	return cluster, id
}

// createDataTemplate creates the data template the tenant's machines use,
// naming their cluster.
func createDataTemplate(t *testing.T, c ctrlclient.Client) {
	t.Helper()
	createDataTemplateFor(t, c, clusterName)
}

// createDataTemplateFor creates the data template with spec.clusterName
// cluster ("": none, a template any cluster of the namespace may share).
func createDataTemplateFor(t *testing.T, c ctrlclient.Client, cluster string) {
	t.Helper()
	if err := c.Create(context.Background(), &infrav1.Metal3DataTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: clusterName + "-nodes"},
		Spec: infrav1.Metal3DataTemplateSpec{ClusterName: cluster, MetaData: &infrav1.MetaData{
			ObjectNames: []infrav1.MetaDataObjectName{{Key: "name", Object: "machine"}},
		}},
	}); err != nil {
		t.Fatal(err)
	}
}

// provisionedWorker waits until the provider has rendered worker-0's data
// and its host is provisioned, and returns the Metal3Machine.
func provisionedWorker(t *testing.T, mgmt *testenv.Env) *infrav1.Metal3Machine {
	t.Helper()
	return provisionedMachine(t, mgmt, "worker-0")
}

// provisionedMachine is provisionedWorker for the machine name.
func provisionedMachine(t *testing.T, mgmt *testenv.Env, name string) *infrav1.Metal3Machine {
	t.Helper()
	worker := &infrav1.Metal3Machine{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(context.Background(), ctrlclient.ObjectKey{Namespace: tenantNamespace, Name: name}, worker)).To(Succeed())
		g.Expect(worker.Status.RenderedData).NotTo(BeNil(), "the machine's data is rendered")
		g.Expect(ptr.Deref(worker.Status.Initialization.Provisioned, false)).To(BeTrue(), "the host is provisioned")
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return worker
}

func hasKind(name, kind string) bool { return len(name) > len(kind) && name[:len(kind)+1] == kind+"/" }

func moveScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, clusterv1.AddToScheme, bmov1alpha1.AddToScheme, infrav1.AddToScheme,
		ipamv1.AddToScheme, capipamv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

func ownedBy(obj ctrlclient.Object) []metav1.OwnerReference {
	gvk := obj.GetObjectKind().GroupVersionKind()
	return []metav1.OwnerReference{{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: obj.GetName(), UID: obj.GetUID()}}
}

func machineSpec() infrav1.Metal3MachineSpec {
	return infrav1.Metal3MachineSpec{
		Image: infrav1.Image{
			URL: "http://172.22.0.1/images/node.qcow2", Checksum: ptr.To("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
			ChecksumType: "sha256", DiskFormat: "qcow2",
		},
		DataTemplate: &infrav1.Metal3ObjectRef{Name: clusterName + "-nodes"},
	}
}

// createCluster creates the Cluster and its Metal3Cluster with the identity
// and host mode,
// the Cluster's infrastructure reported provisioned as CAPI would.
func createCluster(t *testing.T, c ctrlclient.Client, mode infrav1.HostMode) *clusterv1.Cluster {
	t.Helper()
	return createClusterNamed(t, c, mode, clusterName)
}

// createClusterNamed is createCluster for the cluster name; every cluster
// of the tenant reaches its pool through the same identity Secret.
func createClusterNamed(t *testing.T, c ctrlclient.Client, mode infrav1.HostMode, name string) *clusterv1.Cluster {
	t.Helper()
	ctx := context.Background()
	cluster := &clusterv1.Cluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster"},
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: name},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "Metal3Cluster", Name: name,
		}},
	}
	if err := c.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	if err := c.Status().Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	cluster.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("Cluster"))
	if err := c.Create(ctx, &infrav1.Metal3Cluster{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: tenantNamespace, Name: name, OwnerReferences: ownedBy(cluster),
			Labels: map[string]string{clusterv1.ClusterNameLabel: name},
		},
		Spec: infrav1.Metal3ClusterSpec{
			ControlPlaneEndpoint: infrav1.APIEndpoint{Host: "192.168.111.249", Port: 6443},
			IdentityRef:          &infrav1.IdentityRef{Name: clusterName + "-pool-identity"},
			HostMode:             mode,
			// No workload cluster here: a cloud provider stands for
			// whoever would give Nodes their providerID.
			CloudProviderEnabled: ptr.To(true),
		},
	}); err != nil {
		t.Fatal(err)
	}
	return cluster
}

// createMachine creates a Machine owned by the Cluster (as CAPI does for a
// Machine without another owner), its bootstrap data and its Metal3Machine.
func createMachine(t *testing.T, c ctrlclient.Client, cluster *clusterv1.Cluster, name string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{clusterv1.ClusterNameLabel: cluster.Name}
	bootstrap := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: name + "-bootstrap", Labels: labels},
		Data:       map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
	}
	if err := c.Create(ctx, bootstrap); err != nil {
		t.Fatal(err)
	}
	machine := &clusterv1.Machine{
		TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine"},
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: name, Labels: labels, OwnerReferences: ownedBy(cluster)},
		Spec: clusterv1.MachineSpec{
			ClusterName: cluster.Name,
			Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(bootstrap.Name)},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "Metal3Machine", Name: name,
			},
		},
	}
	if err := c.Create(ctx, machine); err != nil {
		t.Fatal(err)
	}
	machine.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("Machine"))
	// The bootstrap data is the Machine's, as a bootstrap provider's would be.
	bootstrap.OwnerReferences = ownedBy(machine)
	if err := c.Update(ctx, bootstrap); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &infrav1.Metal3Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: name, Labels: labels, OwnerReferences: ownedBy(machine)},
		Spec:       machineSpec(),
	}); err != nil {
		t.Fatal(err)
	}
}

// startProvider runs the provider's controllers against mgmt and returns a
// function stopping them.
func startProvider(t *testing.T, mgmt *testenv.Env) func() {
	t.Helper()
	mgr, err := ctrl.NewManager(mgmt.Config, ctrl.Options{
		Scheme: mgmt.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Client: ctrlclient.Options{Cache: &ctrlclient.CacheOptions{DisableFor: []ctrlclient.Object{&corev1.Secret{}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, err = controllers.Setup(ctx, mgr, controllers.SetupOptions{
		// envtest's API servers listen on loopback.
		Remote:     hostaccess.Options{Policy: kubeguard.ServerPolicy{AllowLoopback: true}, MinBackoff: time.Second},
		Workload:   workload.ClustersOptions{Policy: kubeguard.ServerPolicy{AllowLoopback: true, Flags: "workload"}},
		Controller: controller.Options{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("provider: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// dryRunMove runs `clusterctl move --dry-run` for the tenant's namespace and
// returns what it would create in the target, as "Kind/name": the dry run
// logs each object it would move, as the CLI prints with -v 1.
func dryRunMove(t *testing.T, mgmt *testenv.Env, repo *repository) []string {
	t.Helper()
	clusterctlLogged.Lock()
	defer clusterctlLogged.Unlock()
	sink := &moveRecorder{}
	clusterctllog.SetLogger(logr.New(sink))
	defer clusterctllog.SetLogger(logr.Discard())
	c := newClusterctl(t, repo.config(t))
	if err := c.Move(context.Background(), client.MoveOptions{
		FromKubeconfig: client.Kubeconfig{Path: mgmt.WriteKubeconfig(t)}, Namespace: tenantNamespace, DryRun: true,
	}); err != nil {
		t.Fatalf("clusterctl move --dry-run: %v", err)
	}
	return sink.created()
}

// clusterctlLogged serialises every clusterctl call (init, move) of the
// package's tests, which run in parallel: clusterctl logs to one global
// logger, which a dry run replaces to read what it would move, so any
// clusterctl call in another test at that moment would race with it.
var clusterctlLogged sync.Mutex

// moveRecorder is a logr sink keeping the objects a dry-run move would create.
type moveRecorder struct {
	mu      sync.Mutex
	objects []string
}

func (r *moveRecorder) Init(logr.RuntimeInfo)          {}
func (r *moveRecorder) Enabled(int) bool               { return true }
func (r *moveRecorder) Error(error, string, ...any)    {}
func (r *moveRecorder) WithValues(...any) logr.LogSink { return r }
func (r *moveRecorder) WithName(string) logr.LogSink   { return r }

func (r *moveRecorder) Info(_ int, msg string, kvs ...any) {
	// createTargetObject logs "Creating", <Kind>, <name>, "Namespace", <ns>.
	if msg != "Creating" || len(kvs) < 2 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.objects = append(r.objects, fmt.Sprintf("%v/%v", kvs[0], kvs[1]))
}

func (r *moveRecorder) created() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.objects)
}
