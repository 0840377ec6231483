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
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	hostpool "github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/workload"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// Upstream CAPM3 behaviours, each through a tenant's identity to a pool
// where the real Bare Metal Operator moves the hosts, unless a test says
// why it writes host status itself.

// poolIdentity gives tenant an identity Secret named secretName for
// poolNamespace of pool, with the least privilege the provider needs.
func poolIdentity(t *testing.T, mgmt, pool *testenv.Env, tenant, poolNamespace, secretName string) *infrav1.IdentityRef {
	t.Helper()
	pool.GrantInNamespace(t, poolNamespace, tenant, testenv.HostProviderRules()...)
	if err := mgmt.Client.Create(context.Background(), testenv.IdentitySecret(tenant, secretName, pool.UserKubeconfig(t, tenant, poolNamespace, poolNamespace))); err != nil {
		t.Fatal(err)
	}
	return &infrav1.IdentityRef{Name: secretName}
}

// hostOf waits for the host m3m consumes in namespace of c.
func hostOf(t *testing.T, c client.Client, namespace string, m3m *infrav1.Metal3Machine) *bmov1alpha1.BareMetalHost {
	t.Helper()
	var host bmov1alpha1.BareMetalHost
	NewWithT(t).Eventually(func(g Gomega) {
		hosts := consumedHosts(g, c, namespace)
		g.Expect(hosts).To(HaveKey(m3m.Namespace + "/" + m3m.Name))
		host = hosts[m3m.Namespace+"/"+m3m.Name]
	}).WithTimeout(60*time.Second).Should(Succeed(), "machine %s claims a host", m3m.Name)
	return &host
}

// waitHostState waits until BMO has brought host to state.
func waitHostState(t *testing.T, c client.Client, host *bmov1alpha1.BareMetalHost, state bmov1alpha1.ProvisioningState) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(host), host)).To(Succeed())
		g.Expect(host.Status.Provisioning.State).To(Equal(state))
	}).WithTimeout(2*time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "BMO brings host %s to %s", host.Name, state)
}

