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
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// TestReleaseTrustsThePool plays a tenant against its own objects, with the
// real Bare Metal Operator provisioning and cleaning the hosts (the
// management API server here serves no webhooks, as if the tenant had got
// past them):
//   - it rewrites its provisioned machine's host record to a host that
//     does not exist, and deletes the machine to leave its host provisioned
//     with its data forever; the provider finds the host by its consumerRef
//     and deprovisions and releases it all the same;
//   - that machine disabled automated cleaning, to hand the next tenant
//     disks nobody wiped; its host is deprovisioned with the pool's
//     cleaning mode, and the next machine gets it with that mode;
//   - a machine whose host really cannot be found keeps its finalizer,
//     saying so, until an operator says the host is lost.
func TestReleaseTrustsThePool(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := testNamespace(t, "tenant-release")
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	mgmt.GrantInNamespace(t, ns, "nobody")
	startBMOWatching(t, mgmt, ns)
	enrolHosts(t, mgmt.Client, ns, "host", 1)
	startControllers(t, mgmt, scheme)
	cluster := workloadCluster{namespace: ns, name: "cluster-a"}
	cluster.create(t, mgmt.Client)

	first := cluster.machine(t, mgmt.Client, "first", func(m *infrav1.Metal3Machine) {
		m.Spec.AutomatedCleaningMode = string(bmov1alpha1.CleaningModeDisabled)
	})
	var host bmov1alpha1.BareMetalHost
	g.Eventually(func(g Gomega) {
		hosts := consumedHosts(g, mgmt.Client, ns)
		g.Expect(hosts).To(HaveKey(ns + "/first"))
		host = hosts[ns+"/first"]
		g.Expect(host.Status.Provisioning.State).To(Equal(bmov1alpha1.StateProvisioned))
		g.Expect(host.Spec.AutomatedCleaningMode).To(Equal(bmov1alpha1.CleaningModeDisabled), "the machine's cleaning mode applies while it has the host")
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "the Bare Metal Operator provisions the first machine's host")

	update(t, mgmt.Client, first, func() { first.Annotations[infrav1.HostAnnotation] = ns + "/does-not-exist" })
	// Every version of the host from now on: the one the Bare Metal
	// Operator deprovisions must carry the pool's cleaning mode.
	watcher, err := client.NewWithWatch(mgmt.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	hostEvents, err := watcher.Watch(ctx, &bmov1alpha1.BareMetalHostList{}, client.InNamespace(ns),
		client.MatchingFields{"metadata.name": host.Name})
	g.Expect(err).NotTo(HaveOccurred())
	defer hostEvents.Stop()
	g.Expect(mgmt.Client.Delete(ctx, first)).To(Succeed())
	var deprovisionedWith []bmov1alpha1.AutomatedCleaningMode
	g.Eventually(func(g Gomega) {
		for drained := false; !drained; {
			select {
			case e := <-hostEvents.ResultChan():
				if h, ok := e.Object.(*bmov1alpha1.BareMetalHost); ok && h.Status.Provisioning.State == bmov1alpha1.StateDeprovisioning {
					deprovisionedWith = append(deprovisionedWith, h.Spec.AutomatedCleaningMode)
				}
			default:
				drained = true
			}
		}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(&host), &host)).To(Succeed())
		g.Expect(host.Spec.ConsumerRef).To(BeNil(), "the host the pool says the machine consumes is released")
		g.Expect(host.Status.Provisioning.State).To(Equal(bmov1alpha1.StateAvailable), "after the Bare Metal Operator deprovisioned it")
		err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(first), &infrav1.Metal3Machine{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "and the machine is gone")
	}).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(deprovisionedWith).NotTo(BeEmpty(), "the host went through deprovisioning")
	g.Expect(deprovisionedWith).To(HaveEach(bmov1alpha1.CleaningModeMetadata), "deprovisioned with the pool's cleaning mode")
	g.Expect(host.Spec.AutomatedCleaningMode).To(Equal(bmov1alpha1.CleaningModeMetadata), "the pool's cleaning mode is back")
	g.Expect(host.Annotations).NotTo(HaveKey(hostbinding.PoolCleaningModeAnnotation))
	g.Expect(host.Annotations).NotTo(HaveKey(pool.UncleanedAnnotation))
	// Upstream v1.14 no longer deletes the bootstrap provider's user-data
	// Secret on release (its owner deletes it); the provider never did:
	// it deletes only the Secrets it wrote next to a host.
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: first.Name + "-bootstrap"}, &corev1.Secret{})).To(Succeed(),
		"the machine's bootstrap data Secret outlives the machine's release")

	second := cluster.machine(t, mgmt.Client, "second", nil)
	g.Eventually(func(g Gomega) {
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(&host), &host)).To(Succeed())
		g.Expect(host.Spec.ConsumerRef).NotTo(BeNil())
		g.Expect(host.Spec.ConsumerRef.Name).To(Equal(second.Name))
		g.Expect(host.Spec.AutomatedCleaningMode).To(Equal(bmov1alpha1.CleaningModeMetadata), "the next tenant's machine gets the pool's cleaning")
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// A provisioned machine (its provider ID confirms its record) whose
	// host nobody can find: the host's BareMetalHost was deleted.
	lost := cluster.machine(t, mgmt.Client, "lost", func(m *infrav1.Metal3Machine) {
		m.Annotations = map[string]string{infrav1.HostAnnotation: ns + "/vanished"}
		m.Spec.ProviderID = "metal3://" + ns + "/vanished/lost"
	})
	g.Eventually(func() string { return associatedMessage(g, mgmt.Client, lost) }).WithTimeout(30*time.Second).Should(
		HavePrefix(infrav1.HostNotFoundReason+": "), "a machine never takes another host than the one it records")
	g.Expect(mgmt.Client.Delete(ctx, lost)).To(Succeed())
	g.Eventually(func() string { return associatedMessage(g, mgmt.Client, lost) }).WithTimeout(30*time.Second).Should(
		And(HavePrefix(infrav1.HostNotFoundReason+": "), ContainSubstring(ns+"/vanished"), ContainSubstring(infrav1.HostLostAnnotation)),
		"the deleting machine says its host cannot be found, and how to let it go")
	g.Consistently(func() error {
		return mgmt.Client.Get(ctx, client.ObjectKeyFromObject(lost), &infrav1.Metal3Machine{})
	}).WithTimeout(3*time.Second).Should(Succeed(), "it keeps its finalizer")
	update(t, mgmt.Client, lost, func() { lost.Annotations[infrav1.HostLostAnnotation] = "the BMH was deleted by the pool admin" })
	g.Eventually(func() bool {
		return apierrors.IsNotFound(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(lost), &infrav1.Metal3Machine{}))
	}).WithTimeout(30*time.Second).Should(BeTrue(), "an operator's word lets it go")
	g.Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(mgmt.Client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		reasons := map[string]bool{}
		for _, e := range events.Items {
			if e.Regarding.Name == lost.Name {
				reasons[e.Reason] = true
			}
		}
		g.Expect(reasons).To(HaveKey(infrav1.HostNotFoundReason))
		g.Expect(reasons).To(HaveKey("HostLost"))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(&host), &host)).To(Succeed())
	g.Expect(host.Spec.ConsumerRef.Name).To(Equal(second.Name), "letting the lost machine go touched no host")
}
