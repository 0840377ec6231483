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
	"fmt"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	hostpool "github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// TestTenantsRaceForSharedPool: two tenants, each with its own provider
// (two managers reconciling concurrently), with identically named machines,
// share a pool of 15 hosts for 20 machines. Exactly 15 are bound, no host
// twice, every Secret next to a host is its consumer's, and the other 5
// wait with NoAvailableHost until hosts are added. Two more hosts of the
// pool are marked unhealthy, one under each name (upstream CAPM3 v1.13+'s
// and the deprecated one it still honours): neither is ever taken, and
// their marks stay.
func TestTenantsRaceForSharedPool(t *testing.T) {
	g := NewWithT(t)
	nsTenantA, nsTenantB, nsPool := testNamespace(t, "tenant-a"), testNamespace(t, "tenant-b"), testNamespace(t, "pool")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, noHosts)
	pool := poolCluster(t, scheme, 0)
	poolNamespace := testNamespace(t, "shared-pool")

	tenants := []string{nsTenantA, nsTenantB}
	for _, tenant := range tenants {
		mgmt.GrantInNamespace(t, tenant, "nobody")
		pool.GrantInNamespace(t, poolNamespace, tenant, testenv.HostProviderRules()...)
		g.Expect(mgmt.Client.Create(ctx, testenv.IdentitySecret(tenant, "pool-kubeconfig", pool.UserKubeconfig(t, tenant, nsPool, poolNamespace)))).To(Succeed())
	}
	availableHosts(t, pool.Client, poolNamespace, "host", 15)
	marks := map[string]string{"marked-new": hostpool.UnhealthyAnnotation, "marked-deprecated": hostpool.DeprecatedUnhealthyAnnotation}
	for name, mark := range marks {
		host := &bmov1alpha1.BareMetalHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: poolNamespace, Name: name, Annotations: map[string]string{mark: "operator"}},
		}
		g.Expect(pool.Client.Create(ctx, host)).To(Succeed())
		setHostState(t, pool.Client, host, bmov1alpha1.StateAvailable)
	}
	unmarkedUntaken := func(g Gomega) {
		for name, mark := range marks {
			host := &bmov1alpha1.BareMetalHost{}
			g.Expect(pool.Client.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: name}, host)).To(Succeed())
			g.Expect(host.Spec.ConsumerRef).To(BeNil(), "host %s, marked %s, is never taken", name, mark)
			g.Expect(host.Annotations).To(HaveKeyWithValue(mark, "operator"), "and keeps its mark")
		}
	}

	machines := map[string]*infrav1.Metal3Machine{}
	for _, tenant := range tenants {
		cluster := workloadCluster{namespace: tenant, name: "cluster", identityRef: &infrav1.IdentityRef{Name: "pool-kubeconfig"}}
		cluster.create(t, mgmt.Client)
		for i := range 10 {
			m := cluster.machine(t, mgmt.Client, fmt.Sprintf("worker-%d", i), nil)
			machines[tenant+"/"+m.Name] = m
		}
	}
	// Both providers start at once, when every machine is waiting.
	for _, tenant := range tenants {
		startControllers(t, mgmt, scheme, tenant)
	}

	waiting := func(g Gomega) []string {
		var names []string
		for key, m := range machines {
			got := &infrav1.Metal3Machine{}
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m), got)).To(Succeed())
			if c := conditions.Get(got, infrav1.HostAssociatedCondition); c != nil && c.Reason == infrav1.NoAvailableHostReason {
				names = append(names, key)
			}
		}
		return names
	}
	g.Eventually(func(g Gomega) {
		bound := consumedHosts(g, pool.Client, poolNamespace)
		g.Expect(bound).To(HaveLen(15))
		g.Expect(waiting(g)).To(HaveLen(5))
	}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())

	assertHostsConsistent(g, mgmt.Client, pool.Client, poolNamespace, machines)
	g.Consistently(func(g Gomega) {
		g.Expect(consumedHosts(g, pool.Client, poolNamespace)).To(HaveLen(15))
		unmarkedUntaken(g)
	}).WithTimeout(3*time.Second).Should(Succeed(), "no host changes hands")

	availableHosts(t, pool.Client, poolNamespace, "extra", 5)
	g.Eventually(func(g Gomega) {
		g.Expect(consumedHosts(g, pool.Client, poolNamespace)).To(HaveLen(20))
	}).WithTimeout(90*time.Second).WithPolling(time.Second).Should(Succeed(), "waiting machines bind once hosts are added")
	assertHostsConsistent(g, mgmt.Client, pool.Client, poolNamespace, machines)
	unmarkedUntaken(g)
}

