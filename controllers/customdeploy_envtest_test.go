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
	"path/filepath"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// startBMOWatching runs the real Bare Metal Operator in test mode (its
// fixture provisioner stands in for Ironic) against env, watching namespace
// only: the API server is shared with the package's other tests, whose
// hosts it must leave to them.
func startBMOWatching(t *testing.T, env *testenv.Env, namespace string) {
	t.Helper()
	dir, err := testenv.BMODir()
	if err != nil {
		t.Fatal(err)
	}
	env.RunProcess(t, filepath.Join(dir, "baremetal-operator"),
		[]string{"POD_NAMESPACE=" + namespace, "WATCH_NAMESPACE=" + namespace},
		"--test-mode",
		"--webhook-port=0",
		"--metrics-addr="+testenv.FreeLoopbackAddr(t),
		"--health-addr="+testenv.FreeLoopbackAddr(t),
	)
}

// enrolHosts creates hosts with BMC credentials, as a pool admin enrols
// machines, and waits until the Bare Metal Operator has registered and
// inspected them: available.
func enrolHosts(t *testing.T, c client.Client, namespace, prefix string, n int) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(testenv.RegisterHosts(ctx, c, namespace, prefix, n)).To(Succeed())
	g.Eventually(func(g Gomega) {
		hosts := &bmov1alpha1.BareMetalHostList{}
		g.Expect(c.List(ctx, hosts, client.InNamespace(namespace))).To(Succeed())
		g.Expect(hosts.Items).To(HaveLen(n))
		for _, h := range hosts.Items {
			g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateAvailable), "host %s", h.Name)
		}
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "the Bare Metal Operator registers and inspects the hosts")
}

// TestProvisioningCustomDeploy: a machine with a custom deploy method and
// no image gives its host that method, no image and the user data Secret;
// the real Bare Metal Operator provisions the host with the method, the
// machine becomes ready, and deleting it has the host deprovisioned and
// released.
func TestProvisioningCustomDeploy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := testNamespace(t, "tenant-custom")
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	mgmt.GrantInNamespace(t, ns, "nobody") // creates the namespace
	startBMOWatching(t, mgmt, ns)
	enrolHosts(t, mgmt.Client, ns, "host", 1)
	startControllers(t, mgmt, scheme)
	cluster := workloadCluster{namespace: ns, name: "cluster-custom"}
	cluster.create(t, mgmt.Client)
	m3m := cluster.machine(t, mgmt.Client, "worker-0", func(m *infrav1.Metal3Machine) {
		m.Spec.Image = infrav1.Image{}
		m.Spec.CustomDeploy = infrav1.CustomDeploy{Method: "install_coreos"}
	})
	key := ns + "/" + m3m.Name

	var host bmov1alpha1.BareMetalHost
	g.Eventually(func(g Gomega) {
		hosts := consumedHosts(g, mgmt.Client, ns)
		g.Expect(hosts).To(HaveKey(key))
		host = hosts[key]
		g.Expect(host.Spec.UserData).NotTo(BeNil(), "the host is asked to provision")
	}).WithTimeout(30*time.Second).Should(Succeed(), "the machine claims the host")
	g.Expect(host.Spec.ConsumerRef.UID).To(Equal(m3m.UID))
	g.Expect(host.Spec.CustomDeploy).To(Equal(&bmov1alpha1.CustomDeploy{Method: "install_coreos"}))
	g.Expect(host.Spec.Image).To(BeNil(), "a custom deploy writes no image")
	g.Expect(host.Spec.Online).To(BeTrue())
	g.Expect(host.Spec.UserData.Namespace).To(Equal(ns), "user data is next to the host")
	userData := &corev1.Secret{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: host.Spec.UserData.Name}, userData)).To(Succeed())
	g.Expect(string(userData.Data["value"])).To(ContainSubstring("hostname: worker-0"), "the bootstrap data is the host's user data")
	g.Expect(userData.Labels[hostbinding.OwnerUIDLabel]).To(Equal(string(m3m.UID)))

	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(&host), &host)).To(Succeed())
		g.Expect(host.Status.Provisioning.State).To(Equal(bmov1alpha1.StateProvisioned))
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "the Bare Metal Operator provisions the host")
	g.Expect(host.Status.Provisioning.CustomDeploy).To(Equal(&bmov1alpha1.CustomDeploy{Method: "install_coreos"}),
		"the host was provisioned with the custom deploy method")
	g.Expect(host.Status.Provisioning.Image.URL).To(BeEmpty(), "and not with an image")

	g.Eventually(func(g Gomega) {
		got := &infrav1.Metal3Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3m), got)).To(Succeed())
		g.Expect(got.Spec.ProviderID).To(Equal("metal3://" + ns + "/" + host.Name + "/" + m3m.Name))
		g.Expect(got.Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
		g.Expect(got.Status.Addresses).To(ContainElement(clusterv1.MachineAddress{Type: clusterv1.MachineInternalIP, Address: "192.168.100.1"}),
			"the addresses come from the hardware the Bare Metal Operator inspected")
		g.Expect(conditions.IsTrue(got, infrav1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(30*time.Second).Should(Succeed(), "the machine is provisioned")

	g.Expect(mgmt.Client.Delete(ctx, m3m)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(&host), &host)).To(Succeed())
		g.Expect(host.Spec.ConsumerRef).To(BeNil(), "the host is released")
		g.Expect(host.Spec.CustomDeploy).To(BeNil())
		g.Expect(host.Spec.UserData).To(BeNil())
		g.Expect(host.Status.Provisioning.State).To(Equal(bmov1alpha1.StateAvailable))
		g.Expect(host.Status.Provisioning.CustomDeploy).To(BeNil(), "the Bare Metal Operator deprovisioned the host")
		err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(userData), &corev1.Secret{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the user data Secret is deleted")
		err = mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3m), &infrav1.Metal3Machine{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Metal3Machine is gone")
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "deleting the machine deprovisions and releases the host")
}
