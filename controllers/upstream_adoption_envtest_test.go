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
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	infrav1beta1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// TestAdoptWhatUpstreamCAPM3Left switches a management cluster from
// upstream CAPM3 v1.12 to this provider as docs/upgrading-from-capm3.md
// says (upstream stopped, these CRDs applied, this manager started), with
// objects and hosts exactly as upstream leaves them: Metal3Machines and a
// Metal3Cluster stored by upstream's v1beta1 schema, with its conditions
// (no reason when True), hosts provisioned by the real Bare Metal Operator
// with upstream's consumerRef (no UID) and its owner reference to the
// Metal3Machine, a cluster paused with upstream's pause on its hosts, and
// one host held off by a remediation upstream had in flight.
//
// Every machine is adopted (its conditions replaced by the provider's: the
// status patches used to be refused with 422 for ever), no host's
// provisioning changes (a watch records every version), the pause is
// lifted once the cluster is unpaused, and then a machine deleted releases
// its host (deprovisioned, upstream's owner reference and reboot
// annotation gone: the garbage collector would have deleted the host, and
// the next user's host would stay off), a new machine takes a host, and
// deleting the cluster's machines releases them all.
func TestAdoptWhatUpstreamCAPM3Left(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := testScheme(t)
	// Both versions: objects upstream stored as v1beta1 are read as
	// v1beta2 through the provider's conversion webhook.
	g.Expect(infrav1beta1.AddToScheme(scheme)).To(Succeed())
	ns := testNamespace(t, "upstream")
	mgmt := upstreamManagementCluster(t, scheme)
	g.Expect(mgmt.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	startBMOWatching(t, mgmt, ns)
	enrolHosts(t, mgmt.Client, ns, "host", 3)

	// What upstream CAPM3 v1.12 left: a paused cluster, two machines on
	// provisioned hosts, the second's host held off by a remediation.
	const clusterName = "legacy"
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: clusterName},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "Metal3Cluster", Name: clusterName,
		}},
	}
	g.Expect(mgmt.Client.Create(ctx, cluster)).To(Succeed())
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	g.Expect(mgmt.Client.Status().Update(ctx, cluster)).To(Succeed())
	createUpstreamObject(t, mgmt.Client, upstreamMetal3Cluster(ns, clusterName, cluster.UID))
	machines := map[string]string{"m-0": "host-0", "m-1": "host-1"}
	for m3m, host := range machines {
		provisionAsUpstream(t, mgmt.Client, ns, clusterName, m3m, host)
	}
	g.Eventually(func(g Gomega) {
		for _, host := range machines {
			h := &bmov1alpha1.BareMetalHost{}
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: host}, h)).To(Succeed())
			g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateProvisioned), "host %s", host)
		}
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "the Bare Metal Operator provisions the hosts upstream claimed")
	// The cluster is paused (e.g. for a backup); upstream paused its hosts.
	update(t, mgmt.Client, cluster, func() { cluster.Spec.Paused = ptr.To(true) })
	for _, host := range machines {
		h := &bmov1alpha1.BareMetalHost{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: host}, h)).To(Succeed())
		update(t, mgmt.Client, h, func() {
			if h.Annotations == nil {
				h.Annotations = map[string]string{}
			}
			h.Annotations[bmov1alpha1.PausedAnnotation] = "metal3.io/capm3"
			if host == "host-1" {
				// A remediation's power-off, upstream's key.
				h.Annotations[infrav1.UpstreamRemediationRebootAnnotationPrefix+"8b3c1f8e-0d7e-4c59-9d53-3d3f5f0c2a11"] = `{"mode":"hard"}`
			}
		})
	}

	// The switch: this provider's CRDs, then its controllers.
	installProviderCRDs(t, mgmt)
	recorder := recordHostProvisioning(t, mgmt, scheme, ns)
	startControllers(t, mgmt, scheme)

	m3mReady := func(g Gomega, name string) *infrav1.Metal3Machine {
		m3m := &infrav1.Metal3Machine{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m3m)).To(Succeed())
		for _, cond := range m3m.Status.Conditions {
			g.Expect(cond.Reason).NotTo(BeEmpty(), "condition %s", cond.Type)
			g.Expect(metal3MachineConditions).To(ContainElement(cond.Type), "only the provider's conditions")
		}
		g.Expect(conditions.IsTrue(m3m, infrav1.ReadyCondition)).To(BeTrue(), "%v", m3m.Status.Conditions)
		g.Expect(conditions.IsTrue(m3m, infrav1.HostProvisionedCondition)).To(BeTrue())
		return m3m
	}
	g.Eventually(func(g Gomega) {
		for name := range machines {
			m3m := &infrav1.Metal3Machine{}
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m3m)).To(Succeed())
			g.Expect(conditions.IsTrue(m3m, clusterv1.PausedCondition)).To(BeTrue(), "%v", m3m.Status.Conditions)
			g.Expect(conditions.Get(m3m, "AssociateBMH")).To(BeNil(), "upstream's conditions are dropped")
		}
	}).WithTimeout(30*time.Second).Should(Succeed(), "the paused machines say so: their status is written")

	update(t, mgmt.Client, cluster, func() { cluster.Spec.Paused = nil })
	g.Eventually(func(g Gomega) {
		for name, host := range machines {
			m3m := m3mReady(g, name)
			g.Expect(m3m.Spec.ProviderID).To(Equal("metal3://" + ns + "/" + host + "/" + name))
			h := &bmov1alpha1.BareMetalHost{}
			g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: host}, h)).To(Succeed())
			g.Expect(h.Annotations).NotTo(HaveKey(bmov1alpha1.PausedAnnotation), "the pause upstream set is lifted with the cluster's")
			g.Expect(h.OwnerReferences).To(BeEmpty(), "upstream's owner reference, which would have the host deleted with the machine, is gone")
		}
		m3c := &infrav1.Metal3Cluster{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: clusterName}, m3c)).To(Succeed())
		g.Expect(conditions.IsTrue(m3c, infrav1.ReadyCondition)).To(BeTrue(), "%v", m3c.Status.Conditions)
		g.Expect(conditions.Get(m3c, "BaremetalInfrastructureReady")).To(BeNil())
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "every machine and the cluster are adopted")
	g.Expect(recorder.changes()).To(BeEmpty(), "no host's provisioning changed while its machine was adopted")

	// Scale down: the remediated machine goes; its host is released.
	g.Expect(mgmt.Client.Delete(ctx, &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m-1"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		h := &bmov1alpha1.BareMetalHost{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "host-1"}, h)).To(Succeed())
		g.Expect(h.Spec.ConsumerRef).To(BeNil())
		g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateAvailable))
		for key := range h.Annotations {
			g.Expect(key).NotTo(HavePrefix("reboot.metal3.io/"), "no power-off left for the host's next user")
		}
		err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m-1"}, &infrav1.Metal3Machine{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "the host is deprovisioned and released")

	// Scale up: a new machine takes a free host.
	w := workloadCluster{namespace: ns, name: clusterName}
	w.machine(t, mgmt.Client, "m-2", nil)
	g.Eventually(func(g Gomega) { m3mReady(g, "m-2") }).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

	// Deletion.
	for _, name := range []string{"m-0", "m-2"} {
		g.Expect(mgmt.Client.Delete(ctx, &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	}
	g.Expect(mgmt.Client.Delete(ctx, &infrav1.Metal3Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: clusterName}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(consumedHosts(g, mgmt.Client, ns)).To(BeEmpty())
		err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: clusterName}, &infrav1.Metal3Cluster{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), "every host is released and the cluster goes")
	hosts := &bmov1alpha1.BareMetalHostList{}
	g.Expect(mgmt.Client.List(ctx, hosts, client.InNamespace(ns))).To(Succeed())
	g.Expect(hosts.Items).To(HaveLen(3), "no host was deleted")
}

