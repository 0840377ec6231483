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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// The remote-client cache's metrics, as the manager's metrics endpoint
// serves them.
const (
	connectedMetric  = "capm3_remote_accessors_connected"
	identitiesMetric = "capm3_remote_identities_connected"
	creationsMetric  = "capm3_remote_accessor_creations_total"
	rotationsMetric  = "capm3_remote_accessor_rotations_total"
	failuresMetric   = "capm3_remote_probe_failures_total"
	lastProbeMetric  = "capm3_remote_last_successful_probe_timestamp_seconds"
)

// metricValue reads, from the registry the manager's metrics endpoint
// serves, the series of the named metric for key (the zero key: the
// unlabelled series); nil when there is none.
func metricValue(g Gomega, name string, key identity.Key) *float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, m := range family.GetMetric() {
			label := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "identity" {
					label = l.GetValue()
				}
			}
			if key != (identity.Key{}) && label != key.String() || key == (identity.Key{}) && label != "" {
				continue
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			return &v
		}
	}
	return nil
}

// serviceAccountTenant creates an identity Secret holding a ServiceAccount
// token for the pool namespace: deleting the ServiceAccount revokes it.
func (tc *twoClusters) serviceAccountTenant(t *testing.T, account, mgmtNamespace, poolNamespace string) identity.Identity {
	t.Helper()
	mgmtNamespace, poolNamespace = tc.ns(mgmtNamespace), tc.ns(poolNamespace)
	tc.mgmt.GrantInNamespace(t, mgmtNamespace, "unused-"+account) // creates the namespace
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: account + "-kubeconfig", Namespace: mgmtNamespace},
		Data: map[string][]byte{"kubeconfig": tc.pool.ServiceAccountKubeconfig(t, poolNamespace, account, time.Hour,
			testenv.HostProviderRules()...)},
	}
	if err := tc.mgmt.Client.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	return identity.Identity{Key: identity.Key{SecretNamespace: mgmtNamespace, SecretName: secret.Name}, ObjectNamespace: mgmtNamespace}
}

