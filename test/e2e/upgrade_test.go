//go:build e2e

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

package e2e

import (
	"fmt"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// The upgrade of docs/upgrading-from-capm3.md, as a user of upstream CAPM3
// runs it: upstream v1.13.2 installed by `clusterctl init` from its own
// release (its CRDs, webhooks and RBAC from its config/), its manager run
// as its Deployment; a cluster of three machines provisioned through the
// real Bare Metal Operator, written in upstream's v1beta2 API, with a data
// template giving each machine an address of a Metal3 IPPool; then
// `clusterctl upgrade apply` to this tree's release and this tree's manager
// in place of upstream's, run as the upgraded Deployment.
var _ = Describe("clusterctl upgrade from upstream CAPM3", func() {
	It("keeps every host provisioned and every Machine Running, serves every object in v1beta1 and v1beta2, and scales, takes an identityRef and deletes afterwards", func() {
		const ns, name = "upgrade", "upgraded"
		t := GinkgoT()
		upstream := testenv.UpstreamCAPM3(t)
		repo := testenv.NewClusterctlRepository(t)
		repo.AddUpstreamCAPM3(t, upstream)

		By("clusterctl init --infrastructure metal3:" + upstream.Version + ", and upstream's manager run as its Deployment")
		mgmt := env.StartClusterctlManagement(t, "upgrade", repo, "metal3:"+upstream.Version)
		upstreamManager := mgmt.StartUpstreamCAPM3(t, upstream)
		proxy := framework.NewClusterProxy(mgmt.Name, mgmt.WriteKubeconfig(t), env.Scheme())
		DeferCleanup(func() { proxy.Dispose(ctx) })
		dumpOnFailure(mgmt, ns)
		c := &tenantCluster{proxy: proxy, namespace: ns, name: name, hosts: mgmt.Client, hostNamespaces: []string{ns}}

		By("Creating, in upstream's v1beta2 API, a cluster of a control-plane machine and two workers whose data template takes addresses from a Metal3 IPPool")
		Expect(env.CreateNamespace(ctx, mgmt.Client, ns)).To(Succeed())
		Expect(env.AddHosts(ctx, mgmt.Client, ns, "node", 3)).To(Succeed())
		createUpstreamCluster(mgmt, ns, name, 2)
		machines := waitClusterctlMachinesRunning(mgmt, ns, name, 3, resyncMachinesAwaitingNodes(mgmt, ns))
		machineNames := namesOf(machines)
		m3mHosts := metal3MachineHosts(mgmt.Client, ns)
		Expect(m3mHosts).To(HaveLen(3))
		var metaData map[string]string
		Eventually(func(g Gomega) {
			metaData = hostMetaData(g, mgmt.Client, ns)
			g.Expect(metaData).To(HaveLen(3))
			for host, data := range metaData {
				g.Expect(data).To(MatchRegexp(`ip: 192\.168\.70\.\d+`), "host %s's metadata holds its address from the pool", host)
			}
		}).Should(Succeed())

		By("Recording every state of every host, and watching every Machine")
		hosts := env.RecordHosts(t, mgmt.Env)
		for host, state := range hosts.Current() {
			Expect(state.State).To(Equal(bmov1alpha1.StateProvisioned), "host %s", host)
			Expect(state.Consumer).NotTo(BeEmpty(), "host %s", host)
		}
		upgradeMark := hosts.Mark()
		machinesWatch := watchMachinesRunning(mgmt.Client, ns, name, machineNames)

		By("clusterctl upgrade apply --infrastructure metal3:" + testenv.ClusterctlRelease)
		upstreamStopped := killWhenScaledDown(mgmt.Client, upstreamManager.Process)
		mgmt.UpgradeInfrastructure(t, upstream.Shipped(t, nil), "metal3:"+testenv.ClusterctlRelease)
		Eventually(upstreamStopped).Should(BeClosed(), "upstream's Deployment was scaled down and replaced")
		expectInventory(mgmt.Client, testenv.ClusterctlRelease)

		By("Running this tree's manager as the upgraded Deployment")
		providerStart := time.Now()
		mgmt.StartProvider(t)

		By("Waiting for this tree's manager to adopt the cluster and every machine with its host")
		Eventually(func(g Gomega) {
			m3c := &infrav1.Metal3Cluster{}
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m3c)).To(Succeed())
			g.Expect(m3c.Status.Identity).NotTo(BeNil(), "the Metal3Cluster is reconciled by this release")
			g.Expect(m3c.Status.Identity.Source).To(Equal(infrav1.IdentitySourceInCluster))
			m3ms := &infrav1.Metal3MachineList{}
			g.Expect(mgmt.Client.List(ctx, m3ms, client.InNamespace(ns))).To(Succeed())
			g.Expect(m3ms.Items).To(HaveLen(3))
			for i := range m3ms.Items {
				m3m := &m3ms.Items[i]
				g.Expect(m3m.Status.Identity).NotTo(BeNil(), "Metal3Machine %s is reconciled by this release", m3m.Name)
				g.Expect(m3m.Annotations).To(HaveKeyWithValue(infrav1.HostAnnotation, m3mHosts[m3m.Name]), "Metal3Machine %s keeps its host", m3m.Name)
				expectConditionTrue(g, m3m.Status.Conditions, infrav1.HostAssociatedCondition, "Metal3Machine "+m3m.Name)
				expectConditionTrue(g, m3m.Status.Conditions, infrav1.ReadyCondition, "Metal3Machine "+m3m.Name)
			}
		}, intervals("wait-machines-running")...).Should(Succeed())

		By("Reading every object of every kind of ours as v1beta1 and as v1beta2, and writing each back as v1beta1 without loss")
		expectServedInBothVersions(mgmt.Client, ns, map[string]int{
			"Metal3Cluster": 1, "Metal3Machine": 3, "Metal3MachineTemplate": 1,
			"Metal3DataTemplate": 1, "Metal3Data": 3, "Metal3DataClaim": 3,
		})

		By("Waiting for the CRD migration: every CRD observed, storing v1beta2 alone")
		expectCRDsMigrated(mgmt.Client)

		By("Checking that no host was deprovisioned or reprovisioned, and every Machine stayed Running, through the upgrade")
		Expect(describeStates(hosts.Since(upgradeMark))).To(BeEmpty(), "a host changed during the upgrade")
		Expect(machinesWatch()).To(BeEmpty(), "a Machine was not Running during the upgrade")
		Expect(waitClusterctlMachinesRunning(mgmt, ns, name, 3)).To(HaveLen(3))
		Expect(hostMetaData(Default, mgmt.Client, ns)).To(Equal(metaData), "every host keeps its metadata and address")

		By("Scaling the workers down by one: one host deprovisioned and released")
		guard := notForbidden(mgmt.AuditLogPath, providerStart)
		scaleMark := hosts.Mark()
		scaleWorkers(mgmt.Client, ns, name, 1)
		waitClusterctlMachinesRunning(mgmt, ns, name, 2, guard)
		var released string
		Eventually(func(g Gomega) {
			guard(g)
			g.Expect(c.boundHosts(g)).To(HaveLen(2))
			released = onlyChangedHost(g, hosts.Since(scaleMark))
			g.Expect(hosts.Current()[released].State).To(Equal(bmov1alpha1.StateAvailable), "host %s", released)
			g.Expect(hosts.Current()[released].Consumer).To(BeEmpty(), "host %s", released)
		}, intervals("wait-hosts-available")...).Should(Succeed())
		Expect(statesOf(hosts.Since(scaleMark))).To(ContainElement(bmov1alpha1.StateDeprovisioning), "host %s was deprovisioned", released)

		By("Scaling the workers up by one: a host provisioned")
		scaleMark = hosts.Mark()
		scaleWorkers(mgmt.Client, ns, name, 2)
		machines = waitClusterctlMachinesRunning(mgmt, ns, name, 3, guard)
		Eventually(func(g Gomega) {
			guard(g)
			g.Expect(c.boundHosts(g)).To(HaveLen(3))
			provisioned := onlyChangedHost(g, hosts.Since(scaleMark))
			g.Expect(hosts.Current()[provisioned].State).To(Equal(bmov1alpha1.StateProvisioned), "host %s", provisioned)
			g.Expect(statesOf(hosts.Since(scaleMark))).To(ContainElement(bmov1alpha1.StateProvisioning), "host %s was provisioned", provisioned)
		}, intervals("wait-machines-running")...).Should(Succeed())

		By("Adding an identityRef to the Metal3Cluster, for a kubeconfig of the same pool: every machine keeps its host")
		machineNames = namesOf(machines)
		m3mHosts = metal3MachineHosts(mgmt.Client, ns)
		identityMark := hosts.Mark()
		machinesWatch = watchMachinesRunning(mgmt.Client, ns, name, machineNames)
		kubeconfig := mgmt.ServiceAccountKubeconfig(t, ns, name+"-pool", 24*time.Hour, testenv.HostProviderRules()...)
		Expect(mgmt.Client.Create(ctx, testenv.IdentitySecret(ns, name+"-pool-identity", kubeconfig))).To(Succeed())
		m3c := &unstructured.Unstructured{}
		m3c.SetAPIVersion(infrav1.GroupVersion.String())
		m3c.SetKind("Metal3Cluster")
		m3c.SetNamespace(ns)
		m3c.SetName(name)
		Expect(mgmt.Client.Patch(ctx, m3c, client.RawPatch("application/merge-patch+json",
			[]byte(`{"spec":{"identityRef":{"name":"`+name+`-pool-identity"}}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			guard(g)
			cluster := &infrav1.Metal3Cluster{}
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cluster)).To(Succeed())
			g.Expect(cluster.Status.Identity).NotTo(BeNil())
			g.Expect(cluster.Status.Identity.Source).To(Equal(infrav1.IdentitySourceSecret))
			g.Expect(cluster.Status.Identity.SecretName).To(Equal(name + "-pool-identity"))
			expectConditionTrue(g, cluster.Status.Conditions, infrav1.IdentityReadyCondition, "Metal3Cluster")
			m3ms := &infrav1.Metal3MachineList{}
			g.Expect(mgmt.Client.List(ctx, m3ms, client.InNamespace(ns))).To(Succeed())
			g.Expect(m3ms.Items).To(HaveLen(3))
			for i := range m3ms.Items {
				m3m := &m3ms.Items[i]
				g.Expect(m3m.Status.Identity).NotTo(BeNil())
				g.Expect(m3m.Status.Identity.Source).To(Equal(infrav1.IdentitySourceSecret), "Metal3Machine %s reaches its host through the identity", m3m.Name)
				g.Expect(m3m.Annotations).To(HaveKeyWithValue(infrav1.HostAnnotation, m3mHosts[m3m.Name]), "Metal3Machine %s keeps its host", m3m.Name)
				expectConditionTrue(g, m3m.Status.Conditions, infrav1.HostAssociatedCondition, "Metal3Machine "+m3m.Name)
			}
		}, intervals("wait-machines-running")...).Should(Succeed())
		Expect(describeStates(hosts.Since(identityMark))).To(BeEmpty(), "a host changed when the cluster took an identity")
		Expect(machinesWatch()).To(BeEmpty(), "a Machine was not Running when the cluster took an identity")

		By("Deleting the cluster: every host released, nothing of ours left")
		c.deleteAndWaitReleased()
		expectNothingLeft(mgmt.Client, ns)

		By("Checking that this release's manager was refused nothing (its RBAC as the upgrade installed it)")
		forbidden, err := forbiddenSince(mgmt.AuditLogPath, testenv.ProviderUser, providerStart)
		Expect(err).NotTo(HaveOccurred())
		Expect(forbidden).To(BeEmpty(), "requests of the provider's ServiceAccount answered 403 Forbidden after the upgrade")
	})
})

// createUpstreamCluster creates, as a user of upstream CAPM3 writes them in
// its v1beta2 API (unstructured: nothing of this tree's API), a cluster of
// one control-plane Machine and a MachineDeployment of workers, every
// machine with its metadata from one Metal3DataTemplate: the machine's
// name and an address of a Metal3 IPPool. The control plane is a plain
// Machine with the control-plane label, as in env.CreateCluster: a
// KubeadmControlPlane needs a live control plane.
func createUpstreamCluster(mgmt *env.ClusterctlManagement, ns, name string, workers int32) {
	GinkgoHelper()
	Expect(mgmt.CreateWorkloadKubeconfig(ctx, mgmt.Workload, ns, name)).To(Succeed())
	Expect(mgmt.Client.Create(ctx, ipPool("ipam.metal3.io", "v1alpha1", "IPPool", ns, name+"-pool", map[string]any{
		"namePrefix": name + "-pool", "prefix": int64(24), "gateway": "192.168.70.1",
		"pools": []any{map[string]any{"start": "192.168.70.10", "end": "192.168.70.20"}},
	}))).To(Succeed())
	image := map[string]any{
		"url": "http://172.22.0.1/images/node.qcow2", "checksum": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"checksumType": "sha256", "diskFormat": "qcow2",
	}
	machineSpec := func() map[string]any {
		return map[string]any{"image": image, "dataTemplate": map[string]any{"name": name + "-nodes"}}
	}
	clusterLabel := map[string]any{"cluster.x-k8s.io/cluster-name": name}
	controlPlaneLabels := map[string]any{"cluster.x-k8s.io/cluster-name": name, "cluster.x-k8s.io/control-plane": ""}
	infraRef := func(kind, ref string) map[string]any {
		return map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": kind, "name": ref}
	}
	objects := []map[string]any{
		{
			"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": name + "-bootstrap", "labels": clusterLabel},
			"data":     map[string]any{"value": "I2Nsb3VkLWNvbmZpZwo=", "format": "Y2xvdWQtY29uZmln"},
		},
		{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"infrastructureRef": infraRef("Metal3Cluster", name)},
		},
		{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Metal3Cluster",
			"metadata": map[string]any{"name": name, "labels": clusterLabel},
			"spec": map[string]any{
				"controlPlaneEndpoint": map[string]any{"host": "192.168.111.249", "port": int64(6443)},
				"cloudProviderEnabled": false,
			},
		},
		{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Metal3DataTemplate",
			"metadata": map[string]any{"name": name + "-nodes"},
			"spec": map[string]any{
				"clusterName": name,
				"metaData": map[string]any{
					"objectNames":         []any{map[string]any{"key": "name", "object": "machine"}},
					"ipAddressesFromPool": []any{map[string]any{"key": "ip", "name": name + "-pool"}},
				},
			},
		},
		{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Metal3MachineTemplate",
			"metadata": map[string]any{"name": name + "-workers"},
			"spec":     map[string]any{"template": map[string]any{"spec": machineSpec()}},
		},
		{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Metal3Machine",
			"metadata": map[string]any{"name": name + "-control-plane-0", "labels": controlPlaneLabels},
			"spec":     machineSpec(),
		},
		{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
			"metadata": map[string]any{"name": name + "-control-plane-0", "labels": controlPlaneLabels},
			"spec": map[string]any{
				"clusterName":       name,
				"bootstrap":         map[string]any{"dataSecretName": name + "-bootstrap"},
				"infrastructureRef": infraRef("Metal3Machine", name+"-control-plane-0"),
			},
		},
		{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
			"metadata": map[string]any{"name": name + "-workers"},
			"spec": map[string]any{
				"clusterName": name,
				"replicas":    int64(workers),
				"selector":    map[string]any{"matchLabels": map[string]any{"nodepool": name + "-workers"}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"nodepool": name + "-workers"}},
					"spec": map[string]any{
						"clusterName":       name,
						"bootstrap":         map[string]any{"dataSecretName": name + "-bootstrap"},
						"infrastructureRef": infraRef("Metal3MachineTemplate", name+"-workers"),
					},
				},
			},
		},
	}
	for _, object := range objects {
		obj := &unstructured.Unstructured{Object: object}
		obj.SetNamespace(ns)
		Expect(mgmt.Client.Create(ctx, obj)).To(Succeed(), "create %s %s", obj.GetKind(), obj.GetName())
	}
}

// expectInventory checks that clusterctl upgraded the provider: its
// inventory records version, and the Deployment runs the release's image.
func expectInventory(c client.Client, version string) {
	GinkgoHelper()
	providers := &clusterctlv1.ProviderList{}
	Expect(c.List(ctx, providers)).To(Succeed())
	var found bool
	for _, p := range providers.Items {
		if p.Name == "infrastructure-metal3" {
			Expect(p.Version).To(Equal(version), "clusterctl's inventory")
			Expect(p.Namespace).To(Equal("capm3-system"))
			found = true
		}
	}
	Expect(found).To(BeTrue(), "clusterctl's inventory lists the provider")
	deployment := &appsv1.Deployment{}
	Expect(c.Get(ctx, client.ObjectKey{Namespace: "capm3-system", Name: "capm3-controller-manager"}, deployment)).To(Succeed())
	Expect(deployment.Spec.Template.Spec.Containers[0].Image).To(HaveSuffix(":"+version), "the upgraded Deployment runs the release's image")
}

// hostMetaData is the metadata every bound host of ns is given, by host.
func hostMetaData(g Gomega, c client.Client, ns string) map[string]string {
	hosts := &bmov1alpha1.BareMetalHostList{}
	g.Expect(c.List(ctx, hosts, client.InNamespace(ns))).To(Succeed())
	out := map[string]string{}
	for _, h := range hosts.Items {
		if h.Spec.ConsumerRef == nil {
			continue
		}
		g.Expect(h.Spec.MetaData).NotTo(BeNil(), "host %s has metadata", h.Name)
		secret := &corev1.Secret{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: h.Spec.MetaData.Name}, secret)).To(Succeed())
		out[h.Name] = string(secret.Data["metaData"])
	}
	return out
}

// onlyChangedHost is the one host that states are about.
func onlyChangedHost(g Gomega, states []env.HostState) string {
	changed := map[string]bool{}
	for _, s := range states {
		changed[s.Host] = true
	}
	g.Expect(changed).To(HaveLen(1), "exactly one host changed: %v", states)
	for host := range changed {
		return host
	}
	return ""
}

func statesOf(states []env.HostState) []bmov1alpha1.ProvisioningState {
	out := make([]bmov1alpha1.ProvisioningState, 0, len(states))
	for _, s := range states {
		out = append(out, s.State)
	}
	return out
}

// describeStates is states, one a line, for failure messages.
func describeStates(states []env.HostState) string {
	out := ""
	for _, s := range states {
		out += fmt.Sprintf("%s %s\n", s.Seen.Format("15:04:05.000"), s)
	}
	return out
}