// upstreamManagementCluster is an API server for the test alone, as a
// management cluster running upstream CAPM3 v1.12 has it: Cluster API's
// and BMO's CRDs, and upstream's Metal3Machine and Metal3Cluster CRDs
// serving and storing v1beta1 only (upstream v1.13's own CRDs, whose
// v1beta1 schemas are v1.12's). The other kinds have this provider's CRDs:
// their schemas do not differ in what the test writes.
func upstreamManagementCluster(t *testing.T, scheme *runtime.Scheme) *testenv.Env {
	t.Helper()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range testenv.ProviderCRDs(t) {
		if crd.Spec.Names.Kind != "Metal3Machine" && crd.Spec.Names.Kind != "Metal3Cluster" {
			crds = append(crds, crd)
		}
	}
	for _, file := range []string{"infrastructure.cluster.x-k8s.io_metal3machines.yaml", "infrastructure.cluster.x-k8s.io_metal3clusters.yaml"} {
		data, err := os.ReadFile(filepath.Join(testenv.UpstreamCAPM3CRDPath(t), file))
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			t.Fatal(err)
		}
		var v1beta1 []apiextensionsv1.CustomResourceDefinitionVersion
		for _, v := range crd.Spec.Versions {
			if v.Name == "v1beta1" {
				v.Served, v.Storage = true, true
				v1beta1 = append(v1beta1, v)
			}
		}
		crd.Spec.Versions, crd.Spec.Conversion = v1beta1, nil
		crds = append(crds, crd)
	}
	mgmt := testenv.Start(t, testenv.Options{
		Scheme: scheme, CRDs: crds, CRDDirectoryPaths: []string{testenv.CAPICRDPath(t), testenv.BMOCRDPath(t)},
		// A local webhook server (ServeProviderWebhooks): the conversion
		// webhook of the CRDs installed at the switch.
		Webhooks: &envtest.WebhookInstallOptions{},
	})
	mgmt.ServeProviderWebhooks(t)
	return mgmt
}

