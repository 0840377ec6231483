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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// createWorkloadKubeconfig stores the workload cluster's kubeconfig where
// CAPI keeps it, <cluster>-kubeconfig.
func createWorkloadKubeconfig(t *testing.T, mgmt client.Client, namespace, clusterName string, workload *testenv.Env) {
	t.Helper()
	if err := mgmt.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: clusterName + "-kubeconfig",
			Labels: map[string]string{clusterv1.ClusterNameLabel: clusterName}},
		Data: map[string][]byte{"value": workload.UserKubeconfigWithGroups(t, "capi", "system:masters")},
	}); err != nil {
		t.Fatal(err)
	}
}

// TestNodeProviderIDWithoutCloudProvider: with cloudProviderEnabled unset,
// as upstream CAPM3 reads it, no cloud provider runs and the provider sets
// the workload Node's providerID itself, finding the Node by the host UID
// label, through CAPI's ClusterCache.
func TestNodeProviderIDWithoutCloudProvider(t *testing.T) {
	g := NewWithT(t)
	nsTenantA := testNamespace(t, "tenant-a")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	workload := testenv.Start(t, testenv.Options{Scheme: scheme})
	startControllers(t, mgmt, scheme)
	mgmt.GrantInNamespace(t, nsTenantA, "nobody")

	cluster := workloadCluster{namespace: nsTenantA, name: "cluster-a", noCloudProvider: true}
	cluster.create(t, mgmt.Client)
	createWorkloadKubeconfig(t, mgmt.Client, nsTenantA, "cluster-a", workload)

	availableHosts(t, mgmt.Client, nsTenantA, "host", 1)
	m3m := cluster.machine(t, mgmt.Client, "worker-0", nil)
	var host bmov1alpha1.BareMetalHost
	g.Eventually(func(g Gomega) {
		hosts := consumedHosts(g, mgmt.Client, nsTenantA)
		g.Expect(hosts).To(HaveKey(nsTenantA + "/worker-0"))
		host = hosts[nsTenantA+"/worker-0"]
	}).WithTimeout(30 * time.Second).Should(Succeed())
	setHostState(t, mgmt.Client, &host, bmov1alpha1.StateProvisioned)

	// Cluster API looks the Node up when the machine publishes its
	// providerID: not before the Node carries it.
	g.Consistently(func(g Gomega) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3m), m3m)).To(Succeed())
		g.Expect(m3m.Spec.ProviderID).To(BeEmpty(), "no providerID while the Node is not registered")
		g.Expect(m3m.Status.Initialization.Provisioned).To(BeNil())
	}).WithTimeout(3 * time.Second).Should(Succeed())

	// The node boots and registers with the host's UID from its metadata.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-0", Labels: map[string]string{pool.HostUIDLabel: string(host.UID)}}}
	g.Expect(workload.Client.Create(ctx, node)).To(Succeed())
	want := "metal3://" + nsTenantA + "/" + host.Name + "/" + m3m.Name
	g.Eventually(func() (string, error) {
		err := workload.Client.Get(ctx, client.ObjectKeyFromObject(node), node)
		return node.Spec.ProviderID, err
	}).WithTimeout(60*time.Second).Should(Equal(want), "the Node gets the machine's provider ID")
	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3m), m3m)).To(Succeed())
		g.Expect(m3m.Spec.ProviderID).To(Equal(want), "then the machine publishes it")
		g.Expect(m3m.Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
	}).WithTimeout(60 * time.Second).Should(Succeed())
}
