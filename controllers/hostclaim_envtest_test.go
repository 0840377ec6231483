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
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// hostClaimPool is a pool API server of its own running the real Bare Metal
// Operator and the pool-side binder, with count hosts registered in
// hostNamespace and a HostDeployPolicy there for each admission given.
func hostClaimPool(t *testing.T, scheme *runtime.Scheme, hostNamespace string, count int, policies ...bmov1alpha1.HostClaimNamespaces) *testenv.Env {
	t.Helper()
	ctx := context.Background()
	pool := privatePoolCluster(t, scheme)
	pool.StartBMO(t, "default")
	pool.StartHostClaimBinder(t)
	if err := pool.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostNamespace}}); err != nil {
		t.Fatal(err)
	}
	for i, admits := range policies {
		policy := &bmov1alpha1.HostDeployPolicy{
			ObjectMeta: metav1ObjectMeta(hostNamespace, fmt.Sprintf("policy-%d", i)),
			Spec:       bmov1alpha1.HostDeployPolicySpec{HostClaimNamespaces: &admits},
		}
		if err := pool.Client.Create(ctx, policy); err != nil {
			t.Fatal(err)
		}
	}
	if err := testenv.RegisterHosts(ctx, pool.Client, hostNamespace, "host", count); err != nil {
		t.Fatal(err)
	}
	return pool
}

// claimTenant gives the tenant of mgmtNamespace its pool namespace, with the
// HostClaim-mode Role only, and the kubeconfig Secret secret for it; labels
// go on the pool namespace.
func claimTenant(t *testing.T, mgmt, pool *testenv.Env, mgmtNamespace, poolNamespace, secret string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	mgmt.GrantInNamespace(t, mgmtNamespace, "nobody")
	pool.GrantInNamespace(t, poolNamespace, poolNamespace, testenv.HostClaimTenantRules()...)
	if len(labels) > 0 {
		ns := &corev1.Namespace{}
		if err := pool.Client.Get(ctx, client.ObjectKey{Name: poolNamespace}, ns); err != nil {
			t.Fatal(err)
		}
		update(t, pool.Client, ns, func() { ns.Labels = labels })
	}
	if err := mgmt.Client.Create(ctx, testenv.IdentitySecret(mgmtNamespace, secret, pool.UserKubeconfig(t, poolNamespace, poolNamespace, poolNamespace))); err != nil {
		t.Fatal(err)
	}
}

// claimedHosts are the pool's hosts by the HostClaim (namespace/name) they
// are bound to; a claim on two hosts fails the test.
func claimedHosts(g Gomega, c client.Client, namespace string) map[string]bmov1alpha1.BareMetalHost {
	hosts := &bmov1alpha1.BareMetalHostList{}
	g.Expect(c.List(context.Background(), hosts, client.InNamespace(namespace))).To(Succeed())
	byClaim := map[string]bmov1alpha1.BareMetalHost{}
	for _, h := range hosts.Items {
		ref := h.Spec.ConsumerRef
		if ref == nil || ref.Kind != "HostClaim" {
			continue
		}
		key := ref.Namespace + "/" + ref.Name
		g.Expect(byClaim).NotTo(HaveKey(key), "claim %s is on two hosts", key)
		byClaim[key] = h
	}
	return byClaim
}

func associatedMessage(g Gomega, c client.Client, m3m *infrav1.Metal3Machine) string {
	got := &infrav1.Metal3Machine{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(m3m), got)).To(Succeed())
	if cond := conditions.Get(got, infrav1.HostAssociatedCondition); cond != nil {
		return cond.Reason + ": " + cond.Message
	}
	return ""
}

