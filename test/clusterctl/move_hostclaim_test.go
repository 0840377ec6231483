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
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// TestMoveWithHostClaims: in HostClaim mode, `clusterctl move` takes the
// tenant's objects only; the HostClaim, its Secrets, the HardwareData copy
// and the host stay in the pool. The provider on the target finds the same
// claim (its name and consumer UID come from the machine's consumer ID,
// which move keeps), the host is neither deprovisioned nor reprovisioned,
// and deleting the machine there gives the host back to the pool.
func TestMoveWithHostClaims(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	scheme := moveScheme(t)
	mgmt := startManagementCluster(t, scheme)
	pool := testenv.Start(t, testenv.Options{Scheme: scheme, CRDDirectoryPaths: []string{testenv.BMOCRDPath(t)}})
	const hostNamespace = "hosts"
	pool.StartBMO(t, "default")
	pool.StartHostClaimBinder(t)
	pool.GrantInNamespace(t, poolNamespace, "tenant-a", testenv.HostClaimTenantRules()...)
	g.Expect(pool.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostNamespace}})).To(Succeed())
	g.Expect(pool.Client.Create(ctx, &bmov1alpha1.HostDeployPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: hostNamespace, Name: "tenants"},
		Spec:       bmov1alpha1.HostDeployPolicySpec{HostClaimNamespaces: &bmov1alpha1.HostClaimNamespaces{Names: []string{poolNamespace}}},
	})).To(Succeed())
	g.Expect(testenv.RegisterHosts(ctx, pool.Client, hostNamespace, "host", 1)).To(Succeed())
	mgmt.GrantInNamespace(t, tenantNamespace, "nobody")

	cluster, id := createTenantCluster(t, mgmt, pool, infrav1.HostModeHostClaim)
	createMachine(t, mgmt.Client, cluster, "worker-0")
	stopSource := startProvider(t, mgmt)
	source := provisionedWorker(t, mgmt)
	claimRef := source.Annotations[infrav1.HostClaimAnnotation]
	g.Expect(claimRef).To(HavePrefix(poolNamespace + "/"))
	claimKey := ctrlclient.ObjectKey{Namespace: poolNamespace, Name: claimRef[len(poolNamespace)+1:]}
	claim := &bmov1alpha1.HostClaim{}
	g.Expect(pool.Client.Get(ctx, claimKey, claim)).To(Succeed())
	g.Expect(claim.Spec.MetaData).NotTo(BeNil(), "the rendered metadata is beside the claim")
	host := &bmov1alpha1.BareMetalHost{}
	g.Expect(pool.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: hostNamespace, Name: "host-0"}, host)).To(Succeed())
	g.Expect(host.Spec.ConsumerRef).NotTo(BeNil())
	g.Expect(host.Spec.ConsumerRef.UID).To(Equal(claim.UID))

	repo := localRepository(t)
	initManagementCluster(t, mgmt, repo)
	moved := dryRunMove(t, mgmt, repo)
	t.Logf("clusterctl move would create: %v", moved)
	for _, name := range moved {
		g.Expect(name).NotTo(Or(HavePrefix("BareMetalHost/"), HavePrefix("HostClaim/"), HavePrefix("HardwareData/")),
			"nothing of the pool moves")
	}
	secrets := slices.DeleteFunc(slices.Clone(moved), func(name string) bool { return !hasKind(name, "Secret") })
	g.Expect(secrets).To(ConsistOf("Secret/"+id.Name, "Secret/worker-0-bootstrap"))

	target := startManagementCluster(t, scheme)
	initManagementCluster(t, target, repo)
	move(t, mgmt, target, repo)
	stopSource()

	cl := &clusterv1.Cluster{}
	g.Expect(target.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: tenantNamespace, Name: clusterName}, cl)).To(Succeed())
	cl.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	g.Expect(target.Client.Status().Update(ctx, cl)).To(Succeed())
	startProvider(t, target)
	key := ctrlclient.ObjectKeyFromObject(source)
	g.Eventually(func(g Gomega) {
		m := &infrav1.Metal3Machine{}
		g.Expect(target.Client.Get(ctx, key, m)).To(Succeed())
		g.Expect(m.UID).NotTo(Equal(source.UID))
		g.Expect(m.Annotations).To(HaveKeyWithValue(infrav1.HostClaimAnnotation, claimRef), "the same claim")
		g.Expect(ptr.Deref(m.Status.Initialization.Provisioned, false)).To(BeTrue())
		got := &bmov1alpha1.HostClaim{}
		g.Expect(pool.Client.Get(ctx, claimKey, got)).To(Succeed())
		g.Expect(got.Annotations).NotTo(HaveKey(hostclaim.PausedAnnotation), "the claim is not left paused")
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		got := &bmov1alpha1.HostClaim{}
		g.Expect(pool.Client.Get(ctx, claimKey, got)).To(Succeed())
		g.Expect(got.UID).To(Equal(claim.UID))
		g.Expect(equality.Semantic.DeepEqual(got.Spec, claim.Spec)).To(BeTrue(), "claim spec changed: %+v, was %+v", got.Spec, claim.Spec)
		h := &bmov1alpha1.BareMetalHost{}
		g.Expect(pool.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(host), h)).To(Succeed())
		g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateProvisioned))
		g.Expect(h.Spec.Image).To(Equal(host.Spec.Image))
		g.Expect(h.Spec.ConsumerRef.UID).To(Equal(claim.UID))
	}).WithTimeout(15*time.Second).WithPolling(time.Second).Should(Succeed(), "nothing is reprovisioned")

	moved0 := &infrav1.Metal3Machine{}
	g.Expect(target.Client.Get(ctx, key, moved0)).To(Succeed())
	g.Expect(target.Client.Delete(ctx, moved0)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(target.Client.Get(ctx, key, &infrav1.Metal3Machine{}))).To(BeTrue())
		g.Expect(apierrors.IsNotFound(pool.Client.Get(ctx, claimKey, &bmov1alpha1.HostClaim{}))).To(BeTrue(), "the claim is gone")
		h := &bmov1alpha1.BareMetalHost{}
		g.Expect(pool.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(host), h)).To(Succeed())
		g.Expect(h.Spec.ConsumerRef).To(BeNil())
		g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateAvailable))
		left := &corev1.SecretList{}
		g.Expect(pool.Client.List(ctx, left, ctrlclient.HasLabels{hostclaim.ClaimUIDLabel})).To(Succeed())
		g.Expect(left.Items).To(BeEmpty(), "no copy is left next to the host")
		g.Expect(pool.Client.List(ctx, left, ctrlclient.InNamespace(poolNamespace))).To(Succeed())
		g.Expect(left.Items).To(BeEmpty(), "no Secret of the claim is left in the tenant's namespace")
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}
