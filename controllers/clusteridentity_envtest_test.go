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
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// What a platform admin sets up for a Metal3ClusterIdentity, and what
// tenants do with it, against real API servers: the management cluster
// where the tenants' objects, the identities and their Secret (in the
// provider's namespace) are, and a pool where the hosts are.

// uniqueName is a name for a cluster-scoped object of the test, unique on
// the shared API servers.
func uniqueName(base string) string {
	namespacesMu.Lock()
	defer namespacesMu.Unlock()
	namespaceSeq++
	return fmt.Sprintf("%s-%d", base, namespaceSeq)
}

// adminSecret gives the provider a Role in poolNamespace of pool and puts its
// kubeconfig, whose context names poolNamespace, in a Secret of the
// provider's namespace of mgmt. It returns the Secret's name.
func adminSecret(t *testing.T, mgmt, pool *testenv.Env, providerNamespace, poolNamespace string) string {
	t.Helper()
	user := "capm3-" + poolNamespace
	pool.GrantInNamespace(t, poolNamespace, user, testenv.HostProviderRules()...)
	mgmt.GrantInNamespace(t, providerNamespace, "nobody") // creates the namespace
	name := poolNamespace + "-kubeconfig"
	if err := mgmt.Client.Create(context.Background(), testenv.IdentitySecret(providerNamespace, name, pool.UserKubeconfig(t, user, poolNamespace, poolNamespace))); err != nil {
		t.Fatal(err)
	}
	return name
}

// clusterIdentity creates a Metal3ClusterIdentity on secretName, in the
// provider's namespace (secretRef.namespace empty), admitting allowed, and
// returns its name; it is deleted when the test ends.
func clusterIdentity(t *testing.T, c client.Client, base, secretName string, allowed *infrav1.AllowedNamespaces) string {
	t.Helper()
	ci := &infrav1.Metal3ClusterIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName(base)},
		Spec: infrav1.Metal3ClusterIdentitySpec{
			SecretRef: infrav1.KubeconfigSecretReference{Name: secretName}, AllowedNamespaces: allowed,
		},
	}
	if err := c.Create(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ci) })
	return ci.Name
}

func clusterIdentityRef(name string) *infrav1.IdentityRef {
	return &infrav1.IdentityRef{Kind: infrav1.IdentityKindMetal3ClusterIdentity, Name: name}
}

// startWithProviderNamespace runs the provider's controllers, told that
// providerNamespace is theirs.
func startWithProviderNamespace(t *testing.T, mgmt *testenv.Env, providerNamespace string) identityCacheView {
	t.Helper()
	identities, _ := startControllersWith(t, mgmt, testScheme(t),
		fixtureOptions{remote: testRemoteOptions(), providerNamespace: providerNamespace})
	return identities
}

// identityCacheView is what the tests look at of the identity cache.
type identityCacheView interface{ ConnectedKeys() []identity.Key }

// machineCondition is cond of the Metal3Machine as "Status/Reason: Message".
func machineCondition(c client.Client, m3m *infrav1.Metal3Machine, cond string) func() string {
	return func() string {
		got := &infrav1.Metal3Machine{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(m3m), got); err != nil {
			return err.Error()
		}
		if c := conditions.Get(got, cond); c != nil {
			return string(c.Status) + "/" + c.Reason + ": " + c.Message
		}
		return ""
	}
}

func identityStatusOf(c client.Client, obj client.Object) func(g Gomega) *infrav1.IdentityStatus {
	return func(g Gomega) *infrav1.IdentityStatus {
		g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		switch o := obj.(type) {
		case *infrav1.Metal3Cluster:
			return o.Status.Identity
		case *infrav1.Metal3Machine:
			return o.Status.Identity
		}
		return nil
	}
}

// identityEvents counts the Events of kind objects in namespace by reason.
func identityEvents(g Gomega, c client.Client, namespace, kind string) map[string]int {
	events := &eventsv1.EventList{}
	g.Expect(c.List(context.Background(), events, client.InNamespace(namespace))).To(Succeed())
	reasons := map[string]int{}
	for _, e := range events.Items {
		if e.Regarding.Kind == kind {
			reasons[e.Reason]++
		}
	}
	return reasons
}

