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
	"fmt"
	"slices"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// The flow's infrastructure objects are written as a user writes them in
// the v1beta2 API both providers serve (unstructured: nothing of this
// tree's types), so that both read the same manifests.

// startFlowWorkloadCluster creates the flow's cluster on mgmt: the
// workload kubeconfig Secret first, the Cluster with its Metal3Cluster
// (cloudProviderEnabled false) and the workers' Metal3MachineTemplate, and
// a control-plane Machine; it returns once the control plane is
// initialized, with the control-plane machine's host.
func startFlowWorkloadCluster(ctx context.Context, mgmt *env.Management, workload *testenv.Env, ns, name string) (string, error) {
	c := mgmt.Client
	if err := mgmt.CreateWorkloadKubeconfig(ctx, workload, ns, name); err != nil {
		return "", err
	}
	image, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&env.Image)
	if err != nil {
		return "", err
	}
	base := newClusterBase(ns, name)
	controlPlane := flowControlPlane(name)
	controlPlaneLabels := map[string]string{clusterv1.ClusterNameLabel: name, clusterv1.MachineControlPlaneLabel: ""}
	objects := []client.Object{
		base.bootstrap, base.cluster,
		flowInfraObject(ns, name, "Metal3Cluster", base.m3c.Labels, map[string]any{
			"controlPlaneEndpoint": map[string]any{"host": base.m3c.Spec.ControlPlaneEndpoint.Host, "port": int64(base.m3c.Spec.ControlPlaneEndpoint.Port)},
			"cloudProviderEnabled": false,
		}),
		flowInfraObject(ns, name+"-workers", "Metal3MachineTemplate", nil, map[string]any{
			"template": map[string]any{"spec": map[string]any{"image": image}},
		}),
		flowInfraObject(ns, controlPlane, "Metal3Machine", controlPlaneLabels, map[string]any{"image": image}),
		&clusterv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: controlPlane, Labels: controlPlaneLabels},
			Spec: clusterv1.MachineSpec{
				ClusterName: name,
				Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(name + "-bootstrap")},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: infrav1.GroupVersion.Group, Kind: "Metal3Machine", Name: controlPlane,
				},
			},
		},
	}
	if err := createAll(ctx, c, objects); err != nil {
		return "", err
	}
	if err := pollUntil(ctx, 5*time.Minute, flowPoll, "control plane initialized", func() (bool, error) {
		cluster := &clusterv1.Cluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cluster); err != nil {
			return false, err
		}
		if meta := findCondition(cluster.Status.Conditions, clusterv1.ClusterControlPlaneInitializedCondition); meta != nil && meta.Status == metav1.ConditionTrue {
			return true, nil
		}
		return false, resyncAwaitingNode(ctx, c, workload.Client, ns, controlPlane)
	}); err != nil {
		return "", err
	}
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := c.List(ctx, hosts, client.InNamespace(ns)); err != nil {
		return "", err
	}
	for i := range hosts.Items {
		if ref := hosts.Items[i].Spec.ConsumerRef; ref != nil && ref.Name == controlPlane {
			return hosts.Items[i].Name, nil
		}
	}
	return "", fmt.Errorf("no host consumed by %s", controlPlane)
}

// flowControlPlane names the control-plane Machine and Metal3Machine of
// cluster.
func flowControlPlane(cluster string) string { return cluster + "-control-plane-0" }

// resyncAwaitingNode stands in, while the control plane is set up, for
// Cluster API's periodic resync (every ten minutes): upstream gives the
// Metal3Machine its providerID before the host's Node has it, and Cluster
// API, which watches Nodes only once the control plane is initialized,
// would not look for the Node again before the resync. A Machine with a
// providerID, no nodeRef, and a Node carrying that providerID is
// annotated, which makes Cluster API look again. The workers, measured,
// are not helped: the control plane is initialized by then.
func resyncAwaitingNode(ctx context.Context, c, workload client.Client, ns, name string) error {
	machine := &clusterv1.Machine{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, machine); err != nil {
		return err
	}
	if machine.Spec.ProviderID == "" || machine.Status.NodeRef.IsDefined() {
		return nil
	}
	nodes := &corev1.NodeList{}
	if err := workload.List(ctx, nodes); err != nil {
		return err
	}
	if !slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return n.Spec.ProviderID == machine.Spec.ProviderID }) {
		return nil
	}
	patch := client.MergeFrom(machine.DeepCopy())
	if machine.Annotations == nil {
		machine.Annotations = map[string]string{}
	}
	machine.Annotations["scale.metal3.io/resync"] = time.Now().Format(time.RFC3339Nano)
	return client.IgnoreNotFound(c.Patch(ctx, machine, patch))
}

