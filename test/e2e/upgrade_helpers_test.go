//go:build e2e

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

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// waitClusterctlMachinesRunning waits until the cluster has want Machines,
// each Running with a node of mgmt's workload server whose providerID is
// the Machine's, and returns them.
// guards fail the wait at once (see notForbidden).
func waitClusterctlMachinesRunning(mgmt *env.ClusterctlManagement, ns, name string, want int, guards ...func(Gomega)) []clusterv1.Machine {
	GinkgoHelper()
	var machines []clusterv1.Machine
	Eventually(func(g Gomega) {
		for _, guard := range guards {
			guard(g)
		}
		machines = framework.GetMachinesByCluster(ctx, framework.GetMachinesByClusterInput{
			Lister: mgmt.Client, ClusterName: name, Namespace: ns,
		})
		g.Expect(machines).To(HaveLen(want))
		for _, m := range machines {
			g.Expect(m.Status.Phase).To(Equal(string(clusterv1.MachinePhaseRunning)), "machine %s", m.Name)
			g.Expect(m.Status.NodeRef.IsDefined()).To(BeTrue(), "machine %s has a node", m.Name)
			node := &corev1.Node{}
			g.Expect(mgmt.Workload.Client.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, node)).To(Succeed())
			g.Expect(node.Spec.ProviderID).NotTo(BeEmpty())
			g.Expect(node.Spec.ProviderID).To(Equal(m.Spec.ProviderID), "node %s", node.Name)
		}
	}, intervals("wait-machines-running")...).Should(Succeed())
	return machines
}