// TestNodeFoundByHostname: a Node whose image does not set the metal3.io/uuid
// label is found, as upstream CAPM3 falls back to, by its
// kubernetes.io/hostname label matching the host's inspected hostname, and
// gets the machine's providerID. The host status is written here: the Bare
// Metal Operator's test mode inspects no hostname.
func TestNodeFoundByHostname(t *testing.T) {
	g := NewWithT(t)
	ns := testNamespace(t, "tenant-hostname")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	workloadEnv := testenv.Start(t, testenv.Options{Scheme: scheme})
	startControllers(t, mgmt, scheme)
	mgmt.GrantInNamespace(t, ns, "nobody")

	cluster := workloadCluster{namespace: ns, name: "cluster-a", noCloudProvider: true}
	cluster.create(t, mgmt.Client)
	createWorkloadKubeconfig(t, mgmt.Client, ns, "cluster-a", workloadEnv)
	availableHosts(t, mgmt.Client, ns, "host", 1)
	m3m := cluster.machine(t, mgmt.Client, "worker-0", nil)
	host := hostOf(t, mgmt.Client, ns, m3m)
	setHostState(t, mgmt.Client, host, bmov1alpha1.StateProvisioned) // hardware hostname = host name

	// Another Node, of another host, must not be taken for it.
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{
		corev1.LabelHostname: host.Name, hostpool.HostUIDLabel: "someone-else"}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-by-hostname", Labels: map[string]string{
		corev1.LabelHostname: host.Name}}}
	g.Expect(workloadEnv.Client.Create(ctx, other)).To(Succeed())
	g.Expect(workloadEnv.Client.Create(ctx, node)).To(Succeed())
	want := hostbinding.ProviderID(client.ObjectKeyFromObject(host), m3m)
	g.Eventually(func() (string, error) {
		err := workloadEnv.Client.Get(ctx, client.ObjectKeyFromObject(node), node)
		return node.Spec.ProviderID, err
	}).WithTimeout(60*time.Second).Should(Equal(want), "the Node is found by its hostname")
	g.Expect(workloadEnv.Client.Get(ctx, client.ObjectKeyFromObject(other), other)).To(Succeed())
	g.Expect(other.Spec.ProviderID).To(BeEmpty(), "a Node labelled for another host is not the machine's")
	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3m), m3m)).To(Succeed())
		g.Expect(m3m.Spec.ProviderID).To(Equal(want))
		g.Expect(m3m.Status.LastUpdated).NotTo(BeNil(), "status.lastUpdated is written as upstream does")
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// TestLabelSyncThroughIdentity: labels of a pool's host under a prefix the
// Metal3Cluster lists in metal3.io/metal3-label-sync-prefixes reach the
// Node of the machine using the host, read through the tenant's identity;
// removed from the host, they leave the Node; labels outside the prefixes
// are never touched.
func TestLabelSyncThroughIdentity(t *testing.T) {
	g := NewWithT(t)
	nsTenant, nsPool := testNamespace(t, "tenant-labels"), testNamespace(t, "pool-labels")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, noHosts)
	pool := poolCluster(t, scheme, 0)
	workloadEnv := testenv.Start(t, testenv.Options{Scheme: scheme})
	mgmt.GrantInNamespace(t, nsTenant, "nobody")
	pool.GrantInNamespace(t, nsPool, "nobody")
	startBMOWatching(t, pool, nsPool)
	startControllers(t, mgmt, scheme)

	cluster := workloadCluster{namespace: nsTenant, name: "cluster-a", noCloudProvider: true,
		identityRef: poolIdentity(t, mgmt, pool, nsTenant, nsPool, "pool-kubeconfig")}
	cluster.create(t, mgmt.Client)
	m3c := &infrav1.Metal3Cluster{ObjectMeta: metav1ObjectMeta(nsTenant, "cluster-a")}
	update(t, mgmt.Client, m3c, func() {
		m3c.Annotations = map[string]string{workload.LabelSyncPrefixesAnnotation: "example.com, team.example.org"}
	})
	createWorkloadKubeconfig(t, mgmt.Client, nsTenant, "cluster-a", workloadEnv)
	enrolHosts(t, pool.Client, nsPool, "host", 1)
	m3m := cluster.machine(t, mgmt.Client, "worker-0", nil)
	host := hostOf(t, pool.Client, nsPool, m3m)
	waitHostState(t, pool.Client, host, bmov1alpha1.StateProvisioned)

	// The node boots and registers; someone labels it outside the prefixes.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-0", Labels: map[string]string{
		hostpool.HostUIDLabel: string(host.UID), "other.io/zone": "z1", "example.com.evil/rack": "keep"}}}
	g.Expect(workloadEnv.Client.Create(ctx, node)).To(Succeed())
	nodeLabels := func(g Gomega) map[string]string {
		g.Expect(workloadEnv.Client.Get(ctx, client.ObjectKeyFromObject(node), node)).To(Succeed())
		return node.Labels
	}

	update(t, pool.Client, host, func() {
		host.Labels["example.com/rack"] = "r1"
		host.Labels["team.example.org/owner"] = "db"
		host.Labels["other.io/zone"] = "z9"
	})
	g.Eventually(func(g Gomega) {
		labels := nodeLabels(g)
		g.Expect(labels).To(HaveKeyWithValue("example.com/rack", "r1"))
		g.Expect(labels).To(HaveKeyWithValue("team.example.org/owner", "db"))
	}).WithTimeout(60*time.Second).Should(Succeed(), "the host's labels under the prefixes reach the Node")

	update(t, pool.Client, host, func() { delete(host.Labels, "example.com/rack") })
	g.Eventually(func(g Gomega) {
		g.Expect(nodeLabels(g)).NotTo(HaveKey("example.com/rack"))
	}).WithTimeout(60*time.Second).Should(Succeed(), "a label removed from the host leaves the Node")
	g.Consistently(func(g Gomega) {
		labels := nodeLabels(g)
		g.Expect(labels).To(HaveKeyWithValue("other.io/zone", "z1"), "outside the prefixes: never changed")
		g.Expect(labels).To(HaveKeyWithValue("example.com.evil/rack", "keep"), "a prefix is matched whole")
		g.Expect(labels).To(HaveKeyWithValue("team.example.org/owner", "db"))
	}).WithTimeout(3 * time.Second).Should(Succeed())
}