// TestClusterIdentityProvisions: a Metal3Cluster of an admitted namespace
// naming a Metal3ClusterIdentity reaches the pool with the identity's
// Secret, from the provider's namespace, and its machine's host is claimed
// and provisioned by the real Bare Metal Operator. The admin's Secret gets
// no tenant finalizer or move label: it is not the tenant's; the identity
// owns it, so that clusterctl move carries it with the identity.
func TestClusterIdentityProvisions(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tenant, provider, poolNS := testNamespace(t, "ci-tenant"), testNamespace(t, "ci-capm3"), testNamespace(t, "ci-pool")
	mgmt := managementCluster(t, testScheme(t), withHosts)
	pool := poolCluster(t, testScheme(t), 0)
	mgmt.GrantInNamespace(t, tenant, "nobody")
	secret := adminSecret(t, mgmt, pool, provider, poolNS)
	name := clusterIdentity(t, mgmt.Client, "ci-east", secret, &infrav1.AllowedNamespaces{List: []string{tenant}})
	startBMOWatching(t, pool, poolNS)
	enrolHosts(t, pool.Client, poolNS, "host", 1)
	startWithProviderNamespace(t, mgmt, provider)

	wc := workloadCluster{namespace: tenant, name: "cluster-a", identityRef: clusterIdentityRef(name)}
	wc.create(t, mgmt.Client)
	m3m := wc.machine(t, mgmt.Client, "worker-0", nil)
	m3c := &infrav1.Metal3Cluster{ObjectMeta: metav1ObjectMeta(tenant, "cluster-a")}
	g.Eventually(identityConditionOf(mgmt.Client, m3c)).WithTimeout(30*time.Second).
		Should(HavePrefix("True/Ready: Using Metal3ClusterIdentity "+name), "the cluster uses the identity's credentials")

	host := hostOf(t, pool.Client, poolNS, m3m)
	g.Expect(host.Spec.ConsumerRef.UID).To(Equal(m3m.UID))
	waitHostState(t, pool.Client, host, bmov1alpha1.StateProvisioned)
	g.Eventually(machineCondition(mgmt.Client, m3m, infrav1.HostProvisionedCondition)).WithTimeout(30*time.Second).
		Should(HavePrefix("True/"), "the machine sees its host provisioned, through the identity's host watch")

	want := &infrav1.IdentityStatus{
		Source: infrav1.IdentitySourceMetal3ClusterIdentity, IdentityName: name,
		SecretNamespace: provider, SecretName: secret, HostNamespace: poolNS,
	}
	g.Eventually(identityStatusOf(mgmt.Client, m3c)).Should(Equal(want))
	g.Eventually(identityStatusOf(mgmt.Client, m3m)).Should(Equal(want), "the machine records its cluster's identity")
	adminSecret := &corev1.Secret{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: provider, Name: secret}, adminSecret)).To(Succeed())
	g.Expect(adminSecret.Finalizers).NotTo(ContainElement(identity.SecretFinalizer))
	g.Expect(adminSecret.Labels).NotTo(HaveKey(identity.ClusterctlMoveLabel))
	ci := &infrav1.Metal3ClusterIdentity{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Name: name}, ci)).To(Succeed())
	g.Eventually(func(g Gomega) []metav1.OwnerReference {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(adminSecret), adminSecret)).To(Succeed())
		return adminSecret.OwnerReferences
	}).Should(ContainElement(And(HaveField("UID", ci.UID), HaveField("Kind", "Metal3ClusterIdentity"), HaveField("Controller", BeNil()))),
		"the identity owns its Secret, for clusterctl move, without controlling it")
}

