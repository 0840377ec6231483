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
	"errors"
	"fmt"
	"strings"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/remediation"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/workload"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// lookupFoundLabel is synced from the host to the Node the Metal3Machine
// controller found, which is how the test tells which one it was.
const lookupFoundLabel = "lookup.test.metal3.io/found"

// TestNodeLookupOfMachineAndRemediation pins how the two callers of
// workload.FindNode find a machine's workload Node, on one workload API
// server: the Metal3Machine controller (reconcileNode, which gives the
// Node its providerID and labels) and a remediation (its Manager, which
// saves the Node before deleting it). Both find the same Node by nodeRef,
// providerID and host UID label; only the Metal3Machine controller, which
// links a Node the first time, also takes it by hostname. More than one
// match is an error naming them all, in both: nothing is written to any
// Node, and the remediation saves and deletes none.
func TestNodeLookupOfMachineAndRemediation(t *testing.T) {
	ctx := context.Background()
	scheme := testScheme(t)
	mgmt := managementCluster(t, scheme, withHosts)
	ns := testNamespace(t, "node-lookup")
	mgmt.GrantInNamespace(t, ns, "nobody") // creates the namespace
	wl := testenv.Start(t, testenv.Options{Scheme: scheme})
	createWorkloadKubeconfig(t, mgmt.Client, ns, "cluster-a", wl)
	opts := testWorkloadOptions()
	opts.SecretMetadata, opts.SecretReader, opts.Scheme = mgmt.Client, mgmt.Client, scheme
	clusters, err := workload.NewClusters(opts)
	if err != nil {
		t.Fatal(err)
	}
	r := &Metal3MachineReconciler{Client: mgmt.Client, WorkloadClusters: clusters}
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-a"}}
	// No cloud provider: the provider links Nodes itself, as upstream CAPM3
	// does by default, and syncs the test's label to the Node it found.
	m3c := &infrav1.Metal3Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-a",
			Annotations: map[string]string{workload.LabelSyncPrefixesAnnotation: "lookup.test.metal3.io"}},
		Spec: infrav1.Metal3ClusterSpec{CloudProviderEnabled: ptr.To(false)},
	}

	// Each case has its own names (its prefix p) on the shared server:
	// host p-host with UID p-uid, machine p whose providerID is pid.
	type nodeSpec struct {
		name, providerID  string
		hostUID, hostname bool
	}
	tests := []struct {
		name    string
		nodeRef string
		nodes   []nodeSpec
		// machine and remediation: the Node each finds ("" none), or
		// the candidates an ambiguity error names.
		machine, remediation string
		ambiguous            []string
	}{
		{name: "by nodeRef", nodeRef: "a", nodes: []nodeSpec{{name: "a"}}, machine: "a", remediation: "a"},
		{name: "by providerID", nodes: []nodeSpec{{name: "a", providerID: "pid"}}, machine: "a", remediation: "a"},
		{name: "by the host UID label", nodes: []nodeSpec{{name: "a", hostUID: true}}, machine: "a", remediation: "a"},
		{name: "an earlier machine's Node on the same host is not this one's", nodes: []nodeSpec{
			{name: "old", providerID: "other", hostUID: true}, {name: "new", hostUID: true},
		}, machine: "new", remediation: "new"},
		{name: "a nodeRef carrying another providerID falls back to the label", nodeRef: "ref", nodes: []nodeSpec{
			{name: "ref", providerID: "other"}, {name: "a", hostUID: true},
		}, machine: "a", remediation: "a"},
		{name: "by hostname: the Metal3Machine controller only", nodes: []nodeSpec{{name: "a", hostname: true}},
			machine: "a", remediation: ""},
		{name: "none", nodes: []nodeSpec{{name: "stranger"}}},
		{name: "ambiguous: two Nodes labelled with the host UID", nodes: []nodeSpec{
			{name: "a", hostUID: true}, {name: "b", hostUID: true},
		}, ambiguous: []string{"a", "b"}},
		{name: "ambiguous: two Nodes carrying the providerID", nodes: []nodeSpec{
			{name: "a", providerID: "pid"}, {name: "b", providerID: "pid"},
		}, ambiguous: []string{"a", "b"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fmt.Sprintf("case-%d", i)
			pid := "metal3://" + ns + "/" + p + "-host/" + p
			hostUID := types.UID(p + "-uid")
			var created []*corev1.Node
			for _, spec := range tt.nodes {
				node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: p + "-" + spec.name, Labels: map[string]string{}}}
				switch spec.providerID {
				case "pid":
					node.Spec.ProviderID = pid
				case "other":
					node.Spec.ProviderID = "metal3://" + ns + "/" + p + "-host/" + p + "-earlier"
				}
				if spec.hostUID {
					node.Labels[pool.HostUIDLabel] = string(hostUID)
				}
				if spec.hostname {
					node.Labels[corev1.LabelHostname] = p + "-host"
				}
				if err := wl.Client.Create(ctx, node); err != nil {
					t.Fatal(err)
				}
				created = append(created, node)
			}
			prefixed := func(name string) string {
				if name == "" {
					return ""
				}
				return p + "-" + name
			}
			machine := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p}}
			machine.Status.NodeRef.Name = prefixed(tt.nodeRef)
			m3m := &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p},
				Spec: infrav1.Metal3MachineSpec{ProviderID: pid}}
			wantAmbiguous := func(t *testing.T, who string, err error) {
				t.Helper()
				if !errors.Is(err, workload.ErrAmbiguousNode) {
					t.Fatalf("%s: err = %v, want ErrAmbiguousNode", who, err)
				}
				for _, name := range tt.ambiguous {
					if !strings.Contains(err.Error(), prefixed(name)) {
						t.Errorf("%s: %q does not name candidate %s", who, err, prefixed(name))
					}
				}
			}

			// The remediation first: it writes nothing to Nodes before it
			// deletes one, which is the step it is taken to here (the
			// Node's deletion chosen already; the out-of-service taint
			// finds its Node the same way).
			m3r := &infrav1.Metal3Remediation{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p, Annotations: map[string]string{
					infrav1.RemediationNodeStrategyAnnotation: infrav1.RemediationNodeDeletion,
				}},
				Spec: infrav1.Metal3RemediationSpec{Strategy: &infrav1.RemediationStrategy{
					Type: infrav1.RebootRemediationStrategy, RetryLimit: 1,
				}},
				Status: infrav1.Metal3RemediationStatus{Phase: infrav1.RemediationPhaseRunning, RetryCount: 1},
			}
			host := &poweredOffHost{uid: hostUID}
			target := &remediation.Target{Machine: machine, M3Machine: m3m}
			manager := &remediation.Manager{
				Remediation: m3r, Host: host, Machine: unhealthyMachine{},
				Nodes: remediation.WorkloadNodes(func(context.Context) (client.Client, error) {
					return clusters.Client(ctx, client.ObjectKeyFromObject(cluster))
				}, nil, remediationNodeQuery(target, host)),
			}
			_, err := manager.Reconcile(ctx)
			_, saved := m3r.Annotations[infrav1.RemediationNodeBackupAnnotation]
			switch {
			case len(tt.ambiguous) > 0:
				wantAmbiguous(t, "remediation", err)
				if errors.Is(err, remediation.ErrWorkloadUnreachable) {
					t.Errorf("remediation: an ambiguity is reported as an unreachable cluster: %v", err)
				}
				if saved || m3r.Status.Phase != infrav1.RemediationPhaseRunning {
					t.Errorf("remediation went on (phase %s, Node saved %t) though it could not tell its Node", m3r.Status.Phase, saved)
				}
			case err != nil:
				t.Fatalf("remediation: %v", err)
			case tt.remediation == "":
				if saved {
					t.Errorf("remediation saved a Node: %s", m3r.Annotations[infrav1.RemediationNodeBackupAnnotation])
				}
			default:
				want := nodeNamed(created, prefixed(tt.remediation))
				if !strings.Contains(m3r.Annotations[infrav1.RemediationNodeBackupAnnotation], string(want.UID)) {
					t.Errorf("remediation saved %q, want Node %s (%s)", m3r.Annotations[infrav1.RemediationNodeBackupAnnotation], want.Name, want.UID)
				}
			}

			// Then the Metal3Machine controller, which links the Node.
			s := &machineScope{
				cluster: cluster, machine: machine, m3m: m3m,
				metal3Cluster: func() (*infrav1.Metal3Cluster, error) { return m3c, nil },
			}
			bound := &hostbinding.Host{
				NamespacedName: types.NamespacedName{Namespace: ns, Name: p + "-host"}, UID: hostUID,
				Hardware: &bmov1alpha1.HardwareDetails{Hostname: p + "-host"},
				Labels:   map[string]string{lookupFoundLabel: "true"},
			}
			_, link, err := r.reconcileNode(ctx, s, bound)
			var linked []string
			for _, node := range created {
				got := &corev1.Node{}
				if err := wl.Client.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
					t.Fatal(err)
				}
				if got.Labels[lookupFoundLabel] != "" || (node.Spec.ProviderID == "" && got.Spec.ProviderID != "") {
					linked = append(linked, got.Name)
				}
			}
			switch {
			case len(tt.ambiguous) > 0:
				wantAmbiguous(t, "Metal3Machine", err)
				if len(linked) > 0 {
					t.Errorf("Metal3Machine: Nodes %v were written though it could not tell its Node", linked)
				}
			case err != nil:
				t.Fatalf("Metal3Machine: %v", err)
			case tt.machine == "":
				if link.seen || len(linked) > 0 {
					t.Errorf("Metal3Machine: found %v, want none", linked)
				}
			default:
				if !link.seen || len(linked) != 1 || linked[0] != prefixed(tt.machine) {
					t.Errorf("Metal3Machine: linked %v (seen %t), want %s", linked, link.seen, prefixed(tt.machine))
				}
			}
		})
	}
}

