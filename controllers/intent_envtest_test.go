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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// TestHostIntendedWithTheFinalizer: a machine's first write carries its
// finalizer, its consumer ID and the host it is about to claim; the status
// written after the claim confirms it. Two writes of the machine per
// association, where recording the host after the claim took three. A
// machine that finds an intent (its reconcile crashed after writing it)
// claims that host; one whose intended host went to someone else claims
// another, and its record follows.
func TestHostIntendedWithTheFinalizer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := testNamespace(t, "intent")
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	startControllers(t, mgmt, scheme)
	mgmt.GrantInNamespace(t, ns, "nobody")
	cluster := workloadCluster{namespace: ns, name: "cluster-a"}
	cluster.create(t, mgmt.Client)
	availableHosts(t, mgmt.Client, ns, "host", 5)

	watcher, err := client.NewWithWatch(mgmt.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	machineEvents, err := watcher.Watch(ctx, &infrav1.Metal3MachineList{}, client.InNamespace(ns))
	g.Expect(err).NotTo(HaveOccurred())
	defer machineEvents.Stop()

	// The versions of machine name until its association is confirmed.
	versionsUntilAssociated := func(name string) []*infrav1.Metal3Machine {
		var versions []*infrav1.Metal3Machine
		timeout := time.After(30 * time.Second)
		for {
			select {
			case e := <-machineEvents.ResultChan():
				m, ok := e.Object.(*infrav1.Metal3Machine)
				if !ok || m.Name != name || e.Type == watch.Deleted {
					continue
				}
				versions = append(versions, m)
				if conditions.IsTrue(m, infrav1.HostAssociatedCondition) {
					return versions
				}
			case <-timeout:
				t.Fatalf("machine %s not associated in 30s; versions seen: %d", name, len(versions))
			}
		}
	}
	hostOf := func(name string) string {
		var consumed string
		g.Eventually(func(g Gomega) {
			hosts := consumedHosts(g, mgmt.Client, ns)
			g.Expect(hosts).To(HaveKey(ns + "/" + name))
			host := hosts[ns+"/"+name]
			consumed = host.Namespace + "/" + host.Name
		}).WithTimeout(10 * time.Second).Should(Succeed())
		return consumed
	}

	t.Run("a fresh machine: two writes, the first naming its host", func(t *testing.T) {
		g := NewWithT(t)
		cluster.machine(t, mgmt.Client, "fresh", nil)
		versions := versionsUntilAssociated("fresh")
		g.Expect(versions).To(HaveLen(3), "created, then the finalizer with the intended host, then the confirming status")
		first := versions[1]
		g.Expect(first.Finalizers).To(ContainElement(infrav1.Metal3MachineFinalizer))
		g.Expect(first.Annotations).To(HaveKeyWithValue(infrav1.ConsumerIDAnnotation, string(first.UID)))
		g.Expect(first.Annotations).To(HaveKeyWithValue(infrav1.HostAnnotation, hostOf("fresh")), "the host it then claimed")
		g.Expect(first.Annotations).To(HaveKey(clusterctlv1.BlockMoveAnnotation), "a host about to be claimed holds clusterctl move back")
		g.Expect(infrav1.HostRecordConfirmed(first)).To(BeFalse(), "an intent until the claim")
		confirmed := versions[2]
		g.Expect(confirmed.Annotations).To(Equal(first.Annotations), "the claim adds nothing to the machine's metadata")
		g.Expect(infrav1.HostRecordConfirmed(confirmed)).To(BeTrue())
		g.Expect(conditions.Get(confirmed, infrav1.HostProvisionedCondition)).NotTo(BeNil(), "set with the association, it keeps the record confirmed")
	})

	t.Run("intents left by a crash before the claim are resumed", func(t *testing.T) {
		g := NewWithT(t)
		// Every free host is some machine's intent: whatever order the
		// pool ranks them in, each machine takes the one it intends.
		hosts := &bmov1alpha1.BareMetalHostList{}
		g.Expect(mgmt.Client.List(ctx, hosts, client.InNamespace(ns))).To(Succeed())
		var free []string
		for _, h := range hosts.Items {
			if h.Spec.ConsumerRef == nil {
				free = append(free, h.Namespace+"/"+h.Name)
			}
		}
		g.Expect(free).To(HaveLen(4))
		for i, host := range free[:3] {
			name := fmt.Sprintf("resumed-%d", i)
			cluster.machine(t, mgmt.Client, name, func(m *infrav1.Metal3Machine) {
				m.Annotations = map[string]string{infrav1.HostAnnotation: host}
			})
			versionsUntilAssociated(name)
			g.Expect(hostOf(name)).To(Equal(host), "machine %s takes the host it intended", name)
		}
	})

	t.Run("an intended host someone else took: another, and the record follows", func(t *testing.T) {
		g := NewWithT(t)
		taken := &bmov1alpha1.BareMetalHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"},
			Spec: bmov1alpha1.BareMetalHostSpec{BootMACAddress: "00:5c:52:31:3b:01", ConsumerRef: &corev1.ObjectReference{
				Kind: "Metal3Machine", Namespace: "tenant-b", Name: "worker-9", UID: "uid-worker-9",
			}},
		}
		g.Expect(mgmt.Client.Create(ctx, taken)).To(Succeed())
		setHostState(t, mgmt.Client, taken, bmov1alpha1.StateAvailable)
		cluster.machine(t, mgmt.Client, "redirected", func(m *infrav1.Metal3Machine) {
			m.Annotations = map[string]string{infrav1.HostAnnotation: ns + "/taken"}
		})
		versions := versionsUntilAssociated("redirected")
		got := versions[len(versions)-1]
		g.Expect(got.Annotations[infrav1.HostAnnotation]).To(Equal(hostOf("redirected")))
		g.Expect(got.Annotations[infrav1.HostAnnotation]).NotTo(Equal(ns+"/taken"), "the record follows the claim")
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(taken), taken)).To(Succeed())
		g.Expect(taken.Spec.ConsumerRef.Name).To(Equal("worker-9"), "the other consumer keeps its host")
	})
}