// TestHostClaimMode: two tenants whose identities may only touch HostClaims,
// their Secrets and HardwareData in their own pool namespaces get hosts from
// one host namespace through the binder; 5 hosts for 6 machines; a tenant
// the policy does not admit gets none and is told why; deleting a tenant's
// machines gives its hosts back, and the machine that waited takes one.
func TestHostClaimMode(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	nsA, nsB, nsC := testNamespace(t, "claims-a"), testNamespace(t, "claims-b"), testNamespace(t, "claims-c")
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	const hostNS = "hosts"
	pool := hostClaimPool(t, scheme, hostNS, 5,
		bmov1alpha1.HostClaimNamespaces{Names: []string{"pool-a"}},
		bmov1alpha1.HostClaimNamespaces{HasLabels: []bmov1alpha1.NameValuePair{{Name: "pool.example.com/tenant", Value: "true"}}},
	)
	claimTenant(t, mgmt, pool, nsA, "pool-a", "pool", nil)
	claimTenant(t, mgmt, pool, nsB, "pool-b", "pool", map[string]string{"pool.example.com/tenant": "true"})
	claimTenant(t, mgmt, pool, nsC, "pool-c", "pool", nil)
	startControllers(t, mgmt, scheme)

	var machines []*infrav1.Metal3Machine
	clusters := map[string]workloadCluster{}
	for _, ns := range []string{nsA, nsB, nsC} {
		cluster := workloadCluster{namespace: ns, name: "cluster", identityRef: &infrav1.IdentityRef{Name: "pool"}, hostMode: infrav1.HostModeHostClaim}
		cluster.create(t, mgmt.Client)
		clusters[ns] = cluster
	}
	for i := range 3 {
		machines = append(machines, clusters[nsA].machine(t, mgmt.Client, fmt.Sprintf("worker-%d", i), nil))
	}
	for i := range 3 {
		machines = append(machines, clusters[nsB].machine(t, mgmt.Client, fmt.Sprintf("worker-%d", i), nil))
	}
	outsider := clusters[nsC].machine(t, mgmt.Client, "worker-0", nil)

	provisioned := func(g Gomega) (done, waiting []*infrav1.Metal3Machine) {
		for _, m := range machines {
			got := &infrav1.Metal3Machine{}
			if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m), got); apierrors.IsNotFound(err) {
				continue // deleted
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			if ptr.Deref(got.Status.Initialization.Provisioned, false) {
				done = append(done, got)
			} else {
				waiting = append(waiting, got)
			}
		}
		return done, waiting
	}
	g.Eventually(func(g Gomega) {
		done, waiting := provisioned(g)
		g.Expect(done).To(HaveLen(5))
		g.Expect(waiting).To(HaveLen(1))
		g.Expect(associatedMessage(g, mgmt.Client, waiting[0])).To(And(
			HavePrefix(infrav1.NoAvailableHostReason), ContainSubstring(bmov1alpha1.NoBareMetalHostReason)))
	}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), "5 machines provisioned, 1 waiting for a host")
	g.Eventually(func(g Gomega) string { return associatedMessage(g, mgmt.Client, outsider) }).
		WithTimeout(30*time.Second).Should(ContainSubstring(hostclaim.NamespaceNotAdmittedReason), "the unadmitted tenant is told why")

	// Every provisioned machine runs on the host its own claim is bound to,
	// and its providerID names the claim, the only host the tenant knows.
	byClaim := claimedHosts(g, pool.Client, hostNS)
	g.Expect(byClaim).To(HaveLen(5))
	done, _ := provisioned(g)
	for _, m := range done {
		claim := m.Annotations[infrav1.HostClaimAnnotation]
		g.Expect(byClaim).To(HaveKey(claim))
		g.Expect(byClaim[claim].Status.Provisioning.State).To(Equal(bmov1alpha1.StateProvisioned))
		g.Expect(strings.HasPrefix(claim, "pool-a/") == (m.Namespace == nsA)).To(BeTrue(), "claim %s of %s", claim, m.Namespace)
		g.Expect(m.Spec.ProviderID).To(Equal("metal3://" + claim + "/" + m.Name))
	}
	// Every Secret next to a host is its claim's, and what the tenants can
	// read says nothing of the hosts' BMCs.
	secrets := &corev1.SecretList{}
	g.Expect(pool.Client.List(ctx, secrets, client.InNamespace(hostNS), client.HasLabels{hostclaim.ClaimUIDLabel})).To(Succeed())
	g.Expect(secrets.Items).NotTo(BeEmpty())
	for _, s := range secrets.Items {
		var owner *bmov1alpha1.BareMetalHost
		for _, h := range byClaim {
			if ref := h.Spec.UserData; ref != nil && ref.Name == s.Name {
				owner = &h
			}
		}
		g.Expect(owner).NotTo(BeNil(), "Secret %s is no host's user data", s.Name)
		g.Expect(s.Labels[hostclaim.ClaimUIDLabel]).To(Equal(string(owner.Spec.ConsumerRef.UID)), "Secret %s", s.Name)
	}
	for _, ns := range []string{"pool-a", "pool-b"} {
		claims := &bmov1alpha1.HostClaimList{}
		g.Expect(pool.Client.List(ctx, claims, client.InNamespace(ns))).To(Succeed())
		hardware := &bmov1alpha1.HardwareDataList{}
		g.Expect(pool.Client.List(ctx, hardware, client.InNamespace(ns))).To(Succeed())
		visible, err := json.Marshal([]any{claims.Items, hardware.Items})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(visible)).NotTo(Or(ContainSubstring("ipmi://"), ContainSubstring("-bmc")), "tenant namespace %s", ns)
	}
	hostsBefore := map[string]string{}
	for claim, h := range byClaim {
		hostsBefore[claim] = h.Name
	}

	// Tenant A goes: its hosts are deprovisioned and return to the pool,
	// and tenant B's waiting machine takes one of them. One machine first:
	// BMO's test-mode fixture keeps one image for all its hosts, so a host
	// provisioning while another deprovisions would keep undoing each
	// other's step.
	gone := func(g Gomega, ms ...*infrav1.Metal3Machine) {
		for _, m := range ms {
			err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m), &infrav1.Metal3Machine{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Metal3Machine %s/%s is still there", m.Namespace, m.Name)
		}
	}
	g.Expect(mgmt.Client.Delete(ctx, machines[0])).To(Succeed())
	g.Eventually(func(g Gomega) {
		gone(g, machines[0])
		done, _ := provisioned(g)
		g.Expect(done).To(HaveLen(5), "B's third machine took the host A gave back")
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	// The attack: tenant A points a machine's claim record at a claim that
	// does not exist, to have its machine go while its host stays bound.
	// The claim is found by its consumerRef all the same.
	update(t, mgmt.Client, machines[1], func() { machines[1].Annotations[infrav1.HostClaimAnnotation] = "pool-a/does-not-exist" })
	for _, m := range machines[1:3] {
		g.Expect(mgmt.Client.Delete(ctx, m)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		gone(g, machines[:3]...)
		claims := &bmov1alpha1.HostClaimList{}
		g.Expect(pool.Client.List(ctx, claims, client.InNamespace("pool-a"))).To(Succeed())
		g.Expect(claims.Items).To(BeEmpty())
		hosts := &bmov1alpha1.BareMetalHostList{}
		g.Expect(pool.Client.List(ctx, hosts, client.InNamespace(hostNS))).To(Succeed())
		free := 0
		for _, h := range hosts.Items {
			if h.Spec.ConsumerRef == nil && h.Status.Provisioning.State == bmov1alpha1.StateAvailable {
				free++
				// Nothing a claim set outlives it on the host.
				g.Expect(h.Spec.Image).To(BeNil())
				g.Expect(h.Spec.CustomDeploy).To(BeNil())
				g.Expect([]any{h.Spec.UserData, h.Spec.MetaData, h.Spec.NetworkData}).To(HaveEach(BeNil()))
				g.Expect(h.Spec.Online).To(BeFalse())
				for key := range h.Annotations {
					g.Expect(key).NotTo(Or(HavePrefix(bmov1alpha1.RebootAnnotationPrefix), Equal(bmov1alpha1.PausedAnnotation),
						Equal(hostclaim.MirroredRebootsAnnotation), Equal(hostclaim.KeptForAnnotation)), "host %s", h.Name)
				}
			}
		}
		g.Expect(free).To(Equal(2), "A's other two hosts are available again")
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "tenant A's hosts go back to the pool")
	byClaim = claimedHosts(g, pool.Client, hostNS)
	g.Expect(byClaim).To(HaveLen(3))
	for claim, h := range byClaim {
		g.Expect(claim).To(HavePrefix("pool-b/"))
		if before, ok := hostsBefore[claim]; ok {
			g.Expect(h.Name).To(Equal(before), "B's provisioned machines kept their hosts")
		}
	}
	g.Expect(pool.Client.List(ctx, secrets, client.InNamespace(hostNS), client.HasLabels{hostclaim.ClaimUIDLabel})).To(Succeed())
	for _, s := range secrets.Items {
		g.Expect(s.Annotations[hostclaim.ClaimAnnotation]).To(HavePrefix("pool-b/"), "tenant A's Secrets are gone from next to the hosts")
	}
}

// TestHostClaimTenantLeastPrivilege asks the API server, as a tenant
// identity holding the HostClaim-mode Role of docs/identity.md, what it may
// do: its own HostClaims, yes; any BareMetalHost, any Secret of the hosts'
// namespace (BMC credentials, other tenants' user data), or a HostClaim in
// another tenant's namespace, no.
func TestHostClaimTenantLeastPrivilege(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := testScheme(t)
	pool := poolCluster(t, scheme, 0)
	hosts, own, other := testNamespace(t, "lp-hosts"), testNamespace(t, "lp-tenant-a"), testNamespace(t, "lp-tenant-b")
	pool.GrantInNamespace(t, hosts, "lp-admin", testenv.HostProviderRules()...)
	pool.GrantInNamespace(t, other, other, testenv.HostClaimTenantRules()...)
	pool.GrantInNamespace(t, own, own, testenv.HostClaimTenantRules()...)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(pool.UserKubeconfig(t, own, own, own))
	g.Expect(err).NotTo(HaveOccurred())
	tenant, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())

	allowed := func(namespace, group, resource, verb string) bool {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Group: group, Resource: resource, Verb: verb},
		}}
		g.Expect(tenant.Create(ctx, review)).To(Succeed())
		return review.Status.Allowed
	}
	for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete"} {
		g.Expect(allowed(own, "metal3.io", "hostclaims", verb)).To(BeTrue(), "%s its own HostClaims", verb)
		g.Expect(allowed(other, "metal3.io", "hostclaims", verb)).To(BeFalse(), "%s another tenant's HostClaims", verb)
	}
	for _, verb := range []string{"get", "list", "watch"} {
		for _, ns := range []string{hosts, own, other, ""} {
			g.Expect(allowed(ns, "metal3.io", "baremetalhosts", verb)).To(BeFalse(), "%s BareMetalHosts in %q", verb, ns)
		}
		g.Expect(allowed(hosts, "", "secrets", verb)).To(BeFalse(), "%s Secrets of the hosts' namespace", verb)
		g.Expect(allowed(other, "", "secrets", verb)).To(BeFalse(), "%s another tenant's Secrets", verb)
		g.Expect(allowed(hosts, "metal3.io", "hardwaredata", verb)).To(BeFalse(), "%s the hosts' HardwareData", verb)
		g.Expect(allowed(hosts, "metal3.io", "hostdeploypolicies", verb)).To(BeFalse(), "%s HostDeployPolicies", verb)
	}
	g.Expect(allowed(own, "metal3.io", "hardwaredata", "get")).To(BeTrue(), "read the HardwareData copies beside its claims")
	g.Expect(allowed(own, "", "secrets", "create")).To(BeTrue(), "write its claims' Secrets")
	g.Expect(allowed(own, "metal3.io", "hostclaims/status", "update")).To(BeFalse(), "write its claims' status, which the binder reports in")
}

