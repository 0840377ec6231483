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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

func testScheme(t *testing.T) *runtime.Scheme {
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

// TestIdentityOutageAndRecovery stops the pool's API server: the Metal3Cluster
// using it goes Unreachable within the probe window while an in-cluster one
// stays Ready, a machine deleted meanwhile keeps its finalizer; once the
// server is back on the same port the condition recovers, the deletion
// completes and host events flow again, without restarting the manager.
func TestIdentityOutageAndRecovery(t *testing.T) {
	g := NewWithT(t)
	ns, nsPoolA := testNamespace(t, "tenant-a"), testNamespace(t, "pool-a")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	pool := privatePoolCluster(t, scheme)
	startControllers(t, mgmt, scheme)

	pool.GrantInNamespace(t, nsPoolA, ns, testenv.HostProviderRules()...)
	mgmt.GrantInNamespace(t, ns, "nobody")
	g.Expect(mgmt.Client.Create(ctx, testenv.IdentitySecret(ns, "pool-a-kubeconfig", pool.UserKubeconfig(t, ns, nsPoolA, nsPoolA)))).To(Succeed())

	remoteWC := workloadCluster{namespace: ns, name: "remote", identityRef: &infrav1.IdentityRef{Name: "pool-a-kubeconfig"}}
	remoteWC.create(t, mgmt.Client)
	localWC := workloadCluster{namespace: ns, name: "local"}
	localWC.create(t, mgmt.Client)
	remoteCluster := &infrav1.Metal3Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "remote"}}
	localCluster := &infrav1.Metal3Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "local"}}
	availableHosts(t, pool.Client, nsPoolA, "host", 2)
	worker := remoteWC.machine(t, mgmt.Client, "worker-0", nil)
	doomed := remoteWC.machine(t, mgmt.Client, "worker-1", nil)

	g.Eventually(identityReason(g, mgmt.Client, remoteCluster)).WithTimeout(30 * time.Second).Should(Equal("True/Ready"))
	g.Eventually(identityReason(g, mgmt.Client, localCluster)).WithTimeout(30 * time.Second).Should(Equal("True/InCluster"))
	g.Eventually(isReady(g, mgmt.Client, remoteCluster)).Should(BeTrue())
	g.Eventually(isReady(g, mgmt.Client, localCluster)).Should(BeTrue())
	var host bmov1alpha1.BareMetalHost
	g.Eventually(func(g Gomega) {
		hosts := consumedHosts(g, pool.Client, nsPoolA)
		g.Expect(hosts).To(HaveKey(ns + "/worker-0"))
		g.Expect(hosts).To(HaveKey(ns + "/worker-1"))
		host = hosts[ns+"/worker-0"]
	}).WithTimeout(30*time.Second).Should(Succeed(), "both machines claim a host through the cluster's identity")

	restart := pool.StopAPIServer(t)
	// Probe window: 2 failed probes of 0.5 s, plus the reconcile.
	g.Eventually(identityReason(g, mgmt.Client, remoteCluster)).WithTimeout(10*time.Second).
		Should(Equal("False/Unreachable"), "an outage shows within the probe window")
	g.Expect(isReady(g, mgmt.Client, remoteCluster)()).To(BeFalse(), "Ready follows the identity")
	g.Consistently(isReady(g, mgmt.Client, localCluster)).WithTimeout(3*time.Second).Should(BeTrue(),
		"a cluster on another identity is not affected")

	g.Expect(mgmt.Client.Delete(ctx, doomed)).To(Succeed())
	g.Consistently(func(g Gomega) {
		got := &infrav1.Metal3Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(doomed), got)).To(Succeed(),
			"the finalizer stays while the host cannot be released")
		g.Expect(got.Finalizers).To(ContainElement(infrav1.Metal3MachineFinalizer))
	}).WithTimeout(3 * time.Second).Should(Succeed())

	restart()
	g.Eventually(identityReason(g, mgmt.Client, remoteCluster)).WithTimeout(60*time.Second).
		Should(Equal("True/Ready"), "the identity recovers once the server is back")
	g.Eventually(isReady(g, mgmt.Client, remoteCluster)).Should(BeTrue())
	g.Eventually(func(g Gomega) {
		err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(doomed), &infrav1.Metal3Machine{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		g.Expect(consumedHosts(g, pool.Client, nsPoolA)).NotTo(HaveKey(ns + "/worker-1"))
	}).WithTimeout(60*time.Second).Should(Succeed(), "the deletion completes through the recovered identity")
	recorded := &infrav1.Metal3Machine{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(worker), recorded)).To(Succeed())
	g.Expect(recorded.Status.Identity.SecretName).To(Equal("pool-a-kubeconfig"), "the machine uses its cluster's identity")

	// Host events flow again through the new accessor: the machine sees
	// its host provisioned.
	setHostState(t, pool.Client, &host, bmov1alpha1.StateProvisioned)
	g.Eventually(func() bool {
		got := &infrav1.Metal3Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(worker), got)).To(Succeed())
		return ptr.Deref(got.Status.Initialization.Provisioned, false)
	}).WithTimeout(15*time.Second).Should(BeTrue(), "a host update after the restart reaches its machine")
}

// TestMachineIdentityOverride: a Metal3Machine with its own identityRef
// reports its identity's state, and follows the Secret appearing.
func TestMachineIdentityOverride(t *testing.T) {
	g := NewWithT(t)
	ns, nsPoolB := testNamespace(t, "tenant-b"), testNamespace(t, "pool-b")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	pool := poolCluster(t, scheme, 0)
	startControllers(t, mgmt, scheme)
	mgmt.GrantInNamespace(t, ns, "nobody")
	wc := workloadCluster{namespace: ns, name: "cluster-b"}
	wc.create(t, mgmt.Client)
	worker := wc.machine(t, mgmt.Client, "worker-0", func(m *infrav1.Metal3Machine) {
		m.Spec.IdentityRef = &infrav1.IdentityRef{Name: "pool-b-kubeconfig"}
	})
	machineCondition := func() string {
		got := &infrav1.Metal3Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(worker), got)).To(Succeed())
		cond := conditions.Get(got, infrav1.IdentityReadyCondition)
		if cond == nil {
			return ""
		}
		return string(cond.Status) + "/" + cond.Reason + ": " + cond.Message
	}
	g.Eventually(machineCondition).WithTimeout(20 * time.Second).Should(And(
		HavePrefix("False/SecretNotFound"), ContainSubstring(ns+"/pool-b-kubeconfig")))

	pool.GrantInNamespace(t, nsPoolB, ns, testenv.HostProviderRules()...)
	g.Expect(mgmt.Client.Create(ctx, testenv.IdentitySecret(ns, "pool-b-kubeconfig", pool.UserKubeconfig(t, ns, nsPoolB, nsPoolB)))).To(Succeed())
	g.Eventually(machineCondition).WithTimeout(30*time.Second).Should(HavePrefix("True/Ready"),
		"creating the Secret is enough: its watch wakes the machine")
	// Conditions and the rest of status are patched in separate requests.
	g.Eventually(func(g Gomega) *infrav1.IdentityStatus {
		got := &infrav1.Metal3Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(worker), got)).To(Succeed())
		return got.Status.Identity
	}).Should(Equal(&infrav1.IdentityStatus{
		Source: infrav1.IdentitySourceSecret, SecretName: "pool-b-kubeconfig", HostNamespace: nsPoolB,
	}))
}