func nodeNamed(nodes []*corev1.Node, name string) *corev1.Node {
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	return &corev1.Node{}
}

// poweredOffHost is a host the remediation asked to power off and that
// is off: the next step saves and deletes the machine's Node.
type poweredOffHost struct{ uid types.UID }

func (h *poweredOffHost) String() string                      { return "pool/" + string(h.uid) }
func (h *poweredOffHost) UID() types.UID                      { return h.uid }
func (h *poweredOffHost) PoweredOn() bool                     { return false }
func (h *poweredOffHost) RebootRequested() bool               { return true }
func (h *poweredOffHost) RequestReboot(context.Context) error { return nil }
func (h *poweredOffHost) ReleaseReboot(context.Context) error { return nil }
func (h *poweredOffHost) MarkUnhealthy(context.Context) error { return nil }

// unhealthyMachine is a Machine the MachineHealthCheck finds unhealthy,
// neither deleting nor remediated before.
type unhealthyMachine struct{}

func (unhealthyMachine) Unhealthy() bool                                  { return true }
func (unhealthyMachine) Deleting() bool                                   { return false }
func (unhealthyMachine) Replaceable() bool                                { return true }
func (unhealthyMachine) RequestReplacement(context.Context, string) error { return nil }
func (unhealthyMachine) PreviousRemediation() (remediation.History, bool) {
	return remediation.History{}, false
}
func (unhealthyMachine) RecordRemediation(context.Context, remediation.History) error { return nil }
