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

package clusterctl_test

import (
	"context"
	"slices"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// TestMoveWithClusterIdentity: a cluster whose Metal3Cluster names a
// Metal3ClusterIdentity moves with `clusterctl move --namespace` of the
// tenant's namespace: the identity and its kubeconfig Secret, which sits in
// the provider's namespace, are moved once, as the CRD's move-hierarchy
// label and the identity's ownership of the Secret ask, and stay in the
// source; no Secret of the identity is in the tenant's namespace. On the
// target the provider resolves the moved identity and finds the same host,
// which is not reprovisioned.
func TestMoveWithClusterIdentity(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	scheme := moveScheme(t)
	mgmt := startManagementCluster(t, scheme)
	pool := testenv.Start(t, testenv.Options{Scheme: scheme, CRDDirectoryPaths: []string{testenv.BMOCRDPath(t)}})
	pool.StartBMO(t, poolNamespace)
	pool.GrantInNamespace(t, poolNamespace, "pool-admin", testenv.HostProviderRules()...)
	mgmt.GrantInNamespace(t, tenantNamespace, "nobody")
	if err := testenv.RegisterHosts(ctx, pool.Client, poolNamespace, "host", 1); err != nil {
		t.Fatal(err)
	}

	// What the platform admin sets up: the pool's kubeconfig in the
	// provider's namespace, and an identity admitting the tenant.
	const identityName, secretName = "pool-east", "pool-east-kubeconfig"
	g.Expect(mgmt.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: providerNamespace}})).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, testenv.IdentitySecret(providerNamespace, secretName, pool.UserKubeconfig(t, "pool-admin", "pool-east", poolNamespace)))).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, &infrav1.Metal3ClusterIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: identityName},
		Spec: infrav1.Metal3ClusterIdentitySpec{
			SecretRef:         infrav1.KubeconfigSecretReference{Name: secretName},
			AllowedNamespaces: &infrav1.AllowedNamespaces{List: []string{tenantNamespace}},
		},
	})).To(Succeed())

	cluster := createCluster(t, mgmt.Client, infrav1.HostModeBareMetalHost)
	m3c := &infrav1.Metal3Cluster{}
	g.Expect(mgmt.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: tenantNamespace, Name: clusterName}, m3c)).To(Succeed())
	m3c.Spec.IdentityRef = &infrav1.IdentityRef{Kind: infrav1.IdentityKindMetal3ClusterIdentity, Name: identityName}
	g.Expect(mgmt.Client.Update(ctx, m3c)).To(Succeed())
	createDataTemplate(t, mgmt.Client)
	createMachine(t, mgmt.Client, cluster, "worker-0")
	stopSource := startProvider(t, mgmt)
	source := provisionedWorker(t, mgmt)
	host := &bmov1alpha1.BareMetalHost{}
	g.Expect(pool.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: poolNamespace, Name: "host-0"}, host)).To(Succeed())
	sourceIdentity := &infrav1.Metal3ClusterIdentity{}
	g.Expect(mgmt.Client.Get(ctx, ctrlclient.ObjectKey{Name: identityName}, sourceIdentity)).To(Succeed())
	g.Eventually(secretOwners(mgmt, secretName)).Should(ContainElement(sourceIdentity.UID), "the identity owns its Secret")

	repo := localRepository(t)
	initManagementCluster(t, mgmt, repo)
	moved := dryRunMove(t, mgmt, repo)
	t.Logf("clusterctl move would create: %v", moved)
	g.Expect(slices.DeleteFunc(slices.Clone(moved), func(name string) bool { return !hasKind(name, "Metal3ClusterIdentity") })).
		To(ConsistOf("Metal3ClusterIdentity/"+identityName), "the identity moves, once")
	g.Expect(slices.DeleteFunc(slices.Clone(moved), func(name string) bool { return !hasKind(name, "Secret") })).
		To(ConsistOf("Secret/"+secretName, "Secret/worker-0-bootstrap"), "its Secret moves once; the tenant holds none")

	target := startManagementCluster(t, scheme)
	initManagementCluster(t, target, repo)
	move(t, mgmt, target, repo)
	stopSource()

	// Cluster-wide objects and what they own are copied, not moved: the
	// source keeps them, and the target's Secret is owned by the target's
	// identity.
	for _, env := range []*testenv.Env{mgmt, target} {
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Name: identityName}, &infrav1.Metal3ClusterIdentity{})).To(Succeed())
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: providerNamespace, Name: secretName}, &corev1.Secret{})).To(Succeed())
	}
	targetIdentity := &infrav1.Metal3ClusterIdentity{}
	g.Expect(target.Client.Get(ctx, ctrlclient.ObjectKey{Name: identityName}, targetIdentity)).To(Succeed())
	g.Expect(secretOwners(target, secretName)()).To(ContainElement(targetIdentity.UID))
	assertMovedMachineKeepsItsHost(t, target, pool, source, host)

	moved3c := &infrav1.Metal3Cluster{}
	g.Expect(target.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(m3c), moved3c)).To(Succeed())
	g.Expect(moved3c.Status.Identity).NotTo(BeNil())
	g.Expect(moved3c.Status.Identity.IdentityName).To(Equal(identityName), "the target resolved the moved identity")
}

// secretOwners lists the UIDs of the owners of the identity Secret name in
// the provider's namespace of env.
func secretOwners(env *testenv.Env, name string) func() []types.UID {
	return func() []types.UID {
		secret := &corev1.Secret{}
		if err := env.Client.Get(context.Background(), ctrlclient.ObjectKey{Namespace: providerNamespace, Name: name}, secret); err != nil {
			return nil
		}
		var owners []types.UID
		for _, ref := range secret.OwnerReferences {
			owners = append(owners, ref.UID)
		}
		return owners
	}
}
