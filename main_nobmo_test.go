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

package main

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// TestManagerWithoutBareMetalOperator: a management cluster where every
// tenant has an identity needs no Bare Metal Operator, so the manager starts
// on one that serves no BareMetalHost API (it used to exit, looking the kind
// up for its cache). A cluster without identityRef there is told that its
// hosts' API is missing; once the operator's CRDs are installed, the same
// manager, not restarted, finds them. The manager runs as shipped: its
// ServiceAccount, RBAC and Deployment arguments. Tenants with an identity on such a
// management cluster are served end to end by the e2e move spec.
func TestManagerWithoutBareMetalOperator(t *testing.T) {
	g := NewWithT(t)
	scheme, err := newScheme()
	g.Expect(err).NotTo(HaveOccurred())
	env := testenv.Start(t, testenv.Options{
		Scheme:            scheme,
		CRDs:              testenv.ProviderCRDs(t),
		CRDDirectoryPaths: []string{testenv.CAPICRDPath(t)},
	})
	// The manager binary as its release installs it, in a process of its
	// own (run's controllers register process-wide names).
	path, err := testenv.Manager.Path()
	g.Expect(err).NotTo(HaveOccurred())
	healthAddr := testenv.FreeLoopbackAddr(t)
	env.RunShipped(t, testenv.ShippedProvider(t, nil), path, map[string]string{
		"webhook-port": "0", "health-addr": healthAddr, "diagnostics-address": "0",
	})
	g.Eventually(func() (int, error) {
		code, _, err := httpStatus("http://" + healthAddr + "/readyz")
		return code, err
	}).WithTimeout(60*time.Second).WithPolling(200*time.Millisecond).
		Should(Equal(200), "the manager runs without the BareMetalHost CRD")
	ctx := context.Background()

	const namespace, name = "tenant-incluster", "incluster"
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "Metal3Cluster", Name: name,
		}},
	}
	g.Expect(env.Client.Create(ctx, cluster)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &infrav1.Metal3Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: name, UID: cluster.UID,
		}}},
		Spec: infrav1.Metal3ClusterSpec{ControlPlaneEndpoint: infrav1.APIEndpoint{Host: "192.168.111.249", Port: 6443}},
	})).To(Succeed())

	identityReady := func(g Gomega) *metav1.Condition {
		m3c := &infrav1.Metal3Cluster{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, m3c)).To(Succeed())
		cond := conditions.Get(m3c, infrav1.IdentityReadyCondition)
		g.Expect(cond).NotTo(BeNil())
		return cond
	}
	g.Eventually(func(g Gomega) {
		cond := identityReady(g)
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(infrav1.IdentityHostAPINotServedReason))
		g.Expect(cond.Message).To(ContainSubstring("serves no BareMetalHost API (metal3.io/v1alpha1)"))
		g.Expect(cond.Message).To(ContainSubstring("identityRef"))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{testenv.BMOCRDPath(t)}, Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		cond := identityReady(g)
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cond.Reason, cond.Message)
		g.Expect(cond.Reason).To(Equal(infrav1.IdentityInClusterReason))
	}).WithTimeout(60*time.Second).Should(Succeed(), "the CRDs installed later are found without a restart")
}
