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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
)

const (
	// HostUIDNodeLabel is the label the node's image sets from the host's
	// metadata (metal3.io/uuid = BareMetalHost UID), how a Node is matched
	// to its host when no cloud provider does it.
	HostUIDNodeLabel = "metal3.io/uuid"
	// nodeRequeue is how often a machine looks for its Node while it boots.
	nodeRequeue = 20 * time.Second
)

// setNodeProviderID writes the machine's provider ID on its workload Node
// when the cluster runs no cloud provider: CAPI matches Nodes to Machines by
// provider ID. Workload clients come from CAPI's ClusterCache. nodeHasIt
// is true once nothing is left for the provider to do: the Node carries
// the provider ID, or a cloud provider (or no workload access at all) sets
// it instead.
func (r *Metal3MachineReconciler) setNodeProviderID(ctx context.Context, s *machineScope, host *hostbinding.Host) (_ ctrl.Result, nodeHasIt bool, _ error) {
	if r.ClusterCache == nil {
		return ctrl.Result{}, true, nil
	}
	enabled, err := r.cloudProviderEnabled(ctx, s.cluster)
	if err != nil || enabled {
		return ctrl.Result{}, enabled, err
	}
	workload, err := r.ClusterCache.GetClient(ctx, client.ObjectKeyFromObject(s.cluster))
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("Workload cluster not reachable yet to set the Node's providerID", "reason", err.Error())
		return ctrl.Result{RequeueAfter: nodeRequeue}, false, nil
	}
	nodes := &corev1.NodeList{}
	if err := workload.List(ctx, nodes, client.MatchingLabels{HostUIDNodeLabel: string(host.UID)}); err != nil {
		return ctrl.Result{}, false, fmt.Errorf("list workload Nodes of host %s/%s: %w", host.Namespace, host.Name, err)
	}
	if len(nodes.Items) == 0 {
		return ctrl.Result{RequeueAfter: nodeRequeue}, false, nil
	}
	node := &nodes.Items[0]
	providerID := ptr.Deref(s.m3m.Spec.ProviderID, "")
	if node.Spec.ProviderID == providerID {
		return ctrl.Result{}, true, nil
	}
	if node.Spec.ProviderID != "" {
		// spec.providerID is immutable once set; someone else set it.
		return ctrl.Result{}, false, fmt.Errorf("node %s has providerID %q, not %q", node.Name, node.Spec.ProviderID, providerID)
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Spec.ProviderID = providerID
	if err := workload.Patch(ctx, node, patch); err != nil {
		return ctrl.Result{}, false, fmt.Errorf("set providerID of node %s: %w", node.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Set the Node's providerID", "node", klog.KObj(node), "providerID", providerID)
	return ctrl.Result{}, true, nil
}

// cloudProviderEnabled reads the Metal3Cluster's setting: enabled unless
// cloudProviderEnabled=false or the deprecated noCloudProvider=true.
func (r *Metal3MachineReconciler) cloudProviderEnabled(ctx context.Context, cluster *clusterv1.Cluster) (bool, error) {
	ref := cluster.Spec.InfrastructureRef
	if ref.Kind != "Metal3Cluster" || ref.Name == "" {
		return true, nil
	}
	m3c := &infrav1.Metal3Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: ref.Name}, m3c); err != nil {
		return true, fmt.Errorf("get Metal3Cluster %s/%s: %w", cluster.Namespace, ref.Name, err)
	}
	if m3c.Spec.CloudProviderEnabled != nil {
		return *m3c.Spec.CloudProviderEnabled, nil
	}
	if m3c.Spec.NoCloudProvider != nil { //nolint:staticcheck // the deprecated field still counts when the webhook did not translate it
		return !*m3c.Spec.NoCloudProvider, nil //nolint:staticcheck // as above
	}
	return true, nil
}
