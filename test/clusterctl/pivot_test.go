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
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// startManagementCluster starts an API server with every CRD a management
// cluster of ours holds: ours, Cluster API's (core, kubeadm), the IP address
// managers' and cert-manager's (so clusterctl init does not download it).
func startManagementCluster(t *testing.T, scheme *runtime.Scheme) *testenv.Env {
	t.Helper()
	return testenv.Start(t, testenv.Options{
		Scheme: scheme,
		CRDs:   testenv.ProviderCRDs(t),
		CRDDirectoryPaths: append([]string{testenv.CAPICRDPath(t), testenv.IPAMCRDPath(t), testenv.CertManagerCRDPath(t)},
			testenv.CAPIKubeadmCRDPaths(t)...),
	})
}

// move runs `clusterctl move` of the tenant's namespace from one management
// cluster to another: every cluster of the namespace. clusterctl moves only
// clusters whose control plane is initialized and whose machines have
// nodes; Cluster API's controllers, which do not run here, would report
// both, so the test does.
func move(t *testing.T, from, to *testenv.Env, repo *repository) {
	t.Helper()
	ctx := context.Background()
	clusters := &clusterv1.ClusterList{}
	if err := from.Client.List(ctx, clusters, ctrlclient.InNamespace(tenantNamespace)); err != nil {
		t.Fatal(err)
	}
	for i := range clusters.Items {
		cluster := &clusters.Items[i]
		cluster.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
		conditions.Set(cluster, metav1.Condition{
			Type: clusterv1.ClusterControlPlaneInitializedCondition, Status: metav1.ConditionTrue, Reason: clusterv1.ClusterControlPlaneInitializedReason,
		})
		if err := from.Client.Status().Update(ctx, cluster); err != nil {
			t.Fatal(err)
		}
	}
	machines := &clusterv1.MachineList{}
	if err := from.Client.List(ctx, machines, ctrlclient.InNamespace(tenantNamespace)); err != nil {
		t.Fatal(err)
	}
	for i := range machines.Items {
		machine := &machines.Items[i]
		machine.Status.NodeRef = clusterv1.MachineNodeReference{Name: machine.Name}
		if err := from.Client.Status().Update(ctx, machine); err != nil {
			t.Fatal(err)
		}
	}

	dropUnservedWebhooks(t, from)
	dropUnservedWebhooks(t, to)

	clusterctlLogged.Lock()
	defer clusterctlLogged.Unlock()
	c := newClusterctl(t, repo.config(t))
	if err := c.Move(context.Background(), client.MoveOptions{
		FromKubeconfig: client.Kubeconfig{Path: from.WriteKubeconfig(t)},
		ToKubeconfig:   client.Kubeconfig{Path: to.WriteKubeconfig(t)},
		Namespace:      tenantNamespace,
	}); err != nil {
		t.Fatalf("clusterctl move: %v", err)
	}
}

// hostProvisioning is what must not change on a host while its machine is
// moved: a change to any of it means the host was, or will be,
// deprovisioned or reprovisioned.
type hostProvisioning struct {
	State       bmov1alpha1.ProvisioningState
	Consumer    *corev1.ObjectReference
	Image       *bmov1alpha1.Image
	UserData    *corev1.SecretReference
	MetaData    *corev1.SecretReference
	NetworkData *corev1.SecretReference
}

func provisioningOf(host *bmov1alpha1.BareMetalHost) hostProvisioning {
	return hostProvisioning{
		State: host.Status.Provisioning.State, Consumer: host.Spec.ConsumerRef, Image: host.Spec.Image,
		UserData: host.Spec.UserData, MetaData: host.Spec.MetaData, NetworkData: host.Spec.NetworkData,
	}
}