// TestClusterIdentityRefusesNamespace: a namespace the identity does not
// admit gets IdentityReady=False/NamespaceNotAllowed, naming the identity and
// the namespace, with an Event; nothing connects to the pool and no host is
// claimed. A missing identity says IdentityNotFound, naming it.
func TestClusterIdentityRefusesNamespace(t *testing.T) {
	g := NewWithT(t)
	tenant, provider, poolNS := testNamespace(t, "ci-refused"), testNamespace(t, "ci-capm3"), testNamespace(t, "ci-pool")
	mgmt := managementCluster(t, testScheme(t), withHosts)
	pool := poolCluster(t, testScheme(t), 1)
	mgmt.GrantInNamespace(t, tenant, "nobody")
	secret := adminSecret(t, mgmt, pool, provider, poolNS)
	name := clusterIdentity(t, mgmt.Client, "ci-elsewhere", secret, &infrav1.AllowedNamespaces{List: []string{"someone-else"}})
	missing := uniqueName("ci-missing")
	availableHosts(t, pool.Client, poolNS, "host", 2)
	identities := startWithProviderNamespace(t, mgmt, provider)

	wc := workloadCluster{namespace: tenant, name: "cluster-a", identityRef: clusterIdentityRef(name)}
	wc.create(t, mgmt.Client)
	inherits := wc.machine(t, mgmt.Client, "worker-0", nil)
	own := wc.machine(t, mgmt.Client, "worker-1", func(m *infrav1.Metal3Machine) { m.Spec.IdentityRef = clusterIdentityRef(name) })
	(&workloadCluster{namespace: tenant, name: "cluster-b", identityRef: clusterIdentityRef(missing)}).create(t, mgmt.Client)
	m3c := &infrav1.Metal3Cluster{ObjectMeta: metav1ObjectMeta(tenant, "cluster-a")}

	refused := And(HavePrefix("False/NamespaceNotAllowed: "), ContainSubstrings("Metal3ClusterIdentity "+name, "namespace "+tenant))
	g.Eventually(identityConditionOf(mgmt.Client, m3c)).WithTimeout(30 * time.Second).Should(refused)
	g.Eventually(identityConditionOf(mgmt.Client, own)).WithTimeout(30*time.Second).Should(refused,
		"a machine with its own identityRef reports it too")
	g.Eventually(machineCondition(mgmt.Client, inherits, infrav1.HostAssociatedCondition)).WithTimeout(30*time.Second).
		Should(And(HavePrefix("False/IdentityNotReady: "), ContainSubstring("namespace "+tenant+" is not admitted")),
			"a machine using its cluster's identity says why it takes no host")
	g.Eventually(identityConditionOf(mgmt.Client, &infrav1.Metal3Cluster{ObjectMeta: metav1ObjectMeta(tenant, "cluster-b")})).
		WithTimeout(30 * time.Second).Should(HavePrefix("False/IdentityNotFound: identity Metal3ClusterIdentity " + missing + ": Metal3ClusterIdentity " + missing + " not found"))
	g.Eventually(identityStatusOf(mgmt.Client, m3c)).Should(Equal(&infrav1.IdentityStatus{
		Source: infrav1.IdentitySourceMetal3ClusterIdentity, IdentityName: name,
	}), "nothing of the identity's Secret is recorded for a namespace it does not admit")
	g.Eventually(func(g Gomega) map[string]int {
		return identityEvents(g, mgmt.Client, tenant, "Metal3Cluster")
	}).WithTimeout(30*time.Second).Should(HaveKeyWithValue("IdentityNamespaceNotAllowed", 1), "the refusal is told once, as an Event")

	g.Consistently(func(g Gomega) {
		g.Expect(consumedHosts(g, pool.Client, poolNS)).To(BeEmpty(), "no host is claimed")
		g.Expect(identities.ConnectedKeys()).To(BeEmpty(), "nothing connects to the pool")
	}).WithTimeout(3 * time.Second).Should(Succeed())
}