func namesOf(machines []clusterv1.Machine) []string {
	names := make([]string, 0, len(machines))
	for _, m := range machines {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	return names
}

// metal3MachineHosts is the host (namespace/name) each Metal3Machine of ns
// records, by Metal3Machine, read unstructured: upstream's objects too.
func metal3MachineHosts(c client.Client, ns string) map[string]string {
	GinkgoHelper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(infrav1.GroupVersion.String())
	list.SetKind("Metal3MachineList")
	Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	out := map[string]string{}
	for _, m := range list.Items {
		host := m.GetAnnotations()[infrav1.HostAnnotation]
		Expect(host).NotTo(BeEmpty(), "Metal3Machine %s has a host", m.GetName())
		out[m.GetName()] = host
	}
	return out
}

// watchMachinesRunning polls the cluster's Machines until the returned
// function is called, and then returns every moment it saw the Machines
// be other than names, each Running with a node.
func watchMachinesRunning(c client.Client, ns, cluster string, names []string) (stop func() []string) {
	watchCtx, cancel := context.WithCancel(context.Background())
	var (
		mu       sync.Mutex
		problems []string
	)
	record := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 50 {
			problems = append(problems, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
		}
	}
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		ticker := time.NewTicker(500 * time.Millisecond)
		defer ticker.Stop()
		for {
			machines := &clusterv1.MachineList{}
			// A failed read is no observation: only what was read counts.
			if err := c.List(watchCtx, machines, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster}); err == nil {
				seen := make([]string, 0, len(machines.Items))
				for _, m := range machines.Items {
					seen = append(seen, m.Name)
					if m.Status.Phase != string(clusterv1.MachinePhaseRunning) || !m.Status.NodeRef.IsDefined() || !m.DeletionTimestamp.IsZero() {
						record("machine %s: phase %s, node %q, deleting %v", m.Name, m.Status.Phase, m.Status.NodeRef.Name, !m.DeletionTimestamp.IsZero())
					}
				}
				slices.Sort(seen)
				if !slices.Equal(seen, names) {
					record("machines %v, want %v", seen, names)
				}
			}
			select {
			case <-watchCtx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	return func() []string {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(problems)
	}
}

// killWhenScaledDown ends manager as its Pod would end once `clusterctl
// upgrade` scales its Deployment to zero (or deletes or replaces it), and
// closes the returned channel then.
func killWhenScaledDown(c client.Client, manager *testenv.Process) <-chan struct{} {
	GinkgoHelper()
	key := client.ObjectKey{Namespace: "capm3-system", Name: "capm3-controller-manager"}
	original := &appsv1.Deployment{}
	Expect(c.Get(ctx, key, original)).To(Succeed())
	Expect(ptr.Deref(original.Spec.Replicas, 1)).NotTo(BeZero())
	killed := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(killed)
		deadline := time.Now().Add(10 * time.Minute)
		for time.Now().Before(deadline) {
			d := &appsv1.Deployment{}
			err := c.Get(ctx, key, d)
			if apierrors.IsNotFound(err) || (err == nil && (d.UID != original.UID || ptr.Deref(d.Spec.Replicas, 1) == 0)) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = manager.Kill()
	}()
	return killed
}

func expectConditionTrue(g Gomega, conditions []metav1.Condition, conditionType, what string) {
	i := slices.IndexFunc(conditions, func(c metav1.Condition) bool { return c.Type == conditionType })
	g.Expect(i).NotTo(Equal(-1), "%s has condition %s", what, conditionType)
	c := conditions[i]
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s condition %s: %s: %s", what, conditionType, c.Reason, c.Message)
}

// ourCRDs are the provider's CRDs on c.
func ourCRDs(g Gomega, c client.Client) []apiextensionsv1.CustomResourceDefinition {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	g.Expect(c.List(ctx, crds)).To(Succeed())
	var ours []apiextensionsv1.CustomResourceDefinition
	for _, crd := range crds.Items {
		if crd.Spec.Group == infrav1.GroupVersion.Group {
			ours = append(ours, crd)
		}
	}
	// Upstream's nine kinds and Metal3ClusterIdentity.
	g.Expect(ours).To(HaveLen(10))
	return ours
}

// expectServedInBothVersions lists every kind of ours in ns (cluster-wide
// for cluster-scoped kinds) as v1beta1 and as v1beta2, through the
// conversion webhook of the manager, and wants the same objects, counts[kind]
// of them for the kinds it names. Each of those is then read as v1beta1
// and written back unchanged, as a client still on v1beta1 would: the
// object must read the same in v1beta2 afterwards.
func expectServedInBothVersions(c client.Client, ns string, counts map[string]int) {
	GinkgoHelper()
	list := func(kind, version string, namespaced bool) []unstructured.Unstructured {
		objects := &unstructured.UnstructuredList{}
		objects.SetAPIVersion(infrav1.GroupVersion.Group + "/" + version)
		objects.SetKind(kind + "List")
		var opts []client.ListOption
		if namespaced {
			opts = append(opts, client.InNamespace(ns))
		}
		Expect(c.List(ctx, objects, opts...)).To(Succeed(), "list %s as %s", kind, version)
		return objects.Items
	}
	for _, crd := range ourCRDs(Default, c) {
		kind := crd.Spec.Names.Kind
		namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
		names := map[string][]string{}
		var current []unstructured.Unstructured
		for _, version := range []string{"v1beta1", "v1beta2"} {
			objects := list(kind, version, namespaced)
			for _, obj := range objects {
				Expect(obj.GetAPIVersion()).To(Equal(infrav1.GroupVersion.Group+"/"+version), "%s %s", kind, obj.GetName())
				names[version] = append(names[version], obj.GetName())
			}
			slices.Sort(names[version])
			current = objects
		}
		Expect(names["v1beta1"]).To(Equal(names["v1beta2"]), "%s: the same objects in both versions", kind)
		want, named := counts[kind]
		if !named {
			continue
		}
		Expect(current).To(HaveLen(want), "%s objects", kind)
		for i := range current {
			key := client.ObjectKeyFromObject(&current[i])
			Eventually(func(g Gomega) {
				before := &unstructured.Unstructured{}
				before.SetAPIVersion(infrav1.GroupVersion.String())
				before.SetKind(kind)
				g.Expect(c.Get(ctx, key, before)).To(Succeed())
				old := &unstructured.Unstructured{}
				old.SetAPIVersion(infrav1.GroupVersion.Group + "/v1beta1")
				old.SetKind(kind)
				g.Expect(c.Get(ctx, key, old)).To(Succeed())
				g.Expect(old.GetResourceVersion()).To(Equal(before.GetResourceVersion()), "%s %s changed meanwhile", kind, key.Name)
				g.Expect(c.Update(ctx, old)).To(Succeed(), "%s %s written back as v1beta1", kind, key.Name)
				after := &unstructured.Unstructured{}
				after.SetAPIVersion(infrav1.GroupVersion.String())
				after.SetKind(kind)
				g.Expect(c.Get(ctx, key, after)).To(Succeed())
				g.Expect(after.Object["spec"]).To(Equal(before.Object["spec"]), "%s %s: v1beta2 spec after a v1beta1 round trip", kind, key.Name)
				g.Expect(after.GetLabels()).To(Equal(before.GetLabels()), "%s %s: labels after a v1beta1 round trip", kind, key.Name)
				g.Expect(after.GetAnnotations()).To(Equal(before.GetAnnotations()), "%s %s: annotations after a v1beta1 round trip", kind, key.Name)
			}).Should(Succeed())
		}
	}
}

// crdMigrationObserved is the annotation Cluster API's CRD migrator writes
// on each CRD it handled: the generation it observed.
const crdMigrationObserved = "crd-migration.cluster.x-k8s.io/observed-generation"

// expectCRDsMigrated waits for the manager's storage migration: every CRD
// of ours stores v1beta2 alone, and Cluster API's migrator observed the
// upgraded generation of each (Metal3Data's, which it cannot find, is
// the provider's own migration's).
func expectCRDsMigrated(c client.Client) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for _, crd := range ourCRDs(g, c) {
			g.Expect(crd.Status.StoredVersions).To(Equal([]string{"v1beta2"}), crd.Name)
			if crd.Name == "metal3datas."+infrav1.GroupVersion.Group {
				continue
			}
			g.Expect(crd.Annotations).To(HaveKeyWithValue(crdMigrationObserved, strconv.FormatInt(crd.Generation, 10)), crd.Name)
		}
	}, intervals("wait-machines-running")...).Should(Succeed())
}