// machineDeployment creates a MachineDeployment named name of cluster, for
// machines to belong to (no Cluster API controller runs here).
func machineDeployment(t *testing.T, c client.Client, namespace, cluster, name string) {
	t.Helper()
	md := &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: cluster,
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{clusterv1.MachineDeploymentNameLabel: name}},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: map[string]string{clusterv1.MachineDeploymentNameLabel: name}},
				Spec: clusterv1.MachineSpec{
					ClusterName: cluster,
					Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To("bootstrap")},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: infrav1.GroupVersion.Group, Kind: "Metal3MachineTemplate", Name: name,
					},
				},
			},
		},
	}
	if err := c.Create(context.Background(), md); err != nil {
		t.Fatal(err)
	}
}

// machineTemplate creates a Metal3MachineTemplate.
func machineTemplate(t *testing.T, c client.Client, namespace, name string, nodeReuse bool) {
	t.Helper()
	template := &infrav1.Metal3MachineTemplate{
		ObjectMeta: metav1ObjectMeta(namespace, name),
		Spec: infrav1.Metal3MachineTemplateSpec{NodeReuse: ptr.To(nodeReuse), Template: infrav1.Metal3MachineTemplateResource{
			Spec: infrav1.Metal3MachineSpec{Image: infrav1.Image{URL: "http://172.22.0.1/images/node.qcow2",
				Checksum: ptr.To("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"), ChecksumType: "sha256"}},
		}},
	}
	if err := c.Create(context.Background(), template); err != nil {
		t.Fatal(err)
	}
}

// ofDeployment makes a machine one of MachineDeployment md's, cloned from
// template, as Cluster API would.
func ofDeployment(md, template string) func(*infrav1.Metal3Machine) {
	return func(m *infrav1.Metal3Machine) {
		m.Labels[clusterv1.MachineDeploymentNameLabel] = md
		m.Annotations = map[string]string{clusterv1.TemplateClonedFromNameAnnotation: template}
	}
}

// TestNodeReuseKeepsHostForOwner: a host released by a machine of a
// MachineDeployment whose template has nodeReuse is kept for that
// MachineDeployment (not the template): another tenant's MachineDeployment
// of the same name sharing the pool does not get it, the deployment's next
// machine of a new template (a rolling upgrade) does.
func TestNodeReuseKeepsHostForOwner(t *testing.T) {
	g := NewWithT(t)
	nsA, nsB, nsPool := testNamespace(t, "tenant-reuse-a"), testNamespace(t, "tenant-reuse-b"), testNamespace(t, "pool-reuse")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, noHosts)
	pool := poolCluster(t, scheme, 1)
	for _, ns := range []string{nsA, nsB} {
		mgmt.GrantInNamespace(t, ns, "nobody")
	}
	pool.GrantInNamespace(t, nsPool, "nobody")
	startBMOWatching(t, pool, nsPool)
	startControllers(t, mgmt, scheme)
	enrolHosts(t, pool.Client, nsPool, "host", 1)

	clusters := map[string]workloadCluster{}
	for _, ns := range []string{nsA, nsB} {
		clusters[ns] = workloadCluster{namespace: ns, name: "cluster-a", identityRef: poolIdentity(t, mgmt, pool, ns, nsPool, "pool-kubeconfig")}
		clusters[ns].create(t, mgmt.Client)
		machineDeployment(t, mgmt.Client, ns, "cluster-a", "workers")
		machineTemplate(t, mgmt.Client, ns, "workers-v1", true)
		machineTemplate(t, mgmt.Client, ns, "workers-v2", false)
	}

	first := clusters[nsA].machine(t, mgmt.Client, "workers-v1-0", ofDeployment("workers", "workers-v1"))
	host := hostOf(t, pool.Client, nsPool, first)
	waitHostState(t, pool.Client, host, bmov1alpha1.StateProvisioned)

	// Rolling upgrade: the old machine goes, its host is released for the
	// deployment, the Bare Metal Operator cleans it.
	g.Expect(mgmt.Client.Delete(ctx, first)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(pool.Client.Get(ctx, client.ObjectKeyFromObject(host), host)).To(Succeed())
		g.Expect(host.Spec.ConsumerRef).To(BeNil())
		g.Expect(host.Labels).To(HaveKeyWithValue(hostbinding.NodeReuseLabel, "md-workers"))
		g.Expect(host.Annotations).To(HaveKeyWithValue(hostbinding.NodeReuseClusterAnnotation, nsA+"/cluster-a"))
		g.Expect(host.Spec.Online).To(BeFalse(), "released hosts are powered off without fast track")
	}).WithTimeout(2*time.Minute).Should(Succeed(), "the host is released and kept for MachineDeployment workers")
	waitHostState(t, pool.Client, host, bmov1alpha1.StateAvailable)

	// Another tenant's MachineDeployment of the same name does not get it.
	intruder := clusters[nsB].machine(t, mgmt.Client, "workers-v1-0", ofDeployment("workers", "workers-v1"))
	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(intruder), intruder)).To(Succeed())
		cond := conditions.Get(intruder, infrav1.HostAssociatedCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(infrav1.NoAvailableHostReason))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// The deployment's next machine, of the new template, gets it back.
	next := clusters[nsA].machine(t, mgmt.Client, "workers-v2-0", ofDeployment("workers", "workers-v2"))
	g.Expect(hostOf(t, pool.Client, nsPool, next).Name).To(Equal(host.Name))
	g.Expect(pool.Client.Get(ctx, client.ObjectKeyFromObject(host), host)).To(Succeed())
	g.Expect(host.Labels).NotTo(HaveKey(hostbinding.NodeReuseLabel), "taken back: no longer kept")
	g.Consistently(func(g Gomega) {
		hosts := consumedHosts(g, pool.Client, nsPool)
		g.Expect(hosts).NotTo(HaveKey(nsB + "/workers-v1-0"))
	}).WithTimeout(3 * time.Second).Should(Succeed())
}