func findCondition(conditions []metav1.Condition, conditionType string) *metav1.Condition {
	for i := range conditions {
		if conditions[i].Type == conditionType {
			return &conditions[i]
		}
	}
	return nil
}

// flowInfraObject is an infrastructure object of kind in the v1beta2 API.
func flowInfraObject(ns, name, kind string, labels map[string]string, spec map[string]any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	obj.SetAPIVersion(infrav1.GroupVersion.String())
	obj.SetKind(kind)
	obj.SetNamespace(ns)
	obj.SetName(name)
	obj.SetLabels(labels)
	return obj
}

// flowWatch follows the MachineDeployment's machines until every Machine
// is Running, and records when the workload's Nodes were first seen
// registered and with a providerID.
type flowWatch struct {
	mgmt, workload client.Client
	ns, deployment string
	// controlPlane is the control-plane Metal3Machine, not measured.
	controlPlane string
	machines     int
	upstream     bool
	started      time.Time
	// converged is when every worker's Metal3Machine was first seen ready.
	converged time.Duration
	// nodes and providerIDs are when each Node was first seen, and first
	// seen with a providerID, since started.
	nodes, providerIDs map[string]time.Duration
	// running is how many Machines were Running at the last poll.
	running int
}

func newFlowWatch(mgmt, workload client.Client, ns, cluster string, machines int, upstream bool) *flowWatch {
	return &flowWatch{
		mgmt: mgmt, workload: workload, ns: ns, deployment: cluster + "-workers", controlPlane: flowControlPlane(cluster),
		machines: machines, upstream: upstream,
		started: time.Now(), nodes: map[string]time.Duration{}, providerIDs: map[string]time.Duration{},
	}
}

// poll looks once, and reports whether every Machine is Running.
func (w *flowWatch) poll(ctx context.Context) (bool, error) {
	now := time.Since(w.started)
	nodes := &corev1.NodeList{}
	if err := w.workload.List(ctx, nodes); err != nil {
		return false, err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if _, ok := w.nodes[n.Name]; !ok {
			w.nodes[n.Name] = now
		}
		if _, ok := w.providerIDs[n.Name]; !ok && n.Spec.ProviderID != "" {
			w.providerIDs[n.Name] = now
		}
	}
	selector := client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: w.deployment}
	if w.converged == 0 {
		m3ms := &unstructured.UnstructuredList{}
		m3ms.SetAPIVersion(infrav1.GroupVersion.String())
		m3ms.SetKind("Metal3MachineList")
		if err := w.mgmt.List(ctx, m3ms, client.InNamespace(w.ns)); err != nil {
			return false, err
		}
		ready := 0
		for i := range m3ms.Items {
			if m3ms.Items[i].GetName() != w.controlPlane && w.metal3MachineReady(&m3ms.Items[i]) {
				ready++
			}
		}
		if ready >= w.machines {
			w.converged = now
		}
	}
	machines := &clusterv1.MachineList{}
	if err := w.mgmt.List(ctx, machines, client.InNamespace(w.ns), selector); err != nil {
		return false, err
	}
	w.running = 0
	for i := range machines.Items {
		m := &machines.Items[i]
		if m.Status.Phase == string(clusterv1.MachinePhaseRunning) && m.Status.NodeRef.IsDefined() {
			w.running++
		}
	}
	return w.converged != 0 && w.running >= w.machines, nil
}

// metal3MachineReady is what says ready for each provider: this provider's
// Ready condition; upstream's status.initialization.provisioned (v1.13.2
// sets it once the host is provisioned and the providerID is chosen; its
// Ready condition summarises more than the machine).
func (w *flowWatch) metal3MachineReady(m3m *unstructured.Unstructured) bool {
	if w.upstream {
		provisioned, _, _ := unstructured.NestedBool(m3m.Object, "status", "initialization", "provisioned")
		return provisioned
	}
	conditions, _, _ := unstructured.NestedSlice(m3m.Object, "status", "conditions")
	for _, c := range conditions {
		if cond, ok := c.(map[string]any); ok && cond["type"] == infrav1.ReadyCondition && cond["status"] == string(metav1.ConditionTrue) {
			return true
		}
	}
	return false
}

// lastNode and lastProviderID are when the last worker's Node was seen
// registered, and seen with its providerID.
func (w *flowWatch) lastNode() time.Duration       { return latest(w.nodes) }
func (w *flowWatch) lastProviderID() time.Duration { return latest(w.providerIDs) }

func latest(seen map[string]time.Duration) time.Duration {
	var last time.Duration
	for _, at := range seen {
		last = max(last, at)
	}
	return last
}

func (w *flowWatch) String() string {
	return fmt.Sprintf("Metal3Machines ready after %s, %d of %d Machines Running, %d Nodes, %d with a providerID",
		w.converged, w.running, w.machines, len(w.nodes), len(w.providerIDs))
}
