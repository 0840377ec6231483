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
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// TestPauseAndTemplatePropagation: pausing the Cluster pauses its hosts with
// the provider's own annotation, unpausing removes only that one; a
// template's automatedCleaningMode reaches its machines and their hosts.
func TestPauseAndTemplatePropagation(t *testing.T) {
	g := NewWithT(t)
	nsTenantA := testNamespace(t, "tenant-a")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	startControllers(t, mgmt, scheme)
	mgmt.GrantInNamespace(t, nsTenantA, "nobody")
	cluster := workloadCluster{namespace: nsTenantA, name: "cluster-a"}
	cluster.create(t, mgmt.Client)
	availableHosts(t, mgmt.Client, nsTenantA, "host", 2)
	g.Expect(mgmt.Client.Create(ctx, &infrav1.Metal3MachineTemplate{
		ObjectMeta: metav1ObjectMeta(nsTenantA, "workers"),
		Spec: infrav1.Metal3MachineTemplateSpec{Template: infrav1.Metal3MachineTemplateResource{Spec: infrav1.Metal3MachineSpec{
			Image: infrav1.Image{URL: "http://172.22.0.1/images/node.qcow2", Checksum: ptr.To("http://172.22.0.1/images/node.qcow2.sha256sum")},
		}}},
	})).To(Succeed())
	workers := []string{"worker-0", "worker-1"}
	for _, name := range workers {
		cluster.machine(t, mgmt.Client, name, func(m *infrav1.Metal3Machine) {
			m.Annotations = map[string]string{clusterv1.TemplateClonedFromNameAnnotation: "workers"}
		})
	}
	hostOf := func(g Gomega, machine string) bmov1alpha1.BareMetalHost {
		hosts := consumedHosts(g, mgmt.Client, nsTenantA)
		g.Expect(hosts).To(HaveKey(nsTenantA + "/" + machine))
		return hosts[nsTenantA+"/"+machine]
	}
	g.Eventually(func(g Gomega) {
		for _, name := range workers {
			hostOf(g, name)
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// An operator pauses worker-1's host by hand.
	operatorPaused := hostOf(g, "worker-1")
	update(t, mgmt.Client, &operatorPaused, func() {
		if operatorPaused.Annotations == nil {
			operatorPaused.Annotations = map[string]string{}
		}
		operatorPaused.Annotations[bmov1alpha1.PausedAnnotation] = "maintenance"
	})

	setPaused := func(paused bool) {
		c := &clusterv1.Cluster{ObjectMeta: metav1ObjectMeta(nsTenantA, "cluster-a")}
		update(t, mgmt.Client, c, func() { c.Spec.Paused = &paused })
	}
	setPaused(true)
	g.Eventually(func(g Gomega) {
		g.Expect(hostOf(g, "worker-0").Annotations).To(HaveKeyWithValue(bmov1alpha1.PausedAnnotation, "metal3.io/capm3"))
		g.Expect(hostOf(g, "worker-1").Annotations).To(HaveKeyWithValue(bmov1alpha1.PausedAnnotation, "maintenance"))
	}).WithTimeout(30*time.Second).Should(Succeed(), "a paused cluster's hosts are paused")

	setPaused(false)
	g.Eventually(func(g Gomega) {
		g.Expect(hostOf(g, "worker-0").Annotations).NotTo(HaveKey(bmov1alpha1.PausedAnnotation))
	}).WithTimeout(30*time.Second).Should(Succeed(), "our pause is removed")
	g.Consistently(func(g Gomega) {
		g.Expect(hostOf(g, "worker-1").Annotations).To(HaveKeyWithValue(bmov1alpha1.PausedAnnotation, "maintenance"))
	}).WithTimeout(3*time.Second).Should(Succeed(), "an operator's pause stays")

	template := &infrav1.Metal3MachineTemplate{ObjectMeta: metav1ObjectMeta(nsTenantA, "workers")}
	update(t, mgmt.Client, template, func() { template.Spec.Template.Spec.AutomatedCleaningMode = "disabled" })
	g.Eventually(func(g Gomega) {
		for _, name := range workers {
			m := &infrav1.Metal3Machine{}
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: nsTenantA, Name: name}, m)).To(Succeed())
			g.Expect(m.Spec.AutomatedCleaningMode).To(Equal("disabled"))
		}
		g.Expect(hostOf(g, "worker-0").Spec.AutomatedCleaningMode).To(Equal(bmov1alpha1.CleaningModeDisabled))
	}).WithTimeout(30*time.Second).Should(Succeed(), "automatedCleaningMode flows template → machines → hosts")
}