// TestRemoteMetrics: each metric of the remote-client cache moves as its
// help text says, for the identity it names and no other: connections
// count up and down, creations count every accessor (a rotation's too),
// rotations count kubeconfig changes, probe failures count failed probes,
// and the last successful probe advances while probes succeed and goes
// with the connection.
func TestRemoteMetrics(t *testing.T) {
	g := NewWithT(t)
	tc := startTwoClusters(t)
	rotated := tc.tenant(t, "metrics-rotated", "metrics-rotated", "pool-metrics-rotated")
	revoked := tc.serviceAccountTenant(t, "metrics-revoked", "metrics-revoked", "pool-metrics-revoked")
	value := func(name string, key identity.Key) func(Gomega) *float64 {
		return func(g Gomega) *float64 { return metricValue(g, name, key) }
	}
	connected := func() float64 {
		v := metricValue(g, connectedMetric, identity.Key{})
		g.Expect(v).NotTo(BeNil(), "%s is registered", connectedMetric)
		return *v
	}

	// Earlier tests of the package moved the gauge: it is compared with
	// what it was before this test's identities connected.
	before := connected()
	identitiesBefore := *metricValue(g, identitiesMetric, identity.Key{})
	for _, key := range []identity.Key{rotated.Key, revoked.Key} {
		for _, name := range []string{creationsMetric, rotationsMetric, failuresMetric, lastProbeMetric} {
			g.Expect(metricValue(g, name, key)).To(BeNil(), "no %s for %s before it connects", name, key)
		}
	}

	connectedAt := float64(time.Now().Unix())
	tc.hostAccess(t, rotated)
	tc.hostAccess(t, revoked)
	g.Expect(connected()).To(Equal(before+2), "each connected identity counts once")
	g.Expect(*metricValue(g, identitiesMetric, identity.Key{})).To(Equal(identitiesBefore+2), "two identities, two connections")
	var lastProbe float64
	for _, key := range []identity.Key{rotated.Key, revoked.Key} {
		g.Expect(metricValue(g, creationsMetric, key)).To(HaveValue(Equal(1.0)), "one accessor created for %s", key)
		g.Expect(metricValue(g, rotationsMetric, key)).To(BeNil(), "no rotation of %s yet", key)
		v := metricValue(g, lastProbeMetric, key)
		g.Expect(v).To(HaveValue(BeNumerically(">=", connectedAt)), "connecting is a successful handshake for %s", key)
		g.Expect(*v).To(BeNumerically("<=", float64(time.Now().Unix())))
		lastProbe = *v
	}

	// Probes run every 500ms; the timestamp has a resolution of a second.
	g.Eventually(value(lastProbeMetric, revoked.Key)).WithTimeout(5*time.Second).Should(HaveValue(BeNumerically(">", lastProbe)),
		"successful probes advance the last successful probe")
	g.Expect(metricValue(g, failuresMetric, rotated.Key)).To(BeNil(), "no probe of a healthy server fails")
	g.Expect(metricValue(g, failuresMetric, revoked.Key)).To(BeNil(), "no probe of a healthy server fails")

	// Rotation: a new kubeconfig replaces the accessor.
	tc.pool.GrantInNamespace(t, tc.ns("pool-metrics-rotated"), "metrics-rotated-2", testenv.HostProviderRules()...)
	secret := &corev1.Secret{}
	g.Expect(tc.mgmt.Client.Get(tc.ctx, rotated.Key.Secret(), secret)).To(Succeed())
	secret.Data["kubeconfig"] = tc.pool.UserKubeconfig(t, "metrics-rotated-2", "pool", tc.ns("pool-metrics-rotated"))
	g.Expect(tc.mgmt.Client.Update(tc.ctx, secret)).To(Succeed())
	g.Eventually(func() (string, error) {
		a, err := tc.cache.HostAccess(tc.ctx, rotated)
		if err != nil {
			return "", err
		}
		return whoAmI(tc.ctx, t, a), nil
	}).WithTimeout(20 * time.Second).Should(Equal("metrics-rotated-2"))
	g.Expect(metricValue(g, rotationsMetric, rotated.Key)).To(HaveValue(Equal(1.0)), "the rotation is counted")
	g.Expect(metricValue(g, creationsMetric, rotated.Key)).To(HaveValue(Equal(2.0)), "the rotation created an accessor")
	g.Expect(connected()).To(Equal(before+2), "a rotated identity is still one connection")
	g.Expect(metricValue(g, rotationsMetric, revoked.Key)).To(BeNil(), "the other identity was not rotated")
	g.Expect(metricValue(g, creationsMetric, revoked.Key)).To(HaveValue(Equal(1.0)), "the other identity kept its accessor")

	// Revocation: the probe fails (HTTP 401) and the identity disconnects.
	g.Expect(tc.pool.Client.Delete(tc.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Namespace: tc.ns("pool-metrics-revoked"), Name: "metrics-revoked",
	}})).To(Succeed())
	g.Eventually(value(failuresMetric, revoked.Key)).WithTimeout(20*time.Second).Should(HaveValue(BeNumerically(">=", 1)),
		"the failed probe is counted")
	g.Eventually(tc.cache.ConnectedKeys).WithTimeout(10*time.Second).Should(ConsistOf(rotated.Key), "the revoked identity disconnects")
	g.Expect(connected()).To(Equal(before+1), "a disconnected identity no longer counts")
	g.Expect(metricValue(g, lastProbeMetric, revoked.Key)).To(BeNil(), "a disconnected identity reports no probe time")
	g.Expect(metricValue(g, creationsMetric, revoked.Key)).To(HaveValue(Equal(1.0)), "disconnecting creates nothing")
	g.Expect(metricValue(g, failuresMetric, rotated.Key)).To(BeNil(), "the other identity's probes still succeed")
	g.Expect(metricValue(g, lastProbeMetric, rotated.Key)).NotTo(BeNil(), "the other identity is still probed")

	// Release: nobody uses the identity any longer.
	g.Expect(tc.cache.Release(tc.ctx, rotated.Key, machine(rotated.ObjectNamespace, "gone"))).To(Succeed())
	g.Expect(tc.cache.ConnectedKeys()).To(BeEmpty())
	g.Expect(connected()).To(Equal(before), "released identities no longer count")
	g.Expect(metricValue(g, lastProbeMetric, rotated.Key)).To(BeNil(), "a released identity reports no probe time")
	g.Expect(metricValue(g, rotationsMetric, rotated.Key)).To(HaveValue(Equal(1.0)), "counters outlive the connection")
}
