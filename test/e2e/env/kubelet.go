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

package env

import (
	"context"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/controllers"
	"github.com/metal3-io/cluster-api-provider-metal3/internal/testenv"
)

// startKubelet stands in for the kubelet of every host until t ends: a host
// the Bare Metal Operator reports provisioned boots a node, which registers
// with the workload cluster as kubelet would with the template's
// configuration (named after the host, labelled with the host's UID, Ready);
// a host that is no longer provisioned has no node.
func startKubelet(t testenv.T, workload client.Client, hostClusters ...client.Client) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(pollInterval)
		defer ticker.Stop()
		for {
			syncNodes(ctx, workload, hostClusters)
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// syncNodes makes the workload's Nodes match the provisioned hosts of every
// cluster holding hosts. Errors (a pool that is down, a conflict) are left
// to the next round; while a cluster cannot be read, no node is removed.
func syncNodes(ctx context.Context, workload client.Client, hostClusters []client.Client) {
	running, complete := map[string]bool{}, true
	for _, c := range hostClusters {
		hosts := &bmov1alpha1.BareMetalHostList{}
		if err := c.List(ctx, hosts); err != nil {
			// Its hosts keep their nodes; the others are still served.
			complete = false
			continue
		}
		for i := range hosts.Items {
			host := &hosts.Items[i]
			if host.Status.Provisioning.State != bmov1alpha1.StateProvisioned || host.Spec.ConsumerRef == nil {
				continue
			}
			running[host.Name] = true
			registerNode(ctx, workload, host)
		}
	}
	if !complete {
		return
	}
	nodes := &corev1.NodeList{}
	if err := workload.List(ctx, nodes, client.HasLabels{controllers.HostUIDNodeLabel}); err != nil {
		return
	}
	for i := range nodes.Items {
		if !running[nodes.Items[i].Name] {
			_ = client.IgnoreNotFound(workload.Delete(ctx, &nodes.Items[i]))
		}
	}
}

// registerNode creates host's Node, or marks it Ready again, as kubelet's
// registration and heartbeats do.
func registerNode(ctx context.Context, workload client.Client, host *bmov1alpha1.BareMetalHost) {
	node := &corev1.Node{}
	err := workload.Get(ctx, client.ObjectKey{Name: host.Name}, node)
	switch {
	case apierrors.IsNotFound(err):
		node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   host.Name,
			Labels: map[string]string{controllers.HostUIDNodeLabel: string(host.UID)},
		}}
		if err := workload.Create(ctx, node); err != nil {
			return
		}
	case err != nil:
		return
	case node.Labels[controllers.HostUIDNodeLabel] != string(host.UID):
		// Another host of the same name (another pool namespace): its node
		// was registered first.
		return
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return
		}
	}
	now := metav1.Now()
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
	}}
	_ = workload.Status().Update(ctx, node)
}