// assertMovedMachineKeepsItsHost checks the target side of a move: the moved
// Metal3Machine (new UID) is associated with the host its source was, the
// host keeps what it was provisioned with and is not left paused, and
// deleting the machine there returns the host to available with none of our
// Secrets left in the pool.
func assertMovedMachineKeepsItsHost(t *testing.T, target, pool *testenv.Env, source *infrav1.Metal3Machine, before *bmov1alpha1.BareMetalHost) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	key := ctrlclient.ObjectKeyFromObject(source)
	hostKey := ctrlclient.ObjectKeyFromObject(before)
	want := provisioningOf(before)

	// Status does not move: Cluster API on the target reports the cluster's
	// infrastructure again, which this test stands in for.
	cluster := &clusterv1.Cluster{}
	g.Expect(target.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: tenantNamespace, Name: clusterName}, cluster)).To(Succeed())
	g.Expect(cluster.Spec.Paused).To(Or(BeNil(), HaveValue(BeFalse())), "clusterctl resumes the cluster on the target")
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	g.Expect(target.Client.Status().Update(ctx, cluster)).To(Succeed())

	startProvider(t, target)
	moved := &infrav1.Metal3Machine{}
	g.Eventually(func(g Gomega) {
		g.Expect(target.Client.Get(ctx, key, moved)).To(Succeed())
		g.Expect(moved.UID).NotTo(Equal(source.UID), "a moved object has a new UID")
		g.Expect(moved.Annotations).To(HaveKeyWithValue(infrav1.HostAnnotation, before.Namespace+"/"+before.Name))
		g.Expect(ptr.Deref(moved.Status.Initialization.Provisioned, false)).To(BeTrue(), "the moved machine reports its host provisioned")
		host := &bmov1alpha1.BareMetalHost{}
		g.Expect(pool.Client.Get(ctx, hostKey, host)).To(Succeed())
		g.Expect(host.Annotations).NotTo(HaveKey(bmov1alpha1.PausedAnnotation), "the host is not left paused")
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

	// The host keeps its provisioning while the moved machine reconciles.
	g.Consistently(func(g Gomega) {
		host := &bmov1alpha1.BareMetalHost{}
		g.Expect(pool.Client.Get(ctx, hostKey, host)).To(Succeed())
		got := provisioningOf(host)
		g.Expect(equality.Semantic.DeepEqual(got, want)).To(BeTrue(), "host provisioning changed: %+v, was %+v", got, want)
	}).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(Succeed())

	// Cluster API deletes the Metal3Machine with its Machine; the provider
	// on the target releases the host as the source would have.
	g.Expect(target.Client.Delete(ctx, moved)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := target.Client.Get(ctx, key, &infrav1.Metal3Machine{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Metal3Machine is gone: %v", err)
		host := &bmov1alpha1.BareMetalHost{}
		g.Expect(pool.Client.Get(ctx, hostKey, host)).To(Succeed())
		g.Expect(host.Spec.ConsumerRef).To(BeNil(), "the host is released")
		g.Expect(host.Status.Provisioning.State).To(Equal(bmov1alpha1.StateAvailable))
		// The Secrets of ours next to this host (another machine's
		// host keeps its own).
		secrets := &corev1.SecretList{}
		g.Expect(pool.Client.List(ctx, secrets, ctrlclient.InNamespace(poolNamespace), ctrlclient.HasLabels{hostbinding.OwnerUIDLabel})).To(Succeed())
		left := slices.DeleteFunc(secrets.Items, func(s corev1.Secret) bool {
			return !slices.ContainsFunc(s.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == host.UID })
		})
		g.Expect(left).To(BeEmpty(), "no Secret of ours is left next to the host")
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// dropUnservedWebhooks deletes the webhook configurations clusterctl init
// installed that call a Service: they point at Services of Deployments that
// no kubelet runs here, so every call to them would fail. Our own webhooks
// are tested against these objects elsewhere (internal/webhooks,
// test/clusterctl's generate test). Configurations a test routed to a
// webhook server it runs (testenv.RouteShippedWebhooks) call a URL and stay.
func dropUnservedWebhooks(t *testing.T, env *testenv.Env) {
	t.Helper()
	ctx := context.Background()
	mutating := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	validating := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	for _, list := range []ctrlclient.ObjectList{mutating, validating} {
		if err := env.Client.List(ctx, list); err != nil {
			t.Fatal(err)
		}
	}
	var unserved []ctrlclient.Object
	for i := range mutating.Items {
		if slices.ContainsFunc(mutating.Items[i].Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.ClientConfig.Service != nil }) {
			unserved = append(unserved, &mutating.Items[i])
		}
	}
	for i := range validating.Items {
		if slices.ContainsFunc(validating.Items[i].Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool { return w.ClientConfig.Service != nil }) {
			unserved = append(unserved, &validating.Items[i])
		}
	}
	for _, obj := range unserved {
		if err := ctrlclient.IgnoreNotFound(env.Client.Delete(ctx, obj)); err != nil {
			t.Fatal(err)
		}
	}
}
