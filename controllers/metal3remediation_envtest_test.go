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

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// TestRemediationReportsWhatItCannotFind: a remediation whose Machine,
// Metal3Machine or host is missing says which in its HostFound condition,
// touches nothing, and goes when deleted.
func TestRemediationReportsWhatItCannotFind(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := testNamespace(t, "remediation")
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	startControllers(t, mgmt, scheme)
	mgmt.GrantInNamespace(t, ns, "nobody") // creates the namespace
	cluster := workloadCluster{namespace: ns, name: "cluster-a"}
	cluster.create(t, mgmt.Client)

	// A Machine whose Metal3Machine was never created.
	g.Expect(mgmt.Client.Create(ctx, &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-infra", Labels: map[string]string{clusterv1.ClusterNameLabel: "cluster-a"}},
		Spec: clusterv1.MachineSpec{
			ClusterName: "cluster-a", Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To("none")},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "Metal3Machine", Name: "no-infra",
			},
		},
	})).To(Succeed())
	// A machine with no host: the namespace has none.
	cluster.machine(t, mgmt.Client, "no-host", nil)

	for name, want := range map[string]struct{ reason, names string }{
		"no-machine": {infrav1.RemediationMachineNotFoundReason, "Machine " + ns + "/no-machine"},
		"no-infra":   {infrav1.RemediationMetal3MachineNotFoundReason, "Metal3Machine " + ns + "/no-infra"},
		"no-host":    {infrav1.RemediationHostNotAssociatedReason, "Metal3Machine " + ns + "/no-host"},
	} {
		m3r := &infrav1.Metal3Remediation{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: "cluster-a"}},
			Spec: infrav1.Metal3RemediationSpec{Strategy: &infrav1.RemediationStrategy{
				Type: infrav1.RebootRemediationStrategy, RetryLimit: 1, TimeoutSeconds: 100,
			}},
		}
		g.Expect(mgmt.Client.Create(ctx, m3r)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3r), m3r)).To(Succeed())
			cond := conditions.Get(m3r, infrav1.RemediationHostFoundCondition)
			g.Expect(cond).NotTo(BeNil(), "remediation %s reports on its host", name)
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(want.reason), "remediation %s: %s", name, cond.Message)
			g.Expect(cond.Message).To(ContainSubstring(want.names))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		g.Expect(m3r.Status.Phase).To(BeEmpty(), "remediation %s started nothing", name)
		g.Expect(m3r.Status.RetryCount).To(BeZero())
		g.Expect(m3r.Finalizers).To(ContainElement(infrav1.Metal3RemediationFinalizer))

		g.Expect(mgmt.Client.Delete(ctx, m3r)).To(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(m3r), m3r))
		}).WithTimeout(30*time.Second).Should(BeTrue(), "remediation %s goes when deleted", name)
	}
}
