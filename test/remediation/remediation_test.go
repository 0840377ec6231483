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

// Package remediation tests the Metal3Remediation controller end to end, on
// the e2e environment (test/e2e/env): Cluster API's MachineSet,
// MachineDeployment and MachineHealthCheck controllers, the provider built
// from this tree, the real Bare Metal Operator cycling the hosts' power,
// and a kubelet stand-in whose kubelets the tests wedge or break.
package remediation

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/remediation"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
)

// The webhook's shortest timeout: a machine still unhealthy this long
// after a reboot is tried again or given up on.
const rebootTimeout = 100 * time.Second

// TestRemediation runs the scenarios at once in one environment: a reboot
// that heals a machine whose hosts are in a remote pool, its Node fenced
// with the out-of-service taint while pods and a volume attachment are
// left on it, the same through a HostClaim (HostClaim mode), and a machine
// that no reboot heals, in-cluster, which Cluster API replaces. The
// workload server reports Kubernetes 1.28 or later, so every scenario
// takes the out-of-service flow; the Node's deletion, for older clusters,
// is tested in baremetal/remediation (TestReconcile, TestNodeStrategy) and
// controllers (TestNodeLookupOfMachineAndRemediation).
func TestRemediation(t *testing.T) {
	started := time.Now()
	ctrl.SetLogger(logr.Discard())
	environment := env.Start(t)
	t.Logf("environment started in %s", elapsed(started))
	t.Run("scenarios", func(t *testing.T) {
		t.Run("RebootHealsWedgedKubeletOnRemotePool", rebootHealsWedgedKubelet(environment, infrav1.HostModeBareMetalHost))
		t.Run("RebootHealsWedgedKubeletThroughHostClaim", rebootHealsWedgedKubelet(environment, infrav1.HostModeHostClaim))
		t.Run("BrokenMachineReplacedAfterRetries", brokenMachineReplaced(environment))
	})
	// The provider and the binder ran as their release installs them
	// (testenv.RunShipped): no API server refused them anything while
	// they remediated, in either host mode.
	forbidden, err := environment.Forbidden()
	if err != nil {
		t.Fatal(err)
	}
	if len(forbidden) > 0 {
		t.Errorf("requests of the shipped ServiceAccounts answered 403 Forbidden: %v", forbidden)
	}
	t.Logf("wall time %s", elapsed(started))
}

