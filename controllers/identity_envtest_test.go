package controllers

import (
	"context"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/remote"
	"github.com/metal3-io/cluster-api-provider-metal3/internal/testenv"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, clusterv1.AddToScheme, bmov1alpha1.AddToScheme, infrav1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

// providerEnv is a management API server with the provider's and CAPI's CRDs,
// a pool API server with BareMetalHosts, and the provider's controllers
// running against the management one.
type providerEnv struct {
	mgmt, pool *testenv.Env
	identities *remote.Cache
}

func startProvider(t *testing.T) *providerEnv {
	t.Helper()
	scheme := testScheme(t)
	mgmt := testenv.Start(t, testenv.Options{
		Scheme: scheme, CRDs: testenv.ProviderCRDs(t),
		CRDDirectoryPaths: []string{testenv.CAPICRDPath(t), testenv.BMOCRDPath(t)},
	})
	pool := testenv.Start(t, testenv.Options{Scheme: scheme, CRDDirectoryPaths: []string{testenv.BMOCRDPath(t)}})

	mgr, err := ctrl.NewManager(mgmt.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	identities, err := remote.New(remote.Options{
		SecretReader: mgr.GetAPIReader(), ManagementCache: mgr.GetCache(), InClusterClient: mgr.GetClient(), Scheme: scheme,
		ProbeInterval: 500 * time.Millisecond, ProbeTimeout: 500 * time.Millisecond, FailureThreshold: 2,
		MinBackoff: 500 * time.Millisecond, MaxBackoff: 2 * time.Second, ConnectTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := mgr.Add(identities); err != nil {
		t.Fatal(err)
	}
	if err := (&Metal3ClusterReconciler{Client: mgr.GetClient(), Identities: identities}).
		SetupWithManager(ctx, mgr, controller.Options{SkipNameValidation: ptrTo(true)}); err != nil {
		t.Fatal(err)
	}
	if err := (&Metal3MachineReconciler{Client: mgr.GetClient(), Identities: identities}).
		SetupWithManager(ctx, mgr, controller.Options{SkipNameValidation: ptrTo(true)}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return &providerEnv{mgmt: mgmt, pool: pool, identities: identities}
}

// cluster creates a Cluster and its Metal3Cluster (owned by it, as CAPI's
// Cluster controller would set) in namespace.
func (p *providerEnv) cluster(t *testing.T, namespace, name string, identityRef *infrav1.IdentityRef) *infrav1.Metal3Cluster {
	t.Helper()
	ctx := context.Background()
	c := p.mgmt.Client
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "Metal3Cluster", Name: name,
		}},
	}
	if err := c.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	m3c := &infrav1.Metal3Cluster{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name,
			Labels: map[string]string{clusterv1.ClusterNameLabel: name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: name, UID: cluster.UID,
			}},
		},
		Spec: infrav1.Metal3ClusterSpec{
			ControlPlaneEndpoint: infrav1.APIEndpoint{Host: "192.168.111.249", Port: 6443},
			IdentityRef:          identityRef,
		},
	}
	if err := c.Create(ctx, m3c); err != nil {
		t.Fatal(err)
	}
	return m3c
}

func identityReason(g Gomega, c client.Client, m3c *infrav1.Metal3Cluster) func() string {
	return func() string {
		got := &infrav1.Metal3Cluster{}
		g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(m3c), got)).To(Succeed())
		cond := conditions.Get(got, infrav1.IdentityReadyCondition)
		if cond == nil {
			return ""
		}
		return string(cond.Status) + "/" + cond.Reason
	}
}

func isReady(g Gomega, c client.Client, m3c *infrav1.Metal3Cluster) func() bool {
	return func() bool {
		got := &infrav1.Metal3Cluster{}
		g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(m3c), got)).To(Succeed())
		return conditions.IsTrue(got, infrav1.ReadyCondition)
	}
}