// expectNothingLeft waits until nothing of the deleted cluster is left in
// ns: no Machine, no object of ours, no address claimed. The templates,
// which Cluster API gives the Cluster as owner, are deleted as the garbage
// collector (not running here) would, and must go too.
func expectNothingLeft(c client.Client, ns string) {
	GinkgoHelper()
	for _, kind := range []string{"Metal3MachineTemplate", "Metal3DataTemplate"} {
		templates := &unstructured.UnstructuredList{}
		templates.SetAPIVersion(infrav1.GroupVersion.String())
		templates.SetKind(kind + "List")
		Expect(c.List(ctx, templates, client.InNamespace(ns))).To(Succeed())
		for i := range templates.Items {
			Expect(client.IgnoreNotFound(c.Delete(ctx, &templates.Items[i]))).To(Succeed())
		}
	}
	Eventually(func(g Gomega) {
		for _, gvk := range []struct{ apiVersion, kind string }{
			{"cluster.x-k8s.io/v1beta2", "Machine"},
			{infrav1.GroupVersion.String(), "Metal3Cluster"},
			{infrav1.GroupVersion.String(), "Metal3Machine"},
			{infrav1.GroupVersion.String(), "Metal3MachineTemplate"},
			{infrav1.GroupVersion.String(), "Metal3DataTemplate"},
			{infrav1.GroupVersion.String(), "Metal3Data"},
			{infrav1.GroupVersion.String(), "Metal3DataClaim"},
			{"ipam.metal3.io/v1alpha1", "IPClaim"},
			{"ipam.metal3.io/v1alpha1", "IPAddress"},
			{ipamv1.GroupVersion.String(), "IPAddressClaim"},
			{ipamv1.GroupVersion.String(), "IPAddress"},
		} {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion(gvk.apiVersion)
			list.SetKind(gvk.kind + "List")
			g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			var left []string
			for _, obj := range list.Items {
				left = append(left, obj.GetName())
			}
			g.Expect(left).To(BeEmpty(), "%s left in %s", gvk.kind, ns)
		}
	}, intervals("wait-deleted")...).Should(Succeed())
}