// rebootHealsWedgedKubelet: a wedged kubelet, in a pool reached through an
// identity, is healed by one reboot. The workload cluster reports
// Kubernetes 1.28 or later, so the Node is fenced as upstream CAPM3 does
// there: tainted out-of-service once the host is off, the host held off
// until the Node's terminating pods and volume attachments are gone, the
// taint removed once the host is on; the Node keeps its UID, labels and
// annotations. In HostClaim mode the reboot is asked of the machine's
// claim, and the pool's binder passes it on to the host; the taint is on
// the workload Node, which the provider reaches itself in both modes.
func rebootHealsWedgedKubelet(environment *env.Environment, mode infrav1.HostMode) func(t *testing.T) {
	return func(t *testing.T) {
		t.Parallel()
		started := time.Now()
		defer func() { t.Logf("wall time %s", elapsed(started)) }()
		ctx, g, mgmt, workload := context.Background(), NewWithT(t), environment.Management, environment.Workload.Client
		name := "reboot"
		var (
			kubeconfig []byte
			err        error
		)
		if mode == infrav1.HostModeHostClaim {
			name = "reboot-claim"
			err = environment.AddClaimPool(ctx, t, environment.Pool, "pool-reboot-claim", "claims-reboot", 2)
			kubeconfig = environment.ClaimTenantKubeconfig(t, "claims-reboot", "capm3-reboot")
		} else {
			kubeconfig, err = environment.AddPool(ctx, t, "pool-reboot", "capm3-reboot", 2)
		}
		g.Expect(err).NotTo(HaveOccurred())
		namespace := "tenant-" + name
		g.Expect(env.CreateNamespace(ctx, mgmt.Client, namespace)).To(Succeed())
		g.Expect(mgmt.CreateCluster(ctx, t, environment.Workload,
			env.ClusterSpec{Namespace: namespace, Name: name, Identity: kubeconfig, Workers: 1, HostMode: mode})).To(Succeed())
		c := &cluster{mgmt: mgmt.Client, namespace: namespace, name: name, hosts: environment.Pool.Client, hostsConfig: environment.Pool.Config}
		c.createHealthCheck(ctx, g, 1, rebootTimeout)
		machine, host, node := c.runningWorker(ctx, g, workload, "")
		t.Logf("worker %s runs on host %s/%s after %s", machine.Name, host.Namespace, host.Name, elapsed(started))

		// What an operator put on the Node, and what runs on it.
		patch := client.MergeFrom(node.DeepCopy())
		node.Labels["example.com/rack"] = "r12"
		node.Annotations = map[string]string{"example.com/owner": "team-a"}
		g.Expect(workload.Patch(ctx, node, patch)).To(Succeed())
		load := runLoad(ctx, g, workload, "apps-"+name, node)
		history := c.watchHost(t, host)
		environment.WedgeKubelet(host.UID)

		m3r := &infrav1.Metal3Remediation{}
		g.Eventually(func() error {
			return mgmt.Client.Get(ctx, client.ObjectKeyFromObject(machine), m3r)
		}).WithTimeout(2*time.Minute).Should(Succeed(), "the MachineHealthCheck creates a Metal3Remediation named after Machine %s", machine.Name)
		g.Expect(m3r.OwnerReferences).To(ContainElement(HaveField("UID", machine.UID)), "the remediation is owned by its Machine")

		g.Eventually(func(g Gomega) {
			fenced := &corev1.Node{}
			g.Expect(workload.Get(ctx, client.ObjectKeyFromObject(node), fenced)).To(Succeed())
			taint := outOfService(fenced)
			g.Expect(taint).NotTo(BeNil(), "Node %s is tainted out-of-service", node.Name)
			g.Expect(taint.Value).To(Equal("nodeshutdown"))
			g.Expect(taint.Effect).To(Equal(corev1.TaintEffectNoExecute))
			g.Expect(taint.TimeAdded).NotTo(BeNil())
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		c.heldOff(ctx, g, host, "the Node is tainted only once its host is off")
		t.Logf("Node tainted out-of-service after %s", elapsed(started))

		// The workload cluster's controllers, which envtest does not run,
		// are played by the test: the taint eviction controller first.
		load.evict(ctx, g, workload)
		g.Eventually(func(g Gomega) {
			cond := c.nodeRestored(ctx, g, m3r.Name)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(infrav1.RemediationWaitingForDrainReason))
			g.Expect(cond.Message).To(ContainSubstring("2 terminating pods"))
			g.Expect(cond.Message).To(ContainSubstring("1 volume attachment (%s)", load.attachment.Name))
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the remediation waits for the pods and the volume attachment")
		c.heldOff(ctx, g, host, "pods and a volume attachment are left on the Node")

		// Then the attach-detach controller.
		load.detach(ctx, g, workload)
		g.Eventually(func(g Gomega) string {
			cond := c.nodeRestored(ctx, g, m3r.Name)
			g.Expect(cond).NotTo(BeNil())
			return cond.Message
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(ContainSubstring("2 terminating pods (%s/db-0, %s/web-0) and 0 volume attachments",
			load.evicted[0].Namespace, load.evicted[0].Namespace), "the remediation waits for the pods alone")
		c.heldOff(ctx, g, host, "terminating pods are left on the Node")
		g.Expect(history.powerCycled()).To(BeFalse(), "the host was not powered on while pods were left: %s", history)

		// Then the pod garbage collector: the host may be powered on.
		load.collect(ctx, g, workload)
		g.Eventually(history.powerCycled).WithTimeout(3*time.Minute).Should(BeTrue(),
			func() string { return "the Bare Metal Operator powers the host off and on; seen: " + history.String() })
		t.Logf("host power-cycled after %s: %s", time.Since(started).Round(time.Second), history)

		g.Eventually(func(g Gomega) {
			back := &corev1.Node{}
			g.Expect(workload.Get(ctx, client.ObjectKeyFromObject(node), back)).To(Succeed())
			g.Expect(outOfService(back)).To(BeNil(), "the taint is removed once the host is on")
			g.Expect(back.UID).To(Equal(node.UID), "the Node was never deleted")
			g.Expect(back.Labels).To(HaveKeyWithValue("example.com/rack", "r12"))
			g.Expect(back.Annotations).To(HaveKeyWithValue("example.com/owner", "team-a"))
			g.Expect(nodeReady(back)).To(BeTrue(), "the reboot healed the kubelet")
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		g.Expect(workload.Get(ctx, client.ObjectKeyFromObject(load.tolerating), &corev1.Pod{})).To(Succeed(),
			"a pod tolerating the taint stays, and held nothing up")

		g.Eventually(func(g Gomega) {
			healthy := &clusterv1.Machine{}
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(machine), healthy)).To(Succeed())
			g.Expect(healthy.UID).To(Equal(machine.UID), "the Machine was remediated, not replaced")
			g.Expect(conditions.IsTrue(healthy, clusterv1.MachineHealthCheckSucceededCondition)).To(BeTrue(), "Machine %s is healthy", machine.Name)
			err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3r), &infrav1.Metal3Remediation{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the MachineHealthCheck deleted the remediation (%v)", err)
		}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())

		after := &bmov1alpha1.BareMetalHost{}
		g.Expect(c.hosts.Get(ctx, client.ObjectKeyFromObject(host), after)).To(Succeed())
		g.Expect(after.Status.PoweredOn).To(BeTrue())
		marked := []client.Object{after}
		if mode == infrav1.HostModeHostClaim {
			claim := c.claimOf(ctx, g, machine)
			g.Expect(after.Spec.ConsumerRef.UID).To(Equal(claim.UID), "the machine kept its claim, and the claim its host")
			g.Expect(after.Annotations).NotTo(HaveKey(hostclaim.MirroredRebootsAnnotation), "the binder took back the reboot it mirrored")
			marked = append(marked, claim)
		}
		for _, obj := range marked {
			g.Expect(obj.GetAnnotations()).NotTo(HaveKey(pool.UnhealthyAnnotation), "%T %s", obj, obj.GetName())
			g.Expect(obj.GetAnnotations()).NotTo(HaveKey(HavePrefix(infrav1.RemediationRebootAnnotationPrefix)), "%T %s", obj, obj.GetName())
		}
		g.Eventually(func(g Gomega) []string { return c.remediationEvents(ctx, g, m3r.Name) }).Should(ContainElements(
			remediation.EventRebootRequested, remediation.EventOutOfServiceTaintAdded, remediation.EventWaitingForDrain,
			remediation.EventPowerOnRequested, remediation.EventOutOfServiceTaintRemoved))
		g.Expect(c.remediationEvents(ctx, g, m3r.Name)).NotTo(ContainElements(remediation.EventNodeDeleted, remediation.EventOutOfServiceUnsupported))
		c.logEvents(ctx, t, m3r.Name)
	}
}

// brokenMachineReplaced: a broken kubelet, on hosts next to the machines,
// is not healed by the reboots; its host is marked unhealthy and Cluster
// API replaces the machine on another host.
func brokenMachineReplaced(environment *env.Environment) func(t *testing.T) {
	return func(t *testing.T) {
		t.Parallel()
		started := time.Now()
		defer func() { t.Logf("wall time %s", elapsed(started)) }()
		const namespace = "tenant-replace"
		ctx, g, mgmt, workload := context.Background(), NewWithT(t), environment.Management, environment.Workload.Client
		g.Expect(env.CreateNamespace(ctx, mgmt.Client, namespace)).To(Succeed())
		// Hosts next to the machines (no identity): the control plane's, the
		// worker's and a spare.
		g.Expect(env.AddHosts(ctx, mgmt.Client, namespace, "replace", 3)).To(Succeed())
		g.Expect(mgmt.CreateCluster(ctx, t, environment.Workload, env.ClusterSpec{Namespace: namespace, Name: "replace", Workers: 1})).To(Succeed())
		c := &cluster{mgmt: mgmt.Client, namespace: namespace, name: "replace", hosts: mgmt.Client, hostsConfig: mgmt.Config}
		c.createHealthCheck(ctx, g, 1, rebootTimeout)
		machine, host, _ := c.runningWorker(ctx, g, workload, "")
		t.Logf("worker %s runs on host %s/%s after %s", machine.Name, host.Namespace, host.Name, elapsed(started))
		history := c.watchHost(t, host)
		environment.BreakKubelet(host.UID)

		g.Eventually(func() error {
			return mgmt.Client.Get(ctx, client.ObjectKeyFromObject(machine), &infrav1.Metal3Remediation{})
		}).WithTimeout(2*time.Minute).Should(Succeed(), "the MachineHealthCheck creates a Metal3Remediation named after Machine %s", machine.Name)
		g.Eventually(history.powerCycled).WithTimeout(3*time.Minute).Should(BeTrue(),
			func() string { return "the Bare Metal Operator powers the host off and on; seen: " + history.String() })
		t.Logf("host power-cycled after %s", elapsed(started))

		g.Eventually(func(g Gomega) {
			h := &bmov1alpha1.BareMetalHost{}
			g.Expect(c.hosts.Get(ctx, client.ObjectKeyFromObject(host), h)).To(Succeed())
			g.Expect(h.Annotations).To(HaveKeyWithValue(pool.UnhealthyAnnotation, pool.UnhealthyValue),
				"the host is marked unhealthy once the reboots are exhausted, as upstream CAPM3 v1.13+ marks it")
		}).WithTimeout(rebootTimeout + 3*time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		t.Logf("retries exhausted after %s", elapsed(started))

		g.Eventually(func() bool {
			err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(machine), &clusterv1.Machine{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(5*time.Minute).WithPolling(2*time.Second).Should(BeTrue(), "the MachineSet deletes Machine %s", machine.Name)
		replacement, newHost, _ := c.runningWorker(ctx, g, workload, machine.Name)
		g.Expect(newHost.Name).NotTo(Equal(host.Name), "the replacement Machine %s takes another host", replacement.Name)
		t.Logf("replacement %s runs on host %s after %s", replacement.Name, newHost.Name, elapsed(started))

		g.Eventually(func(g Gomega) {
			h := &bmov1alpha1.BareMetalHost{}
			g.Expect(c.hosts.Get(ctx, client.ObjectKeyFromObject(host), h)).To(Succeed())
			g.Expect(h.Spec.ConsumerRef).To(BeNil(), "the broken host is released")
			g.Expect(h.Annotations).To(HaveKey(pool.UnhealthyAnnotation), "and stays marked unhealthy")
			g.Expect(h.Annotations).NotTo(HaveKey(HavePrefix(infrav1.RemediationRebootAnnotationPrefix)))
			// A real cluster's garbage collector deletes the remediation with its
			// Machine; envtest runs none, so it stays and says why it is idle.
			left := &infrav1.Metal3Remediation{}
			if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(machine), left); !apierrors.IsNotFound(err) {
				g.Expect(err).NotTo(HaveOccurred())
				found := conditions.Get(left, infrav1.RemediationHostFoundCondition)
				g.Expect(found).NotTo(BeNil())
				g.Expect(found.Reason).To(Equal(infrav1.RemediationMachineNotFoundReason), "the remediation of a deleted Machine says so: %s", found.Message)
			}
		}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		g.Eventually(func(g Gomega) []string { return c.remediationEvents(ctx, g, machine.Name) }).Should(ContainElements(
			remediation.EventRebootRequested, remediation.EventOutOfServiceTaintAdded, remediation.EventRetriesExhausted))
		c.logEvents(ctx, t, machine.Name)
	}
}

// elapsed is the time since started, and the time of day, for the log.
func elapsed(started time.Time) string {
	return fmt.Sprintf("%s (%s)", time.Since(started).Round(time.Second), time.Now().Format("15:04:05"))
}