// installProviderCRDs applies this provider's Metal3Machine and
// Metal3Cluster CRDs over upstream's, as `kubectl apply` of the release
// does.
func installProviderCRDs(t *testing.T, mgmt *testenv.Env) {
	t.Helper()
	ctx := context.Background()
	crdScheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(crdScheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(mgmt.Config, client.Options{Scheme: crdScheme})
	if err != nil {
		t.Fatal(err)
	}
	var ours []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range testenv.ProviderCRDs(t) {
		if crd.Spec.Names.Kind != "Metal3Machine" && crd.Spec.Names.Kind != "Metal3Cluster" {
			continue
		}
		current := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, current); err != nil {
			t.Fatal(err)
		}
		crd.ResourceVersion = current.ResourceVersion
		// As the release's CRDs, converting through the provider's
		// webhook, here served locally.
		wio := mgmt.WebhookInstallOptions
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ConversionReviewVersions: []string{"v1"},
				ClientConfig: &apiextensionsv1.WebhookClientConfig{
					URL:      ptr.To(fmt.Sprintf("https://%s/convert", net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort)))),
					CABundle: wio.LocalServingCAData,
				},
			},
		}
		if err := c.Update(ctx, crd); err != nil {
			t.Fatalf("apply CRD %s: %v", crd.Name, err)
		}
		ours = append(ours, crd)
	}
	// envtest's default wait, 10 s, is not enough for discovery to serve
	// the new version when the package's other tests load the two cores
	// (seen in a full go test ./controllers/ run).
	if err := envtest.WaitForCRDs(mgmt.Config, ours, envtest.CRDInstallOptions{Scheme: crdScheme, MaxTime: time.Minute}); err != nil {
		t.Fatal(err)
	}
}

// createUpstreamObject creates obj (upstream's v1beta1 shape), then its
// status, as upstream's controllers wrote it.
func createUpstreamObject(t *testing.T, c client.Client, obj *unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	status := obj.Object["status"]
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("create %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	obj.Object["status"] = status
	if err := c.Status().Update(ctx, obj); err != nil {
		t.Fatalf("status of %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// upstreamCondition is a condition as upstream CAPM3 v1.12 writes it
// (Cluster API's v1beta1 shape): no reason, no message when True.
func upstreamCondition(conditionType string) map[string]any {
	return map[string]any{"type": conditionType, "status": "True", "lastTransitionTime": "2026-01-02T03:04:05Z"}
}

func upstreamMetal3Cluster(namespace, name string, clusterUID any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3Cluster",
		"metadata": map[string]any{
			"namespace": namespace, "name": name,
			"labels":     map[string]any{clusterv1.ClusterNameLabel: name},
			"finalizers": []any{infrav1.Metal3ClusterFinalizer},
			"ownerReferences": []any{map[string]any{
				"apiVersion": clusterv1.GroupVersion.String(), "kind": "Cluster", "name": name, "uid": clusterUID,
			}},
		},
		"spec": map[string]any{
			"controlPlaneEndpoint": map[string]any{"host": "192.168.111.249", "port": int64(6443)},
			"cloudProviderEnabled": true,
		},
		"status": map[string]any{
			"ready":       true,
			"lastUpdated": "2026-01-02T03:04:05Z",
			"conditions":  []any{upstreamCondition("Ready"), upstreamCondition("BaremetalInfrastructureReady")},
		},
	}}
}

// provisionAsUpstream creates a Machine and its Metal3Machine, and claims
// host for it, as upstream CAPM3 v1.12 does: the host's consumerRef (no
// UID) and its owner reference to the Metal3Machine, image, user data
// Secret <machine>-user-data, cluster label; the machine's host
// annotation, provider ID and upstream's status. The Bare Metal Operator
// then provisions the host.
func provisionAsUpstream(t *testing.T, c client.Client, namespace, clusterName, name, hostName string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{clusterv1.ClusterNameLabel: clusterName}
	bootstrap := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-bootstrap", Labels: labels},
		Data:       map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
	}
	g := NewWithT(t)
	g.Expect(c.Create(ctx, bootstrap)).To(Succeed())
	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName: clusterName, Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To(bootstrap.Name)},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "Metal3Machine", Name: name},
		},
	}
	g.Expect(c.Create(ctx, machine)).To(Succeed())
	image := map[string]any{
		"url": "http://172.22.0.1/images/node.qcow2", "checksum": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"checksumType": "sha256", "format": "qcow2",
	}
	m3m := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3Machine",
		"metadata": map[string]any{
			"namespace": namespace, "name": name,
			"labels":      map[string]any{clusterv1.ClusterNameLabel: clusterName},
			"annotations": map[string]any{infrav1.HostAnnotation: namespace + "/" + hostName},
			"finalizers":  []any{infrav1.Metal3MachineFinalizer},
			"ownerReferences": []any{map[string]any{
				"apiVersion": clusterv1.GroupVersion.String(), "kind": "Machine", "name": name, "uid": string(machine.UID),
				"controller": true, "blockOwnerDeletion": true,
			}},
		},
		"spec": map[string]any{
			"image":                 image,
			"providerID":            "metal3://" + namespace + "/" + hostName + "/" + name,
			"automatedCleaningMode": "metadata",
		},
		"status": map[string]any{
			"ready":       true,
			"lastUpdated": "2026-01-02T03:04:05Z",
			"userData":    map[string]any{"name": name + "-user-data", "namespace": namespace},
			"conditions": []any{
				upstreamCondition("Ready"), upstreamCondition("AssociateBMH"), upstreamCondition("KubernetesNodeReady"),
			},
		},
	}}
	createUpstreamObject(t, c, m3m)
	userData := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-user-data", Labels: labels, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "infrastructure.cluster.x-k8s.io/v1beta1", Kind: "Metal3Machine", Name: name, UID: m3m.GetUID(),
		}}},
		Data: map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
	}
	g.Expect(c.Create(ctx, userData)).To(Succeed())
	host := &bmov1alpha1.BareMetalHost{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: hostName}, host)).To(Succeed())
	update(t, c, host, func() {
		if host.Labels == nil {
			host.Labels = map[string]string{}
		}
		host.Labels[clusterv1.ClusterNameLabel] = clusterName
		host.OwnerReferences = append(host.OwnerReferences, metav1.OwnerReference{
			APIVersion: "infrastructure.cluster.x-k8s.io/v1beta1", Kind: "Metal3Machine", Name: name, UID: m3m.GetUID(),
			Controller: ptr.To(true),
		})
		host.Spec.ConsumerRef = &corev1.ObjectReference{
			APIVersion: "infrastructure.cluster.x-k8s.io/v1beta1", Kind: "Metal3Machine", Namespace: namespace, Name: name,
		}
		host.Spec.Image = &bmov1alpha1.Image{URL: image["url"].(string), Checksum: image["checksum"].(string),
			ChecksumType: bmov1alpha1.SHA256, DiskFormat: ptr.To("qcow2")}
		host.Spec.UserData = &corev1.SecretReference{Namespace: namespace, Name: userData.Name}
		host.Spec.AutomatedCleaningMode = bmov1alpha1.CleaningModeMetadata
		host.Spec.Online = true
	})
}

