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

package hostaccess

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// TestClusterIdentityAccess: two Metal3ClusterIdentities on one Secret, and
// the Secret named directly, share one connection, each access carrying its
// own key; an unresolved or stale key, or a namespace the identity does not
// admit, gets no access at all, whatever key the caller holds.
func TestClusterIdentityAccess(t *testing.T) {
	g := NewWithT(t)
	tc := startTwoClusters(t)
	direct := tc.tenant(t, "cluster-identity-user", "admin", "pool-shared")
	admitted, refused := tc.ns("tenant-admitted"), tc.ns("tenant-refused")
	tc.mgmt.GrantInNamespace(t, admitted, "nobody")
	tc.mgmt.GrantInNamespace(t, refused, "nobody")

	newIdentity := func(base string, secretName string) string {
		name := uniqueNamespace(base)
		g.Expect(tc.mgmt.Client.Create(context.Background(), &infrav1.Metal3ClusterIdentity{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: infrav1.Metal3ClusterIdentitySpec{
				SecretRef:         infrav1.KubeconfigSecretReference{Name: secretName, Namespace: direct.Key.SecretNamespace},
				AllowedNamespaces: &infrav1.AllowedNamespaces{List: []string{admitted}},
			},
		})).To(Succeed())
		t.Cleanup(func() {
			_ = tc.mgmt.Client.Delete(context.Background(), &infrav1.Metal3ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: name}})
		})
		return name
	}
	first, second := newIdentity("east", direct.Key.SecretName), newIdentity("east-again", direct.Key.SecretName)
	missingSecret := newIdentity("east-nosecret", "no-such-secret")

	resolve := func(name, namespace string) (identity.Identity, error) {
		var id identity.Identity
		var err error
		// The manager's cache sees the identity a moment after it is created.
		g.Eventually(func() bool {
			id, err = tc.cache.Resolve(tc.ctx, identity.Identity{Key: identity.Key{ClusterIdentity: name}, ObjectNamespace: namespace})
			ie, ok := identity.AsError(err)
			return !ok || ie.Reason != infrav1.IdentityNotFoundReason
		}).WithTimeout(10 * time.Second).Should(BeTrue())
		return id, err
	}

	viaFirst, err := resolve(first, admitted)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(viaFirst.Key).To(Equal(identity.Key{ClusterIdentity: first,
		SecretNamespace: direct.Key.SecretNamespace, SecretName: direct.Key.SecretName}))
	viaSecond, err := resolve(second, admitted)
	g.Expect(err).NotTo(HaveOccurred())

	accessFirst := tc.hostAccess(t, viaFirst)
	accessSecond := tc.hostAccess(t, viaSecond)
	accessDirect := tc.hostAccess(t, direct)
	g.Expect(accessFirst.Key()).To(Equal(viaFirst.Key), "each user sees its own identity")
	g.Expect(accessSecond.Key()).To(Equal(viaSecond.Key))
	g.Expect(accessDirect.Key()).To(Equal(direct.Key))
	g.Expect(tc.cache.ConnectedKeys()).To(ConsistOf(direct.Key), "one connection per Secret and context")
	g.Expect(accessFirst.Namespace()).To(Equal(tc.ns("pool-shared")), "the hosts are in the context's namespace")

	// No access without resolution, and none from a namespace the
	// identity does not admit, even with a key resolved for another.
	_, err = tc.cache.HostAccess(tc.ctx, identity.Identity{Key: identity.Key{ClusterIdentity: first}, ObjectNamespace: admitted})
	g.Expect(err).To(MatchError(ContainSubstring("not resolved")))
	_, err = tc.cache.HostAccess(tc.ctx, identity.Identity{Key: viaFirst.Key, ObjectNamespace: refused})
	ie, ok := identity.AsError(err)
	g.Expect(ok).To(BeTrue(), "%v", err)
	g.Expect(ie.Reason).To(Equal(infrav1.IdentityNamespaceNotAllowedReason))
	g.Expect(ie.Message).To(And(ContainSubstring(first), ContainSubstring(refused)))
	stale := viaFirst
	stale.Key.SecretName = "another-secret"
	_, err = tc.cache.HostAccess(tc.ctx, stale)
	g.Expect(err).To(MatchError(ContainSubstring("resolve it again")))
	g.Expect(tc.cache.Watch(tc.ctx, identity.Key{ClusterIdentity: first}, NewWatcher(WatcherOptions{Name: "never-started"}))).
		To(MatchError(ContainSubstring("not resolved")))

	notAdmitted, err := resolve(first, refused)
	g.Expect(notAdmitted.Key).To(Equal(identity.Key{ClusterIdentity: first}), "nothing of the Secret for a namespace not admitted")
	ie, ok = identity.AsError(err)
	g.Expect(ok).To(BeTrue())
	g.Expect(ie.Reason).To(Equal(infrav1.IdentityNamespaceNotAllowedReason))

	// A connection's failure is reported naming the identity asked for.
	viaMissing, err := resolve(missingSecret, admitted)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = tc.cache.HostAccess(tc.ctx, viaMissing)
	ie, ok = identity.AsError(err)
	g.Expect(ok).To(BeTrue(), "%v", err)
	g.Expect(ie.Reason).To(Equal(infrav1.IdentitySecretNotFoundReason))
	g.Expect(ie.Key).To(Equal(viaMissing.Key))
	g.Expect(ie.Message).To(HavePrefix("identity Metal3ClusterIdentity " + missingSecret + " (secret "))

	// Releasing through one identity keeps the connection while another
	// records using it: the users are counted per connection, in every
	// namespace.
	user := machine(admitted, "worker-0")
	g.Expect(tc.mgmt.Client.Create(tc.ctx, user)).To(Succeed())
	user.Status.Identity = identity.Status(viaSecond, accessSecond.Namespace())
	g.Expect(tc.mgmt.Client.Status().Update(tc.ctx, user)).To(Succeed())
	g.Eventually(func(g Gomega) {
		users := &infrav1.Metal3MachineList{}
		g.Expect(tc.mgr.GetCache().List(tc.ctx, users, client.MatchingFields{identity.UsedIndex: identity.UsedKey(direct.Key)})).To(Succeed())
		g.Expect(users.Items).To(HaveLen(1))
	}).Should(Succeed())
	g.Expect(tc.cache.Release(tc.ctx, viaFirst.Key, machine(admitted, "gone"))).To(Succeed())
	g.Expect(tc.cache.ConnectedKeys()).To(ConsistOf(direct.Key), "a machine in another namespace than the Secret still uses it")
	g.Expect(tc.cache.Release(tc.ctx, viaFirst.Key, user)).To(Succeed())
	g.Expect(tc.cache.ConnectedKeys()).To(BeEmpty(), "no user left")
}