// TestClusterIdentityRefusesHostMode plays a tenant handed an identity its
// admin meant for HostClaim mode (allowedHostModes: [HostClaim]), which
// sets hostMode: BareMetalHost to read the pool's hosts, and their BMC
// addresses, wherever the kubeconfig's Role would allow. It is refused
// with HostModeNotAllowed and an Event, and nothing connects to the pool;
// the admin allowing the mode lets it through.
func TestClusterIdentityRefusesHostMode(t *testing.T) {
	g := NewWithT(t)
	tenant, provider, poolNS := testNamespace(t, "ci-mode"), testNamespace(t, "ci-mode-capm3"), testNamespace(t, "ci-mode-pool")
	mgmt := managementCluster(t, testScheme(t), withHosts)
	pool := poolCluster(t, testScheme(t), 1)
	mgmt.GrantInNamespace(t, tenant, "nobody")
	secret := adminSecret(t, mgmt, pool, provider, poolNS)
	name := clusterIdentity(t, mgmt.Client, "ci-claims", secret, &infrav1.AllowedNamespaces{List: []string{tenant}})
	ci := &infrav1.Metal3ClusterIdentity{}
	g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKey{Name: name}, ci)).To(Succeed())
	update(t, mgmt.Client, ci, func() { ci.Spec.AllowedHostModes = []infrav1.HostMode{infrav1.HostModeHostClaim} })
	availableHosts(t, pool.Client, poolNS, "host", 1)
	identities := startWithProviderNamespace(t, mgmt, provider)

	wc := workloadCluster{namespace: tenant, name: "cluster-a", identityRef: clusterIdentityRef(name), hostMode: infrav1.HostModeBareMetalHost}
	wc.create(t, mgmt.Client)
	wc.machine(t, mgmt.Client, "worker-0", nil)
	m3c := &infrav1.Metal3Cluster{ObjectMeta: metav1ObjectMeta(tenant, "cluster-a")}
	g.Eventually(identityConditionOf(mgmt.Client, m3c)).WithTimeout(30 * time.Second).Should(And(
		HavePrefix("False/"+infrav1.IdentityHostModeNotAllowedReason+": "), ContainSubstrings("host mode BareMetalHost", "allowedHostModes")))
	g.Eventually(func(g Gomega) map[string]int {
		return identityEvents(g, mgmt.Client, tenant, "Metal3Cluster")
	}).WithTimeout(30*time.Second).Should(HaveKey("Identity"+infrav1.IdentityHostModeNotAllowedReason), "the refusal is told as an Event")
	g.Consistently(func(g Gomega) {
		g.Expect(consumedHosts(g, pool.Client, poolNS)).To(BeEmpty(), "no host is read or claimed")
		g.Expect(identities.ConnectedKeys()).To(BeEmpty(), "nothing connects to the pool")
	}).WithTimeout(3 * time.Second).Should(Succeed())

	update(t, mgmt.Client, ci, func() {
		ci.Spec.AllowedHostModes = []infrav1.HostMode{infrav1.HostModeHostClaim, infrav1.HostModeBareMetalHost}
	})
	g.Eventually(func(g Gomega) {
		g.Expect(consumedHosts(g, pool.Client, poolNS)).To(HaveLen(1))
	}).WithTimeout(30*time.Second).Should(Succeed(), "allowed by its admin, the mode works")
}

// TestClusterIdentityFollowsNamespaceLabels: admission by label selector
// follows the namespace's labels. Unlabelled, the namespace is refused;
// labelled, its machine is provisioned through the identity; unlabelled
// again, the cluster says so at once and the running machine's host is left
// provisioned and bound to it.
func TestClusterIdentityFollowsNamespaceLabels(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tenant, provider, poolNS := testNamespace(t, "ci-labelled"), testNamespace(t, "ci-capm3"), testNamespace(t, "ci-pool")
	mgmt := managementCluster(t, testScheme(t), withHosts)
	pool := poolCluster(t, testScheme(t), 0)
	mgmt.GrantInNamespace(t, tenant, "nobody")
	secret := adminSecret(t, mgmt, pool, provider, poolNS)
	const poolLabel = "test.metal3.io/pool"
	name := clusterIdentity(t, mgmt.Client, "ci-selected", secret, &infrav1.AllowedNamespaces{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{poolLabel: tenant}},
	})
	startBMOWatching(t, pool, poolNS)
	enrolHosts(t, pool.Client, poolNS, "host", 1)
	identities := startWithProviderNamespace(t, mgmt, provider)

	wc := workloadCluster{namespace: tenant, name: "cluster-a", identityRef: clusterIdentityRef(name)}
	wc.create(t, mgmt.Client)
	m3m := wc.machine(t, mgmt.Client, "worker-0", nil)
	m3c := &infrav1.Metal3Cluster{ObjectMeta: metav1ObjectMeta(tenant, "cluster-a")}
	g.Eventually(identityConditionOf(mgmt.Client, m3c)).WithTimeout(30 * time.Second).Should(HavePrefix("False/NamespaceNotAllowed: "))
	g.Consistently(func(g Gomega) {
		g.Expect(consumedHosts(g, pool.Client, poolNS)).To(BeEmpty())
		g.Expect(identities.ConnectedKeys()).To(BeEmpty())
	}).WithTimeout(2 * time.Second).Should(Succeed())

	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}}
	setLabel := func(value *string) {
		update(t, mgmt.Client, namespace, func() {
			if value == nil {
				delete(namespace.Labels, poolLabel)
			} else {
				namespace.Labels[poolLabel] = *value
			}
		})
	}
	setLabel(&tenant)
	// Terminal refusals are not retried: only the Namespace watch brings
	// the reconciles that see the label.
	g.Eventually(identityConditionOf(mgmt.Client, m3c)).WithTimeout(30*time.Second).
		Should(HavePrefix("True/Ready: "), "labelling the namespace admits it")
	host := hostOf(t, pool.Client, poolNS, m3m)
	waitHostState(t, pool.Client, host, bmov1alpha1.StateProvisioned)
	g.Eventually(machineCondition(mgmt.Client, m3m, infrav1.HostProvisionedCondition)).WithTimeout(30 * time.Second).Should(HavePrefix("True/"))

	setLabel(nil)
	g.Eventually(identityConditionOf(mgmt.Client, m3c)).WithTimeout(30*time.Second).
		Should(HavePrefix("False/NamespaceNotAllowed: "), "removing the label revokes the namespace")
	g.Eventually(identityStatusOf(mgmt.Client, m3m)).WithTimeout(30*time.Second).Should(HaveField("SecretName", BeEmpty()),
		"the machine hears of the revocation too, and stops using the identity's connection")
	g.Eventually(machineCondition(mgmt.Client, m3m, infrav1.HostAssociatedCondition)).Should(ContainSubstring("is not admitted"))
	g.Eventually(func(g Gomega) map[string]int {
		return identityEvents(g, mgmt.Client, tenant, "Metal3Cluster")
	}).Should(And(HaveKey("IdentityNamespaceNotAllowed"), HaveKey("IdentityReady")), "both transitions are told as Events")

	g.Consistently(func(g Gomega) {
		got := &bmov1alpha1.BareMetalHost{}
		g.Expect(pool.Client.Get(ctx, client.ObjectKeyFromObject(host), got)).To(Succeed())
		g.Expect(got.Spec.ConsumerRef).NotTo(BeNil(), "the host stays bound")
		g.Expect(got.Spec.ConsumerRef.UID).To(Equal(m3m.UID))
		g.Expect(got.Spec.Image).NotTo(BeNil(), "the host is not deprovisioned")
		g.Expect(got.Spec.Online).To(BeTrue())
		g.Expect(got.Status.Provisioning.State).To(Equal(bmov1alpha1.StateProvisioned))
		machine := &infrav1.Metal3Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3m), machine)).To(Succeed())
		g.Expect(machine.Annotations).To(HaveKeyWithValue(infrav1.HostAnnotation, poolNS+"/"+host.Name))
	}).WithTimeout(5*time.Second).Should(Succeed(), "a revoked namespace's running machine is left alone")
}

