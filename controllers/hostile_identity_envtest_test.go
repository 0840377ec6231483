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
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// TestHostileIdentityBesideAProvisioningTenant plays a tenant whose
// cluster's identity points at an API server of its own, on an address
// the policy allows, that answers every check and then streams distinct
// hosts with 64 KiB annotations without end, hoping to grow the provider's
// cache until the manager is OOM-killed and every tenant with it. Another
// tenant provisions a machine with the real Bare Metal Operator meanwhile.
// The hostile identity is cut off at its budget (8 MiB here) and its
// cluster says LimitExceeded; the other tenant's machine provisions as if
// nothing happened. The provider's memory under the default budget, over
// minutes, is measured by `make bench-scale` (scenario "hostile").
func TestHostileIdentityBesideAProvisioningTenant(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	good, hostileNS := testNamespace(t, "tenant-good"), testNamespace(t, "tenant-hostile")
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	mgmt.GrantInNamespace(t, good, "nobody")
	mgmt.GrantInNamespace(t, hostileNS, "nobody")
	startBMOWatching(t, mgmt, good)
	enrolHosts(t, mgmt.Client, good, "host", 1)

	remote := testRemoteOptions()
	remote.MaxCachedBytes = 8 << 20
	remote.MinBackoff, remote.MaxBackoff = time.Minute, time.Minute // one stream in this test
	startControllersWith(t, mgmt, scheme, fixtureOptions{remote: remote})

	hostile := testenv.StartHostileAPIServer(t, 64<<10)
	g.Expect(mgmt.Client.Create(ctx, testenv.IdentitySecret(hostileNS, "own-server", hostile.Kubeconfig("hosts")))).To(Succeed())
	hostileCluster := workloadCluster{namespace: hostileNS, name: "hostile", identityRef: &infrav1.IdentityRef{Name: "own-server"}}
	hostileCluster.create(t, mgmt.Client)
	hostileMachine := hostileCluster.machine(t, mgmt.Client, "greedy", nil)

	goodCluster := workloadCluster{namespace: good, name: "good"}
	goodCluster.create(t, mgmt.Client)
	goodMachine := goodCluster.machine(t, mgmt.Client, "worker", nil)

	hostileM3C := &infrav1.Metal3Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: hostileNS, Name: "hostile"}}
	g.Eventually(func(g Gomega) {
		got := &infrav1.Metal3Cluster{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(hostileM3C), got)).To(Succeed())
		cond := conditions.Get(got, infrav1.IdentityReadyCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(infrav1.IdentityLimitExceededReason))
		g.Expect(cond.Message).To(ContainSubstring("--remote-max-cached-bytes"), "it names the flag an admin would raise")
	}).WithTimeout(60*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), "the hostile identity is cut off at its budget")
	g.Expect(hostile.Streamed.Load()).To(BeNumerically(">=", remote.MaxCachedBytes/(64<<10)), "because of what it sent")

	g.Eventually(func(g Gomega) {
		hosts := consumedHosts(g, mgmt.Client, good)
		g.Expect(hosts).To(HaveKey(good + "/worker"))
		g.Expect(hosts[good+"/worker"].Status.Provisioning.State).To(Equal(bmov1alpha1.StateProvisioned))
		got := &infrav1.Metal3Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(goodMachine), got)).To(Succeed())
		g.Expect(ptr.Deref(got.Status.Initialization.Provisioned, false)).To(BeTrue())
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "the other tenant's machine provisions alongside")

	got := &infrav1.Metal3Machine{}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(hostileMachine), got)).To(Succeed())
	g.Expect(got.Annotations).NotTo(HaveKey(infrav1.HostAnnotation), "the hostile tenant's machine took none of the hosts it streamed")
	g.Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(mgmt.Client.List(ctx, events, client.InNamespace(hostileNS))).To(Succeed())
		reasons := map[string]bool{}
		for _, e := range events.Items {
			reasons[e.Reason] = true
		}
		g.Expect(reasons).To(HaveKey("Identity" + infrav1.IdentityLimitExceededReason))
	}).WithTimeout(10*time.Second).Should(Succeed(), "an Event says so on the tenant's objects")
}