// metal3MachineReconciles is how many reconciles the Metal3Machine
// controller has done, from controller-runtime's metrics.
func metal3MachineReconciles(g Gomega) float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, family := range families {
		if family.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range family.GetMetric() {
			for _, label := range m.GetLabel() {
				if label.GetName() == "controller" && label.GetValue() == "metal3machine" {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// TestIdentityOutageAndRecovery stops the pool's API server: the Metal3Cluster
// using it goes Unreachable within the probe window while an in-cluster one
// stays Ready; once the server is back on the same port the condition
// recovers and host events flow again, without restarting the manager.
func TestIdentityOutageAndRecovery(t *testing.T) {
	g := NewWithT(t)
	p := startProvider(t)
	ctx := context.Background()
	const ns = "tenant-a"

	p.pool.GrantInNamespace(t, "pool-a", "tenant-a", testenv.HostProviderRules()...)
	p.mgmt.GrantInNamespace(t, ns, "nobody")
	g.Expect(p.mgmt.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool-a-kubeconfig"},
		Data:       map[string][]byte{"kubeconfig": p.pool.UserKubeconfig(t, "tenant-a", "pool-a", "pool-a")},
	})).To(Succeed())

	remoteCluster := p.cluster(t, ns, "remote", &infrav1.IdentityRef{Name: "pool-a-kubeconfig"})
	localCluster := p.cluster(t, ns, "local", nil)
	worker := &infrav1.Metal3Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "worker-0", Labels: map[string]string{clusterv1.ClusterNameLabel: "remote"}},
		Spec:       infrav1.Metal3MachineSpec{CustomDeploy: &infrav1.CustomDeploy{Method: "install_coreos"}},
	}
	g.Expect(p.mgmt.Client.Create(ctx, worker)).To(Succeed())
	host := &bmov1alpha1.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{Namespace: "pool-a", Name: "host-0"},
		Spec: bmov1alpha1.BareMetalHostSpec{Online: true, ConsumerRef: &corev1.ObjectReference{
			APIVersion: infrav1.GroupVersion.String(), Kind: "Metal3Machine", Namespace: ns, Name: "worker-0",
		}},
	}
	g.Expect(p.pool.Client.Create(ctx, host)).To(Succeed())

	g.Eventually(identityReason(g, p.mgmt.Client, remoteCluster)).WithTimeout(30 * time.Second).Should(Equal("True/Ready"))
	g.Eventually(identityReason(g, p.mgmt.Client, localCluster)).WithTimeout(30 * time.Second).Should(Equal("True/InCluster"))
	g.Eventually(isReady(g, p.mgmt.Client, remoteCluster)).Should(BeTrue())
	g.Eventually(isReady(g, p.mgmt.Client, localCluster)).Should(BeTrue())
	g.Eventually(func() remote.IdentityKey {
		key, _ := p.identities.UserKey("Metal3Machine", client.ObjectKeyFromObject(worker))
		return key
	}).WithTimeout(10*time.Second).Should(HaveField("SecretName", "pool-a-kubeconfig"), "the machine uses its cluster's identity")

	restart := p.pool.StopAPIServer(t)
	// Probe window: 2 failed probes of 0.5 s, plus the reconcile.
	g.Eventually(identityReason(g, p.mgmt.Client, remoteCluster)).WithTimeout(10*time.Second).
		Should(Equal("False/Unreachable"), "an outage shows within the probe window")
	g.Expect(isReady(g, p.mgmt.Client, remoteCluster)()).To(BeFalse(), "Ready follows the identity")
	g.Consistently(isReady(g, p.mgmt.Client, localCluster)).WithTimeout(3*time.Second).Should(BeTrue(),
		"a cluster on another identity is not affected")

	restart()
	g.Eventually(identityReason(g, p.mgmt.Client, remoteCluster)).WithTimeout(60*time.Second).
		Should(Equal("True/Ready"), "the identity recovers once the server is back")
	g.Eventually(isReady(g, p.mgmt.Client, remoteCluster)).Should(BeTrue())

	// Host events flow again through the new accessor.
	var before float64
	g.Eventually(func() bool {
		now := metal3MachineReconciles(g)
		stable := now == before
		before = now
		return stable
	}).WithTimeout(20 * time.Second).WithPolling(2 * time.Second).Should(BeTrue())
	g.Expect(p.pool.Client.Get(ctx, client.ObjectKeyFromObject(host), host)).To(Succeed())
	host.Annotations = map[string]string{"example.com/touched": "after-restart"}
	g.Expect(p.pool.Client.Update(ctx, host)).To(Succeed())
	g.Eventually(func() float64 { return metal3MachineReconciles(g) }).WithTimeout(15*time.Second).
		Should(BeNumerically(">", before), "a host update after the restart reaches its machine")
}

// TestMachineIdentityOverride: a Metal3Machine with its own identityRef
// reports its identity's state, and follows the Secret appearing.
func TestMachineIdentityOverride(t *testing.T) {
	g := NewWithT(t)
	p := startProvider(t)
	ctx := context.Background()
	const ns = "tenant-b"
	p.mgmt.GrantInNamespace(t, ns, "nobody")
	p.cluster(t, ns, "cluster-b", nil)
	worker := &infrav1.Metal3Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "worker-0", Labels: map[string]string{clusterv1.ClusterNameLabel: "cluster-b"}},
		Spec: infrav1.Metal3MachineSpec{
			CustomDeploy: &infrav1.CustomDeploy{Method: "install_coreos"},
			IdentityRef:  &infrav1.IdentityRef{Name: "pool-b-kubeconfig"},
		},
	}
	g.Expect(p.mgmt.Client.Create(ctx, worker)).To(Succeed())
	machineCondition := func() string {
		got := &infrav1.Metal3Machine{}
		g.Expect(p.mgmt.Client.Get(ctx, client.ObjectKeyFromObject(worker), got)).To(Succeed())
		cond := conditions.Get(got, infrav1.IdentityReadyCondition)
		if cond == nil {
			return ""
		}
		return string(cond.Status) + "/" + cond.Reason + ": " + cond.Message
	}
	g.Eventually(machineCondition).WithTimeout(20 * time.Second).Should(And(
		HavePrefix("False/SecretNotFound"), ContainSubstring("tenant-b/pool-b-kubeconfig")))

	p.pool.GrantInNamespace(t, "pool-b", "tenant-b", testenv.HostProviderRules()...)
	g.Expect(p.mgmt.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool-b-kubeconfig"},
		Data:       map[string][]byte{"kubeconfig": p.pool.UserKubeconfig(t, "tenant-b", "pool-b", "pool-b")},
	})).To(Succeed())
	g.Eventually(machineCondition).WithTimeout(30*time.Second).Should(HavePrefix("True/Ready"),
		"creating the Secret is enough: its watch wakes the machine")
	got := &infrav1.Metal3Machine{}
	g.Expect(p.mgmt.Client.Get(ctx, client.ObjectKeyFromObject(worker), got)).To(Succeed())
	g.Expect(got.Status.Identity).To(Equal(&infrav1.IdentityStatus{
		Source: infrav1.IdentitySourceSecret, SecretName: "pool-b-kubeconfig", HostNamespace: "pool-b",
	}))
}