// assertHostsConsistent checks every bound host against its machine: the
// consumerRef carries the machine's UID, the machine's annotation names the
// host, and the host's user data Secret belongs to that machine.
func assertHostsConsistent(g Gomega, mgmt, pool client.Client, poolNamespace string, machines map[string]*infrav1.Metal3Machine) {
	ctx := context.Background()
	for key, host := range consumedHosts(g, pool, poolNamespace) {
		m, ok := machines[key]
		g.Expect(ok).To(BeTrue(), "host %s is consumed by unknown %s", host.Name, key)
		g.Expect(host.Spec.ConsumerRef.UID).To(Equal(m.UID), "host %s names the right %s", host.Name, key)
		g.Eventually(func(g Gomega) {
			got := &infrav1.Metal3Machine{}
			g.Expect(mgmt.Get(ctx, client.ObjectKeyFromObject(m), got)).To(Succeed())
			g.Expect(got.Annotations[infrav1.HostAnnotation]).To(Equal(poolNamespace + "/" + host.Name))
		}).Should(Succeed())
		g.Expect(host.Spec.UserData).NotTo(BeNil())
		secret := &corev1.Secret{}
		g.Expect(pool.Get(ctx, client.ObjectKey{Namespace: poolNamespace, Name: host.Spec.UserData.Name}, secret)).To(Succeed())
		g.Expect(secret.Labels[hostbinding.OwnerUIDLabel]).To(Equal(string(m.UID)), "host %s's user data is %s's", host.Name, key)
		g.Expect(string(secret.Data["value"])).To(ContainSubstring("hostname: " + m.Name))
	}
	secrets := &corev1.SecretList{}
	g.Expect(pool.List(ctx, secrets, client.InNamespace(poolNamespace), client.HasLabels{hostbinding.OwnerUIDLabel})).To(Succeed())
	g.Expect(secrets.Items).To(HaveLen(len(consumedHosts(g, pool, poolNamespace))), "no Secret left behind by a lost race")
}

// TestAssociatedHostNeverReplaced (invariant 1): when the associated host
// disappears, the machine says so and waits; it does not take another.
func TestAssociatedHostNeverReplaced(t *testing.T) {
	g := NewWithT(t)
	nsTenantA := testNamespace(t, "tenant-a")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	startControllers(t, mgmt, scheme)
	mgmt.GrantInNamespace(t, nsTenantA, "nobody")
	cluster := workloadCluster{namespace: nsTenantA, name: "cluster-a"}
	cluster.create(t, mgmt.Client)
	availableHosts(t, mgmt.Client, nsTenantA, "host", 3)
	m3m := cluster.machine(t, mgmt.Client, "worker-0", nil)

	var host bmov1alpha1.BareMetalHost
	g.Eventually(func(g Gomega) {
		hosts := consumedHosts(g, mgmt.Client, nsTenantA)
		g.Expect(hosts).To(HaveKey(nsTenantA + "/worker-0"))
		host = hosts[nsTenantA+"/worker-0"]
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func() string {
		got := &infrav1.Metal3Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3m), got)).To(Succeed())
		return got.Annotations[infrav1.HostAnnotation]
	}).Should(Equal(nsTenantA + "/" + host.Name))

	g.Expect(mgmt.Client.Delete(ctx, &host)).To(Succeed())
	g.Eventually(func() string {
		got := &infrav1.Metal3Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3m), got)).To(Succeed())
		if c := conditions.Get(got, infrav1.HostAssociatedCondition); c != nil {
			return c.Reason + ": " + c.Message
		}
		return ""
	}).WithTimeout(30*time.Second).Should(And(HavePrefix(infrav1.HostNotFoundReason), ContainSubstring(host.Name)),
		"the machine reports its host missing")
	g.Consistently(func(g Gomega) {
		g.Expect(consumedHosts(g, mgmt.Client, nsTenantA)).To(BeEmpty(), "no other host is taken")
	}).WithTimeout(5 * time.Second).Should(Succeed())
}

// TestIdentitySecretProtected (invariant 5): an identity Secret in use
// survives a deletion request, carries the clusterctl move label, and goes
// once the last Metal3Cluster using it is gone.
func TestIdentitySecretProtected(t *testing.T) {
	g := NewWithT(t)
	nsTenantA := testNamespace(t, "tenant-a")
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, noHosts)
	startControllers(t, mgmt, scheme)
	mgmt.GrantInNamespace(t, nsTenantA, "nobody")
	secret := &corev1.Secret{
		ObjectMeta: metav1ObjectMeta(nsTenantA, "pool-kubeconfig"),
		// The content does not matter for protection; it is also invalid.
		Data: map[string][]byte{"kubeconfig": []byte("not a kubeconfig")},
	}
	g.Expect(mgmt.Client.Create(ctx, secret)).To(Succeed())
	cluster := workloadCluster{namespace: nsTenantA, name: "cluster-a", identityRef: &infrav1.IdentityRef{Name: "pool-kubeconfig"}}
	cluster.create(t, mgmt.Client)

	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		g.Expect(secret.Finalizers).To(ContainElement(identity.SecretFinalizer))
		g.Expect(secret.Labels).To(HaveKey(identity.ClusterctlMoveLabel))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	g.Expect(mgmt.Client.Delete(ctx, secret)).To(Succeed())
	g.Consistently(func() error {
		return mgmt.Client.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{})
	}).WithTimeout(3*time.Second).Should(Succeed(), "a Secret in use is not deleted")

	g.Expect(mgmt.Client.Delete(ctx, &infrav1.Metal3Cluster{ObjectMeta: metav1ObjectMeta(nsTenantA, "cluster-a")})).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{}))
	}).WithTimeout(30*time.Second).Should(BeTrue(), "the Secret goes with its last user")
}
