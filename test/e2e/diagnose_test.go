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
	"fmt"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// diagnosedKinds are the kinds whose objects a failed spec's diagnosis
// describes, in the order a cluster is built.
var diagnosedKinds = []struct{ apiVersion, kind string }{
	{"cluster.x-k8s.io/v1beta2", "Cluster"},
	{"cluster.x-k8s.io/v1beta2", "MachineDeployment"},
	{"cluster.x-k8s.io/v1beta2", "MachineSet"},
	{"cluster.x-k8s.io/v1beta2", "Machine"},
	{infrav1.GroupVersion.String(), "Metal3Cluster"},
	{infrav1.GroupVersion.String(), "Metal3Machine"},
	{infrav1.GroupVersion.String(), "Metal3MachineTemplate"},
	{infrav1.GroupVersion.String(), "Metal3DataTemplate"},
	{infrav1.GroupVersion.String(), "Metal3DataClaim"},
	{infrav1.GroupVersion.String(), "Metal3Data"},
	{"ipam.metal3.io/v1alpha1", "IPClaim"},
	{"ipam.metal3.io/v1alpha1", "IPAddress"},
	{"ipam.cluster.x-k8s.io/v1beta2", "IPAddressClaim"},
	{"ipam.cluster.x-k8s.io/v1beta2", "IPAddress"},
	{"metal3.io/v1alpha1", "BareMetalHost"},
	{"metal3.io/v1alpha1", "HostClaim"},
}

// diagnosis is what the failed spec's diagnoses found stuck; the suite
// prints it last, with the failure, where a CI log cut to its tail still
// shows it.
var diagnosis struct {
	sync.Mutex
	lines []string
	// seen: an object two diagnoses describe (the hosts of a pool two
	// clusters share) is summarised once.
	seen map[string]bool
}

// takeDiagnosis returns the lines of the spec's diagnosis and forgets them.
func takeDiagnosis() []string {
	diagnosis.Lock()
	defer diagnosis.Unlock()
	lines := diagnosis.lines
	diagnosis.lines, diagnosis.seen = nil, nil
	return lines
}

// addDiagnosis adds summary, seen from where, to the spec's diagnosis,
// unless it is there already.
func addDiagnosis(where, summary string) {
	diagnosis.Lock()
	defer diagnosis.Unlock()
	if diagnosis.seen[summary] {
		return
	}
	if diagnosis.seen == nil {
		diagnosis.seen = map[string]bool{}
	}
	diagnosis.seen[summary] = true
	diagnosis.lines = append(diagnosis.lines, where+": "+summary)
}

// diagnoseOnFailure registers, for when the spec fails, a description of
// every object in each of namespaces on the server of c, named where: the
// whole of it (status, finalizers, annotations) in the spec's output, and,
// for the failure's report, one line for each object that is being
// deleted and for each host, with what it waits for: its conditions that
// are not True and say why, its Deleting condition, a host's state and
// power.
func diagnoseOnFailure(where string, c client.Client, namespaces ...string) {
	DeferCleanup(func() {
		if !CurrentSpecReport().Failed() {
			return
		}
		for _, ns := range namespaces {
			for _, line := range describeNamespace(c, ns) {
				if line.stuck {
					addDiagnosis(where, line.summary)
				}
				fmt.Fprintf(GinkgoWriter, "%s: %s\n", where, line.detail)
			}
		}
	})
}

// describedObject is one object of a diagnosis.
type describedObject struct {
	// stuck: being deleted, or a host.
	stuck   bool
	summary string
	detail  string
}

func describeNamespace(c client.Client, ns string) []describedObject {
	var described []describedObject
	for _, gvk := range diagnosedKinds {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(gvk.apiVersion)
		list.SetKind(gvk.kind + "List")
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			// The kind is not served there (no BMO, no IPAM): nothing to say.
			continue
		}
		for i := range list.Items {
			described = append(described, describeObject(gvk.kind, &list.Items[i]))
		}
	}
	return described
}

func describeObject(kind string, obj *unstructured.Unstructured) describedObject {
	name := kind + " " + obj.GetNamespace() + "/" + obj.GetName()
	deleting := obj.GetDeletionTimestamp() != nil
	var waits []string
	if deleting {
		waits = append(waits, fmt.Sprintf("deleting, finalizers %v", obj.GetFinalizers()))
	}
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, cond := range conditions {
		m, ok := cond.(map[string]any)
		// Deleting is True with what the deletion waits for; other
		// conditions say something only when not True, with a message.
		message, _ := m["message"].(string)
		if !ok || (m["type"] != "Deleting" && (m["status"] == "True" || message == "")) {
			continue
		}
		waits = append(waits, fmt.Sprintf("%v=%v %v: %s", m["type"], m["status"], m["reason"], oneLine(message)))
	}
	if kind == "BareMetalHost" {
		state, _, _ := unstructured.NestedString(obj.Object, "status", "provisioning", "state")
		online, _, _ := unstructured.NestedBool(obj.Object, "spec", "online")
		powered, _, _ := unstructured.NestedBool(obj.Object, "status", "poweredOn")
		consumer, _, _ := unstructured.NestedString(obj.Object, "spec", "consumerRef", "name")
		errMsg, _, _ := unstructured.NestedString(obj.Object, "status", "errorMessage")
		_, hasImage, _ := unstructured.NestedMap(obj.Object, "spec", "image")
		hostWaits := fmt.Sprintf("state %q, image %v, online %v, powered on %v, consumer %q", state, hasImage, online, powered, consumer)
		if errMsg != "" {
			hostWaits += ", error " + errMsg
		}
		waits = append(waits, hostWaits)
	}
	status, _, _ := unstructured.NestedMap(obj.Object, "status")
	delete(status, "conditions")
	providerID, _, _ := unstructured.NestedString(obj.Object, "spec", "providerID")
	return describedObject{
		// A deletion waits on its hosts as much as on its objects: every
		// host is summarised.
		stuck:   deleting || kind == "BareMetalHost",
		summary: name + ": " + strings.Join(waits, "; "),
		detail: fmt.Sprintf("%s: deleting=%v finalizers=%v providerID=%q annotations=%v status=%v waits=[%s]", name,
			obj.GetDeletionTimestamp() != nil, obj.GetFinalizers(), providerID, obj.GetAnnotations(), status, strings.Join(waits, "; ")),
	}
}

// describeNodes writes every Node of the workload server of c to the
// spec's output.
func describeNodes(c client.Client) {
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		fmt.Fprintf(GinkgoWriter, "Nodes: %v\n", err)
		return
	}
	for _, n := range nodes.Items {
		fmt.Fprintf(GinkgoWriter, "Node %s: providerID=%q labels=%v conditions=%v\n", n.Name, n.Spec.ProviderID, n.Labels, n.Status.Conditions)
	}
}

// oneLine is message on one line, cut to a length a summary can hold.
func oneLine(message string) string {
	const most = 240
	message = strings.Join(strings.Fields(message), " ")
	if len(message) > most {
		return message[:most] + "…"
	}
	return message
}