// TestHostClaimNodeReuse is TestNodeReuseKeepsHostForOwner in HostClaim
// mode: the machine of a MachineDeployment whose template has nodeReuse
// releases its claim asking the binder to keep the host for the
// deployment; another tenant's deployment of the same name does not get
// it, the deployment's next machine of a new template does.
func TestHostClaimNodeReuse(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	nsA, nsB := testNamespace(t, "claim-reuse-a"), testNamespace(t, "claim-reuse-b")
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, noHosts)
	const hostNS = "hosts"
	pool := hostClaimPool(t, scheme, hostNS, 1, bmov1alpha1.HostClaimNamespaces{Names: []string{"pool-a", "pool-b"}})
	claimTenant(t, mgmt, pool, nsA, "pool-a", "pool", nil)
	claimTenant(t, mgmt, pool, nsB, "pool-b", "pool", nil)
	startControllers(t, mgmt, scheme)
	clusters := map[string]workloadCluster{}
	for _, ns := range []string{nsA, nsB} {
		clusters[ns] = workloadCluster{namespace: ns, name: "cluster-a", identityRef: &infrav1.IdentityRef{Name: "pool"}, hostMode: infrav1.HostModeHostClaim}
		clusters[ns].create(t, mgmt.Client)
		machineDeployment(t, mgmt.Client, ns, "cluster-a", "workers")
		machineTemplate(t, mgmt.Client, ns, "workers-v1", true)
		machineTemplate(t, mgmt.Client, ns, "workers-v2", false)
	}
	// hostOfClaim waits for m3m's claim to be bound, and returns its host.
	hostOfClaim := func(m3m *infrav1.Metal3Machine, state bmov1alpha1.ProvisioningState) *bmov1alpha1.BareMetalHost {
		var host bmov1alpha1.BareMetalHost
		g.Eventually(func(g Gomega) {
			got := &infrav1.Metal3Machine{}
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3m), got)).To(Succeed())
			claim := got.Annotations[infrav1.HostClaimAnnotation]
			g.Expect(claim).NotTo(BeEmpty(), "machine %s has a claim", m3m.Name)
			byClaim := claimedHosts(g, pool.Client, hostNS)
			g.Expect(byClaim).To(HaveKey(claim))
			host = byClaim[claim]
			g.Expect(host.Status.Provisioning.State).To(Equal(state))
		}).WithTimeout(2*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "machine %s's claim is bound", m3m.Name)
		return &host
	}

	first := clusters[nsA].machine(t, mgmt.Client, "workers-v1-0", ofDeployment("workers", "workers-v1"))
	host := hostOfClaim(first, bmov1alpha1.StateProvisioned)

	// Rolling upgrade: the old machine goes, the binder deprovisions its
	// host and keeps it for the deployment.
	g.Expect(mgmt.Client.Delete(ctx, first)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(pool.Client.Get(ctx, client.ObjectKeyFromObject(host), host)).To(Succeed())
		g.Expect(host.Spec.ConsumerRef).To(BeNil())
		g.Expect(host.Annotations[hostclaim.KeptForAnnotation]).To(And(HavePrefix("pool-a/"), HaveSuffix("/md-workers")))
		g.Expect(host.Status.Provisioning.State).To(Equal(bmov1alpha1.StateAvailable))
	}).WithTimeout(2*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "the host is released and kept for MachineDeployment workers")

	// Another tenant's MachineDeployment of the same name does not get it.
	intruder := clusters[nsB].machine(t, mgmt.Client, "workers-v1-0", ofDeployment("workers", "workers-v1"))
	g.Eventually(func(g Gomega) string { return associatedMessage(g, mgmt.Client, intruder) }).
		WithTimeout(30 * time.Second).Should(And(HavePrefix(infrav1.NoAvailableHostReason), ContainSubstring("kept for another claim's node reuse")))

	// The deployment's next machine, of the new template, gets it back.
	next := clusters[nsA].machine(t, mgmt.Client, "workers-v2-0", ofDeployment("workers", "workers-v2"))
	g.Expect(hostOfClaim(next, bmov1alpha1.StateProvisioned).Name).To(Equal(host.Name))
	g.Expect(pool.Client.Get(ctx, client.ObjectKeyFromObject(host), host)).To(Succeed())
	g.Expect(host.Annotations).NotTo(HaveKey(hostclaim.KeptForAnnotation), "taken back: no longer kept")
	g.Expect(associatedMessage(g, mgmt.Client, intruder)).To(HavePrefix(infrav1.NoAvailableHostReason), "the other tenant still waits")
}