// TestClusterIdentitySecretUnreadableByTenant: a tenant holding every right
// it needs in its own namespace, and none elsewhere, cannot read the
// identity's Secret nor change the identity, as the API server says; yet
// the cluster it creates itself uses the identity.
func TestClusterIdentitySecretUnreadableByTenant(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tenant, provider, poolNS := testNamespace(t, "ci-tenant"), testNamespace(t, "ci-capm3"), testNamespace(t, "ci-pool")
	mgmt := managementCluster(t, testScheme(t), withHosts)
	pool := poolCluster(t, testScheme(t), 1)
	secret := adminSecret(t, mgmt, pool, provider, poolNS)
	name := clusterIdentity(t, mgmt.Client, "ci-rbac", secret, &infrav1.AllowedNamespaces{List: []string{tenant}})
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	mgmt.GrantInNamespace(t, tenant, tenant,
		testenv.Rule{Group: "", Resource: "secrets", Verbs: all},
		testenv.Rule{Group: "cluster.x-k8s.io", Resource: "clusters", Verbs: all},
		testenv.Rule{Group: "cluster.x-k8s.io", Resource: "clusters/status", Verbs: all},
		testenv.Rule{Group: infrav1.GroupVersion.Group, Resource: "metal3clusters", Verbs: all},
	)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(mgmt.UserKubeconfig(t, tenant, tenant, tenant))
	g.Expect(err).NotTo(HaveOccurred())
	tenantClient, err := client.New(cfg, client.Options{Scheme: testScheme(t)})
	g.Expect(err).NotTo(HaveOccurred())
	startWithProviderNamespace(t, mgmt, provider)

	allowed := func(namespace, group, resource, verb string) bool {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Group: group, Resource: resource, Verb: verb},
		}}
		g.Expect(tenantClient.Create(ctx, review)).To(Succeed())
		return review.Status.Allowed
	}
	for _, verb := range []string{"get", "list", "watch"} {
		g.Expect(allowed(provider, "", "secrets", verb)).To(BeFalse(), "%s Secrets of the provider's namespace", verb)
		g.Expect(allowed("", "", "secrets", verb)).To(BeFalse(), "%s Secrets of every namespace", verb)
		g.Expect(allowed(tenant, "", "secrets", verb)).To(BeTrue(), "%s its own Secrets", verb)
	}
	for _, verb := range all {
		g.Expect(allowed("", infrav1.GroupVersion.Group, "metal3clusteridentities", verb)).To(BeFalse(),
			"%s Metal3ClusterIdentities (their allowedNamespaces, their secretRef)", verb)
	}
	err = tenantClient.Get(ctx, client.ObjectKey{Namespace: provider, Name: secret}, &corev1.Secret{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "reading the Secret as the tenant: %v", err)

	wc := workloadCluster{namespace: tenant, name: "cluster-a", identityRef: clusterIdentityRef(name)}
	wc.create(t, tenantClient)
	g.Eventually(identityConditionOf(mgmt.Client, &infrav1.Metal3Cluster{ObjectMeta: metav1ObjectMeta(tenant, "cluster-a")})).
		WithTimeout(30*time.Second).Should(HavePrefix("True/Ready: "), "the tenant's cluster uses credentials the tenant cannot read")
}