// scaleWorkers sets the replicas of the cluster's MachineDeployment.
func scaleWorkers(c client.Client, ns, name string, replicas int32) {
	GinkgoHelper()
	md := &clusterv1.MachineDeployment{}
	Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-workers"}, md)).To(Succeed())
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = ptr.To(replicas)
	Expect(c.Patch(ctx, md, patch)).To(Succeed())
}

// notForbidden is a guard for waits on the provider: it stops the wait at
// once, failing it, when the API server whose audit log is at auditLog
// refused the provider's ServiceAccount anything since since (a permission
// its release's RBAC lacks), rather than let the wait time out.
func notForbidden(auditLog string, since time.Time) func(Gomega) {
	return func(g Gomega) {
		forbidden, err := forbiddenSince(auditLog, testenv.ProviderUser, since)
		g.Expect(err).NotTo(HaveOccurred())
		if len(forbidden) > 0 {
			StopTrying(fmt.Sprintf("the provider's ServiceAccount was refused (403 Forbidden): %v", forbidden)).Now()
		}
	}
}

// forbiddenSince lists the requests of user that the API server whose
// audit log is at path answered 403 Forbidden, received from since on.
func forbiddenSince(path, user string, since time.Time) ([]string, error) {
	events, err := testenv.ReadAuditLog(path)
	if err != nil {
		return nil, err
	}
	var forbidden []string
	for i := range events {
		e := &events[i]
		if !e.Counted() || e.Code() != http.StatusForbidden || e.User.Username != user || e.RequestReceivedTimestamp.Before(since) {
			continue
		}
		what := e.Resource()
		if e.ObjectRef != nil {
			what += " " + e.ObjectRef.Namespace + "/" + e.ObjectRef.Name
		}
		forbidden = append(forbidden, fmt.Sprintf("%s %s", e.Verb, what))
	}
	return forbidden, nil
}

// dumpOnFailure registers, for when the spec fails, a description of every
// object of the cluster on mgmt's server and of its workload cluster's
// Nodes: what each is waiting for.
func dumpOnFailure(mgmt *env.ClusterctlManagement, ns string) {
	diagnoseOnFailure(mgmt.Name, mgmt.Client, ns)
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			describeNodes(mgmt.Workload.Client)
		}
	})
}

// resyncMachinesAwaitingNodes stands in for Cluster API's periodic resync
// (every ten minutes) while upstream CAPM3 provisions: upstream gives a
// Metal3Machine whose Machine has no bootstrap config reference its
// providerID as soon as the host is provisioned, before the host's Node
// registers, and the Node its providerID only on a later pass; Cluster API
// looks for the Node when the providerID appears, and watches Nodes only
// once the control plane is initialized, which for the first control-plane
// Machine is never: nothing makes it look again before the resync. Each
// Machine that has a providerID, no node, and whose Node now carries that
// providerID is annotated, which makes Cluster API look again.
func resyncMachinesAwaitingNodes(mgmt *env.ClusterctlManagement, ns string) func(Gomega) {
	return func(g Gomega) {
		machines := &clusterv1.MachineList{}
		g.Expect(mgmt.Client.List(ctx, machines, client.InNamespace(ns))).To(Succeed())
		nodes := &corev1.NodeList{}
		g.Expect(mgmt.Workload.Client.List(ctx, nodes)).To(Succeed())
		for i := range machines.Items {
			m := &machines.Items[i]
			if m.Spec.ProviderID == "" || m.Status.NodeRef.IsDefined() ||
				!slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return n.Spec.ProviderID == m.Spec.ProviderID }) {
				continue
			}
			patch := client.MergeFrom(m.DeepCopy())
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}
			m.Annotations["e2e.metal3.io/resync"] = time.Now().Format(time.RFC3339Nano)
			g.Expect(client.IgnoreNotFound(mgmt.Client.Patch(ctx, m, patch))).To(Succeed())
		}
	}
}
