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
	"os"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterctlclient "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	clusterctllog "sigs.k8s.io/cluster-api/cmd/clusterctl/log"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
)

// hostProvisioning is what a host is provisioned with; if any of it
// changes, the host was (or is about to be) deprovisioned or reprovisioned.
type hostProvisioning struct {
	State    bmov1alpha1.ProvisioningState
	Consumer corev1.ObjectReference
	Image    bmov1alpha1.Image
	UserData corev1.SecretReference
	MetaData corev1.SecretReference
}

func provisioningOf(g Gomega, hosts []bmov1alpha1.BareMetalHost) map[string]hostProvisioning {
	out := map[string]hostProvisioning{}
	for _, h := range hosts {
		g.Expect(h.Spec.Image).NotTo(BeNil())
		g.Expect(h.Spec.UserData).NotTo(BeNil())
		g.Expect(h.Spec.MetaData).NotTo(BeNil())
		out[h.Name] = hostProvisioning{
			State: h.Status.Provisioning.State, Consumer: *h.Spec.ConsumerRef, Image: *h.Spec.Image,
			UserData: *h.Spec.UserData, MetaData: *h.Spec.MetaData,
		}
	}
	return out
}

var _ = Describe("clusterctl move with a remote pool", func() {
	It("keeps every machine on its host, reprovisions nothing, and leaves the new management cluster in charge", func() {
		kubeconfig, err := environment.AddPool(ctx, GinkgoT(), "pool-move", "tenant-m", 5)
		Expect(err).NotTo(HaveOccurred())
		c := newTenant(environment.Management, management,
			env.ClusterSpec{Namespace: "tenant-m", Name: "pivot", Identity: kubeconfig, Workers: 2},
			environment.Pool.Client, "pool-move")
		machines := c.waitMachinesRunning(3)

		before := map[string]string{}
		uids := map[string]types.UID{}
		for _, m := range machines {
			m3m := &infrav1.Metal3Machine{}
			Expect(management.GetClient().Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.InfrastructureRef.Name}, m3m)).To(Succeed())
			before[m3m.Name] = m3m.Annotations[infrav1.HostAnnotation]
			uids[m3m.Name] = m3m.UID
		}
		var provisioned map[string]hostProvisioning
		Eventually(func(g Gomega) {
			hosts := c.boundHosts(g)
			g.Expect(hosts).To(HaveLen(3))
			provisioned = provisioningOf(g, hosts)
		}).Should(Succeed())

		By("Moving the cluster to a second management cluster")
		// The target needs no Bare Metal Operator: the moved cluster's
		// hosts are in the pool its identity names.
		targetProxy := c.moveToNewManagement("management-target")

		By("Checking that every moved Metal3Machine is on its host, with a new UID")
		Eventually(func(g Gomega) {
			for name, host := range before {
				m3m := &infrav1.Metal3Machine{}
				g.Expect(targetProxy.GetClient().Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: name}, m3m)).To(Succeed())
				g.Expect(m3m.UID).NotTo(Equal(uids[name]), "moved objects get new UIDs")
				g.Expect(m3m.Annotations).To(HaveKeyWithValue(infrav1.HostAnnotation, host))
				g.Expect(m3m.Status.Initialization.Provisioned).To(HaveValue(BeTrue()), "machine %s reports its host provisioned", name)
			}
			for _, h := range c.boundHosts(g) {
				g.Expect(h.Annotations).NotTo(HaveKey(bmov1alpha1.PausedAnnotation), "host %s is not left paused", h.Name)
			}
		}, intervals("wait-machines-running")...).Should(Succeed())
		c.waitMachinesRunning(3)

		By("Watching that no host is deprovisioned or reprovisioned")
		Consistently(func(g Gomega) {
			g.Expect(provisioningOf(g, c.boundHosts(g))).To(Equal(provisioned))
		}, intervals("observe-unchanged")...).Should(Succeed())

		By("Scaling up and down on the new management cluster")
		framework.ScaleAndWaitMachineDeployment(ctx, framework.ScaleAndWaitMachineDeploymentInput{
			ClusterProxy: targetProxy, Cluster: c.cluster(), MachineDeployment: c.machineDeployment(), Replicas: 3,
			WaitForMachineDeployments: intervals("wait-machines-running"),
		})
		c.waitMachinesRunning(4)
		framework.ScaleAndWaitMachineDeployment(ctx, framework.ScaleAndWaitMachineDeploymentInput{
			ClusterProxy: targetProxy, Cluster: c.cluster(), MachineDeployment: c.machineDeployment(), Replicas: 1,
			WaitForMachineDeployments: intervals("wait-machines-running"),
		})
		c.waitMachinesRunning(2)

		c.deleteAndWaitReleased()
	})
})

// moveToNewManagement runs `clusterctl move` of c's namespace from the
// first management cluster to a new one named name, without BMO CRDs (the
// moved cluster's hosts are in a pool its identity names), and points c at
// it.
func (c *tenantCluster) moveToNewManagement(name string) framework.ClusterProxy {
	GinkgoHelper()
	target := environment.AddManagement(GinkgoT(), env.ManagementOptions{Name: name, WithoutBareMetalOperator: true})
	targetProxy := framework.NewClusterProxy(target.Name, target.WriteKubeconfig(GinkgoT()), env.Scheme())
	DeferCleanup(func() { targetProxy.Dispose(ctx) })
	clusterctllog.SetLogger(funcr.New(func(prefix, args string) {
		fmt.Fprintln(os.Stderr, "clusterctl", prefix, args)
	}, funcr.Options{Verbosity: 5}))
	DeferCleanup(func() { clusterctllog.SetLogger(logr.Discard()) })
	clusterctl, err := clusterctlclient.New(ctx, "")
	Expect(err).NotTo(HaveOccurred())
	Expect(clusterctl.Move(ctx, clusterctlclient.MoveOptions{
		FromKubeconfig: clusterctlclient.Kubeconfig{Path: management.GetKubeconfigPath()},
		ToKubeconfig:   clusterctlclient.Kubeconfig{Path: targetProxy.GetKubeconfigPath()},
		Namespace:      c.namespace,
	})).To(Succeed())
	c.proxy = targetProxy
	return targetProxy
}