// TestClusterIdentityStatus: an identity counts the Metal3Clusters naming
// it, in every namespace, and follows a cluster switching to another
// identity; its Ready condition follows its Secret. Two identities on one
// Secret share one connection.
func TestClusterIdentityStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	nsA, nsB := testNamespace(t, "ci-count-a"), testNamespace(t, "ci-count-b")
	provider, poolNS := testNamespace(t, "ci-capm3"), testNamespace(t, "ci-pool")
	mgmt := managementCluster(t, testScheme(t), withHosts)
	pool := poolCluster(t, testScheme(t), 1)
	mgmt.GrantInNamespace(t, nsA, "nobody")
	mgmt.GrantInNamespace(t, nsB, "nobody")
	secret := adminSecret(t, mgmt, pool, provider, poolNS)
	everyone := &infrav1.AllowedNamespaces{Selector: &metav1.LabelSelector{}}
	first := clusterIdentity(t, mgmt.Client, "ci-first", secret, everyone)
	second := clusterIdentity(t, mgmt.Client, "ci-second", secret, everyone)
	late := clusterIdentity(t, mgmt.Client, "ci-late", "late-kubeconfig", everyone)
	identities := startWithProviderNamespace(t, mgmt, provider)

	for _, wc := range []workloadCluster{
		{namespace: nsA, name: "one", identityRef: clusterIdentityRef(first)},
		{namespace: nsB, name: "two", identityRef: clusterIdentityRef(first)},
		{namespace: nsA, name: "three", identityRef: clusterIdentityRef(second)},
	} {
		wc.create(t, mgmt.Client)
		g.Eventually(identityConditionOf(mgmt.Client, &infrav1.Metal3Cluster{ObjectMeta: metav1ObjectMeta(wc.namespace, wc.name)})).
			WithTimeout(30*time.Second).Should(HavePrefix("True/Ready: "), "cluster %s/%s", wc.namespace, wc.name)
	}
	g.Expect(identities.ConnectedKeys()).To(ConsistOf(identity.Key{SecretNamespace: provider, SecretName: secret}),
		"both identities share their Secret's connection")

	status := func(name string) func(g Gomega) string {
		return func(g Gomega) string {
			ci := &infrav1.Metal3ClusterIdentity{}
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Name: name}, ci)).To(Succeed())
			g.Expect(ci.Status.ObservedGeneration).To(Equal(ci.Generation))
			ready := conditions.Get(ci, infrav1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			return fmt.Sprintf("%d %s/%s: %s", ci.Status.Clusters, ready.Status, ready.Reason, ready.Message)
		}
	}
	g.Eventually(status(first)).Should(Equal(fmt.Sprintf("2 True/Ready: Secret %s/%s found", provider, secret)))
	g.Eventually(status(second)).Should(HavePrefix("1 True/Ready: "))

	one := &infrav1.Metal3Cluster{ObjectMeta: metav1ObjectMeta(nsA, "one")}
	update(t, mgmt.Client, one, func() { one.Spec.IdentityRef = clusterIdentityRef(second) })
	g.Eventually(status(first)).Should(HavePrefix("1 "), "the cluster left it")
	g.Eventually(status(second)).Should(HavePrefix("2 "), "the cluster joined it")

	g.Eventually(status(late)).Should(Equal(fmt.Sprintf("0 False/SecretNotFound: Secret %s/late-kubeconfig not found", provider)))
	g.Expect(mgmt.Client.Create(ctx, testenv.IdentitySecret(provider, "late-kubeconfig", []byte("not used")))).To(Succeed())
	g.Eventually(status(late)).Should(HavePrefix("0 True/Ready: "), "the Secret appearing is heard")
}