// hostProvisioningRecorder keeps every version of a namespace's hosts that
// changes what they are provisioned with.
type hostProvisioningRecorder struct {
	mu       sync.Mutex
	last     map[string]upstreamHostProvisioning
	recorded []string
}

// upstreamHostProvisioning is what must not change on an adopted host:
// any change to it means the host was, or will be, deprovisioned,
// reprovisioned or powered.
type upstreamHostProvisioning struct {
	State    bmov1alpha1.ProvisioningState
	Consumer string
	Image    string
	UserData string
	Online   bool
}

func (r *hostProvisioningRecorder) changes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.recorded...)
}

// recordHostProvisioning watches ns's hosts until the test ends.
func recordHostProvisioning(t *testing.T, mgmt *testenv.Env, scheme *runtime.Scheme, ns string) *hostProvisioningRecorder {
	t.Helper()
	watcher, err := client.NewWithWatch(mgmt.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	events, err := watcher.Watch(context.Background(), &bmov1alpha1.BareMetalHostList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(events.Stop)
	r := &hostProvisioningRecorder{last: map[string]upstreamHostProvisioning{}}
	go func() {
		for e := range events.ResultChan() {
			h, ok := e.Object.(*bmov1alpha1.BareMetalHost)
			if !ok || e.Type == watch.Bookmark {
				continue
			}
			now := upstreamHostProvisioning{State: h.Status.Provisioning.State, Online: h.Spec.Online}
			if h.Spec.ConsumerRef != nil {
				now.Consumer = h.Spec.ConsumerRef.Name
			}
			if h.Spec.Image != nil {
				now.Image = h.Spec.Image.URL
			}
			if h.Spec.UserData != nil {
				now.UserData = h.Spec.UserData.Name
			}
			r.mu.Lock()
			if before, seen := r.last[h.Name]; seen && before != now {
				r.recorded = append(r.recorded, h.Name+": "+toString(before)+" -> "+toString(now))
			}
			r.last[h.Name] = now
			r.mu.Unlock()
		}
	}()
	return r
}

func toString(p upstreamHostProvisioning) string {
	data, _ := yaml.Marshal(p)
	return string(data)
}