// TestNodeReuse: a machine of a MachineDeployment whose template has
// nodeReuse leaves its host labelled for the MachineDeployment, and the
// deployment's next machine takes that host before any other available one.
func TestNodeReuse(t *testing.T) {
	g := NewWithT(t)
	nsTenantA := testNamespace(t, "tenant-a")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	startControllers(t, mgmt, scheme)
	mgmt.GrantInNamespace(t, nsTenantA, "nobody")
	cluster := workloadCluster{namespace: nsTenantA, name: "cluster-a"}
	cluster.create(t, mgmt.Client)
	g.Expect(mgmt.Client.Create(ctx, &infrav1.Metal3MachineTemplate{
		ObjectMeta: metav1ObjectMeta(nsTenantA, "workers"),
		Spec: infrav1.Metal3MachineTemplateSpec{NodeReuse: ptr.To(true), Template: infrav1.Metal3MachineTemplateResource{Spec: infrav1.Metal3MachineSpec{
			Image: infrav1.Image{URL: "http://172.22.0.1/images/node.qcow2", Checksum: ptr.To("http://172.22.0.1/images/node.qcow2.sha256sum")},
		}}},
	})).To(Succeed())
	machineDeployment(t, mgmt.Client, nsTenantA, "cluster-a", "workers")
	fromTemplate := ofDeployment("workers", "workers")
	availableHosts(t, mgmt.Client, nsTenantA, "host", 1)
	first := cluster.machine(t, mgmt.Client, "worker-0", fromTemplate)
	var used bmov1alpha1.BareMetalHost
	g.Eventually(func(g Gomega) {
		hosts := consumedHosts(g, mgmt.Client, nsTenantA)
		g.Expect(hosts).To(HaveKey(nsTenantA + "/worker-0"))
		used = hosts[nsTenantA+"/worker-0"]
	}).WithTimeout(30 * time.Second).Should(Succeed())
	setHostState(t, mgmt.Client, &used, bmov1alpha1.StateProvisioned)

	// Scale down: the machine goes, the host is deprovisioned and kept.
	g.Expect(mgmt.Client.Delete(ctx, first)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(&used), &used)).To(Succeed())
		g.Expect(used.Spec.Image).To(BeNil())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	setHostState(t, mgmt.Client, &used, bmov1alpha1.StateAvailable)
	g.Eventually(func(g Gomega) {
		g.Expect(consumedHosts(g, mgmt.Client, nsTenantA)).To(BeEmpty())
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(&used), &used)).To(Succeed())
		g.Expect(used.Labels).To(HaveKeyWithValue("infrastructure.cluster.x-k8s.io/node-reuse", "md-workers"))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// Scale up with other hosts available: the kept host is taken first.
	availableHosts(t, mgmt.Client, nsTenantA, "fresh", 3)
	cluster.machine(t, mgmt.Client, "worker-1", fromTemplate)
	g.Eventually(func(g Gomega) string {
		return consumedHosts(g, mgmt.Client, nsTenantA)[nsTenantA+"/worker-1"].Name
	}).WithTimeout(30*time.Second).Should(Equal(used.Name), "the template's next machine reuses the host")
}
