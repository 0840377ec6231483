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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/workload"
)

const (
	// nodeRequeue is how often, at most, a machine looks for its Node
	// while it boots.
	nodeRequeue = 20 * time.Second
	// nodeRefWait is how often, at most, a published machine checks that
	// Cluster API has linked its Machine to the Node.
	nodeRefWait = 10 * time.Second
	// bootWaitFloor is the first wait after the host is provisioned.
	bootWaitFloor = time.Second
)

// bootWait is how long a machine whose host was provisioned at since waits
// before looking at its Node (or Cluster API's link to it) again: half the
// time since then, from bootWaitFloor up to ceiling. A Node registers
// seconds after its host boots, and is linked a moment after that: a
// machine looks often at first, as time to Running is made there, and
// less and less for a host that takes long, so that a slow boot costs a
// few reads, not one every second. An unknown since counts as long ago.
func bootWait(since, now time.Time, ceiling time.Duration) time.Duration {
	if since.IsZero() {
		return ceiling
	}
	return min(max(now.Sub(since)/2, bootWaitFloor), ceiling)
}

// provisionedSince is when the machine saw its host provisioned (zero:
// not known).
func provisionedSince(m3m *infrav1.Metal3Machine) time.Time {
	if c := conditions.Get(m3m, infrav1.HostProvisionedCondition); c != nil && c.Status == metav1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// nodeLink is how far the machine's Node is from Cluster API linking it
// to the Machine, as far as reconcileNode could tell.
type nodeLink struct {
	// publishable: the providerID may be published, as the Node carries
	// it, or a cloud provider (or no workload access at all) sets it
	// instead.
	publishable bool
	// seen: the Node was found, carrying the providerID.
	seen bool
}

// reconcileNode does what the provider owes the machine's workload Node:
// its providerID when the cluster runs no cloud provider (CAPI matches
// Nodes to Machines by it), and the host labels under the Metal3Cluster's
// label-sync prefixes. Workload clients come from workload.Clusters, which
// judges the cluster's kubeconfig as the tenant input it is; the machine's
// WorkloadClusterReachable condition says how that went.
func (r *Metal3MachineReconciler) reconcileNode(ctx context.Context, s *machineScope, host *hostbinding.Host) (ctrl.Result, nodeLink, error) {
	if r.WorkloadClusters == nil {
		return ctrl.Result{}, nodeLink{publishable: true}, nil
	}
	m3c, err := s.metal3Cluster()
	if err != nil {
		return ctrl.Result{}, nodeLink{}, err
	}
	cloudProvider := cloudProviderEnabled(m3c)
	// Until the Node is found, a cloud provider is trusted to set the
	// providerID.
	unseen := nodeLink{publishable: cloudProvider}
	prefixes := r.labelSyncPrefixes(ctx, m3c, s.m3m)
	if cloudProvider && len(prefixes) == 0 {
		conditions.Delete(s.m3m, infrav1.WorkloadClusterReachableCondition)
		return ctrl.Result{}, unseen, nil
	}
	nodeName := s.machine.Status.NodeRef.Name
	if cloudProvider && nodeName == "" {
		// The cloud provider gives the Node its providerID and Cluster API
		// links it to the Machine: its labels are synced from then on.
		return ctrl.Result{RequeueAfter: nodeRequeue}, unseen, nil
	}
	clusterKey := client.ObjectKeyFromObject(s.cluster)
	workloadClient, err := r.WorkloadClusters.Client(ctx, clusterKey)
	if err != nil {
		we, ok := workload.AsError(err)
		if !ok {
			return ctrl.Result{}, unseen, err
		}
		r.reportWorkload(ctx, s.m3m, we)
		ctrl.LoggerFrom(ctx).Info("Cannot reach the workload cluster to reconcile the machine's Node", "reason", we.Reason, "message", we.Message)
		return ctrl.Result{RequeueAfter: max(nodeRequeue, r.WorkloadClusters.RetryAfter(clusterKey))}, unseen, nil
	}
	r.reportWorkload(ctx, s.m3m, nil)
	// The machine's recorded provider ID: a machine upstream CAPM3
	// provisioned may record its legacy metal3://<host UID>, which its
	// Node carries.
	providerID := host.MachineProviderID(s.m3m)
	query := workload.NodeQuery{NodeName: nodeName, ProviderID: providerID}
	if !cloudProvider {
		query.HostUID = string(host.UID)
		if hw := host.Hardware; hw != nil && hw.Hostname != "" {
			query.Hostnames = []string{hw.Hostname}
		}
	}
	node, err := workload.FindNode(ctx, workloadClient, query)
	if err != nil {
		if !errors.Is(err, workload.ErrAmbiguousNode) {
			r.reportWorkload(ctx, s.m3m, workload.Classify(clusterKey, err))
		}
		return ctrl.Result{}, unseen, fmt.Errorf("find the workload Node of host %s: %w", host, err)
	}
	if node == nil {
		return ctrl.Result{RequeueAfter: bootWait(provisionedSince(s.m3m), time.Now(), nodeRequeue)}, unseen, nil
	}
	before := node.DeepCopy()
	if !cloudProvider {
		switch node.Spec.ProviderID {
		case providerID:
		case "":
			node.Spec.ProviderID = providerID
		default:
			// spec.providerID is immutable once set; someone else set it.
			return ctrl.Result{}, nodeLink{}, fmt.Errorf("node %s has providerID %q, not %q", node.Name, node.Spec.ProviderID, providerID)
		}
	}
	// The tenant's view of the host (hostbinding.Host.Labels): no label
	// quoting its BMC reaches the Node, whatever prefixes the tenant's
	// Metal3Cluster names.
	labelsChanged := workload.SyncLabels(node, host.Labels, prefixes)
	if node.Spec.ProviderID != before.Spec.ProviderID || labelsChanged {
		if err := workloadClient.Patch(ctx, node, client.MergeFrom(before)); err != nil {
			r.reportWorkload(ctx, s.m3m, workload.Classify(clusterKey, err))
			return ctrl.Result{}, nodeLink{}, fmt.Errorf("update workload node %s: %w", node.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Updated the machine's Node", "node", klog.KObj(node), "providerID", node.Spec.ProviderID,
			"syncedLabelPrefixes", strings.Join(prefixes, ","))
	}
	return ctrl.Result{}, nodeLink{publishable: true, seen: true}, nil
}

// reportWorkload sets the machine's WorkloadClusterReachable condition
// from we (nil: reached), with an Event when it changes.
func (r *Metal3MachineReconciler) reportWorkload(ctx context.Context, m3m *infrav1.Metal3Machine, we *workload.Error) {
	cond := workloadCondition(we)
	cond.ObservedGeneration = m3m.Generation
	recordWorkloadTransition(ctx, r.Recorder, m3m, conditions.Get(m3m, infrav1.WorkloadClusterReachableCondition), cond)
	conditions.Set(m3m, cond)
}

// workloadCondition is the WorkloadClusterReachable condition of we: True
// when nil, else False with its reason and message (the provider's words,
// never what a server answered).
func workloadCondition(we *workload.Error) metav1.Condition {
	if we == nil {
		return metav1.Condition{Type: infrav1.WorkloadClusterReachableCondition, Status: metav1.ConditionTrue,
			Reason: infrav1.WorkloadClusterReachableReason}
	}
	return metav1.Condition{Type: infrav1.WorkloadClusterReachableCondition, Status: metav1.ConditionFalse,
		Reason: we.Reason, Message: we.Message}
}

// cloudProviderEnabled reads the Metal3Cluster's setting as upstream CAPM3
// does: a cloud provider sets the Nodes' providerID only when
// cloudProviderEnabled=true or the deprecated noCloudProvider=false says
// so; unset means none does, and the provider sets it. A Cluster whose
// infrastructure is not a Metal3Cluster is left to its own provider.
func cloudProviderEnabled(m3c *infrav1.Metal3Cluster) bool {
	if m3c == nil {
		return true
	}
	if m3c.Spec.CloudProviderEnabled != nil {
		return *m3c.Spec.CloudProviderEnabled
	}
	return false
}

// labelSyncPrefixes are the Metal3Cluster's label-sync prefixes; invalid
// ones are reported on the machine and skipped.
func (r *Metal3MachineReconciler) labelSyncPrefixes(ctx context.Context, m3c *infrav1.Metal3Cluster, m3m *infrav1.Metal3Machine) []string {
	if m3c == nil {
		return nil
	}
	prefixes, invalid := workload.LabelSyncPrefixes(m3c.Annotations)
	if len(invalid) > 0 {
		msg := fmt.Sprintf("Metal3Cluster %s annotation %s: %q are not DNS subdomains; labels under them are not synced",
			m3c.Name, workload.LabelSyncPrefixesAnnotation, invalid)
		ctrl.LoggerFrom(ctx).Info(msg)
		if r.Recorder != nil {
			r.Recorder.Eventf(m3m, m3c, corev1.EventTypeWarning, "InvalidLabelSyncPrefix", "SyncNodeLabels", "%s", msg)
		}
	}
	return prefixes
}

// awaitNodeRef keeps a machine whose Node was seen carrying its providerID
// reconciled until Cluster API links the Machine to the Node, and asks
// Cluster API to look again when it looked and missed. A Node never seen
// (a cloud provider's to label, or not booted) costs no write.
//
// Cluster API's Machine controller looks the Node up by providerID in its
// cache of the workload cluster, once per event on the Machine or the
// Metal3Machine, and does not retry a miss: it waits for a Node event,
// but watches Nodes only once the control plane is initialized. This
// provider sets the Node's providerID a moment before publishing it, so a
// lookup whose cache is that moment behind, or a Node that registered
// again meanwhile, would leave the first control-plane Machine (and so the
// whole cluster) waiting forever. A new status.lastUpdated is an event on
// the Metal3Machine, on which Cluster API looks again.
func awaitNodeRef(ctx context.Context, s *machineScope, published string, result ctrl.Result, now time.Time) ctrl.Result {
	machine := s.machine
	if machine.Status.NodeRef.IsDefined() || !machine.DeletionTimestamp.IsZero() {
		return result
	}
	wait := bootWait(provisionedSince(s.m3m), now, nodeRefWait)
	lastUpdated := s.m3m.Status.LastUpdated
	lookedAndMissed := published != "" && machine.Spec.ProviderID == published
	if lookedAndMissed && (lastUpdated == nil || now.Sub(lastUpdated.Time) >= wait) {
		ctrl.LoggerFrom(ctx).Info("Cluster API has not linked the Machine to its Node yet; asking it to look again",
			"machine", klog.KObj(machine), "providerID", published)
		s.m3m.Status.LastUpdated = &metav1.Time{Time: now}
	}
	if result.RequeueAfter == 0 || result.RequeueAfter > wait {
		result.RequeueAfter = wait
	}
	return result
}