// TestMoveBlockedWhileMidFlight: a machine whose host is claimed but not
// provisioned, and its Metal3Data whose address is not allocated yet,
// carry clusterctl's block-move annotation, so clusterctl move waits. Once
// the Cluster is paused (clusterctl's first step) the machine pauses its
// host for the Bare Metal Operator too and both let move go on; unpaused
// they hold it again until done. The same machine shows host-name-based IP
// preallocation: with --enable-bmh-name-based-preallocation the claim is
// named <host>-<pool>, so the pool's preAllocations entry for the host is
// the address rendered into its metadata.
func TestMoveBlockedWhileMidFlight(t *testing.T) {
	g := NewWithT(t)
	nsTenant, nsPool := testNamespace(t, "tenant-move"), testNamespace(t, "pool-move")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := ipamManagementCluster(t, scheme)
	pool := poolCluster(t, scheme, 0)
	mgmt.GrantInNamespace(t, nsTenant, "nobody")
	pool.GrantInNamespace(t, nsPool, "nobody")
	startBMOWatching(t, pool, nsPool)
	startControllersWith(t, mgmt, scheme, fixtureOptions{remote: testRemoteOptions(), hostNameIPClaims: true})
	enrolHosts(t, pool.Client, nsPool, "host", 1)

	cluster := workloadCluster{namespace: nsTenant, name: "cluster-a", identityRef: poolIdentity(t, mgmt, pool, nsTenant, nsPool, "pool-kubeconfig")}
	cluster.create(t, mgmt.Client)
	g.Expect(mgmt.Client.Create(ctx, &infrav1.Metal3DataTemplate{
		ObjectMeta: metav1ObjectMeta(nsTenant, "workers"),
		Spec: infrav1.Metal3DataTemplateSpec{ClusterName: "cluster-a", MetaData: &infrav1.MetaData{
			IPAddressesFromPool: []infrav1.FromPool{{Key: "ip", APIGroup: metal3Pool.apiGroup, Kind: metal3Pool.kind, Name: "prealloc"}},
		}},
	})).To(Succeed())
	m3m := cluster.machine(t, mgmt.Client, "worker-0", func(m *infrav1.Metal3Machine) {
		m.Spec.DataTemplate = &infrav1.Metal3ObjectRef{Name: "workers"}
	})
	host := hostOf(t, pool.Client, nsPool, m3m)
	data := &infrav1.Metal3Data{ObjectMeta: metav1ObjectMeta(nsTenant, "workers-0")}
	blocked := func(g Gomega, obj client.Object) bool {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		_, has := obj.GetAnnotations()["clusterctl.cluster.x-k8s.io/block-move"]
		return has
	}
	g.Eventually(func(g Gomega) {
		g.Expect(blocked(g, m3m)).To(BeTrue(), "the machine's host is claimed, not provisioned")
		g.Expect(blocked(g, data)).To(BeTrue(), "the data waits for its address")
	}).WithTimeout(60*time.Second).Should(Succeed(), "mid-flight objects hold clusterctl move")

	// clusterctl move pauses the Cluster, then waits for the annotations.
	capiCluster := &clusterv1.Cluster{ObjectMeta: metav1ObjectMeta(nsTenant, "cluster-a")}
	update(t, mgmt.Client, capiCluster, func() { capiCluster.Spec.Paused = ptr.To(true) })
	g.Eventually(func(g Gomega) {
		g.Expect(pool.Client.Get(ctx, client.ObjectKeyFromObject(host), host)).To(Succeed())
		g.Expect(host.Annotations).To(HaveKey(bmov1alpha1.PausedAnnotation), "BMO leaves the host alone")
		g.Expect(blocked(g, m3m)).To(BeFalse())
		g.Expect(blocked(g, data)).To(BeFalse())
	}).WithTimeout(60*time.Second).Should(Succeed(), "paused, the frozen objects let move go on")

	update(t, mgmt.Client, capiCluster, func() { capiCluster.Spec.Paused = ptr.To(false) })
	g.Eventually(func(g Gomega) {
		g.Expect(blocked(g, m3m)).To(BeTrue())
		g.Expect(blocked(g, data)).To(BeTrue())
	}).WithTimeout(60*time.Second).Should(Succeed(), "unpaused and still mid-flight: move is held again")

	// The pool appears, with an address kept for the host by name.
	claimName := host.Name + "-prealloc"
	g.Eventually(func(g Gomega) {
		claims := &ipamv1.IPClaimList{}
		g.Expect(mgmt.Client.List(ctx, claims, client.InNamespace(nsTenant))).To(Succeed())
		g.Expect(claims.Items).To(ContainElement(HaveField("Name", claimName)))
	}).WithTimeout(30*time.Second).Should(Succeed(), "the IP claim is named after the host")
	start, end, kept := ipamv1.IPAddressStr("192.168.111.50"), ipamv1.IPAddressStr("192.168.111.90"), ipamv1.IPAddressStr("192.168.111.77")
	g.Expect(mgmt.Client.Create(ctx, &ipamv1.IPPool{
		ObjectMeta: metav1ObjectMeta(nsTenant, "prealloc"),
		Spec: ipamv1.IPPoolSpec{NamePrefix: "prealloc", Prefix: 24, Pools: []ipamv1.Pool{{Start: &start, End: &end}},
			PreAllocations: map[string]ipamv1.IPAddressStr{claimName: kept}},
	})).To(Succeed())
	waitHostState(t, pool.Client, host, bmov1alpha1.StateProvisioned)
	g.Expect(host.Spec.MetaData).NotTo(BeNil())
	metaData := &corev1.Secret{}
	g.Expect(pool.Client.Get(ctx, client.ObjectKey{Namespace: host.Spec.MetaData.Namespace, Name: host.Spec.MetaData.Name}, metaData)).To(Succeed())
	g.Expect(string(metaData.Data["metaData"])).To(ContainSubstring("ip: "+string(kept)), "the host's preallocated address")
	g.Eventually(func(g Gomega) {
		g.Expect(blocked(g, m3m)).To(BeFalse())
		g.Expect(blocked(g, data)).To(BeFalse())
	}).WithTimeout(60*time.Second).Should(Succeed(), "provisioned and rendered: nothing holds move")
}
