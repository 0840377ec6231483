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

package remediation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/workload"
)

// ErrNodeGone: the Node was deleted between finding and changing it.
var ErrNodeGone = errors.New("node is gone")

// NodeBackup is what a remediation saves of the Node it deletes, in its
// RemediationNodeBackupAnnotation.
type NodeBackup struct {
	// NodeUID tells the deleted Node from the one that registers after the
	// reboot under the same name.
	NodeUID     types.UID         `json:"nodeUID,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// backupOf reads the remediation's saved Node, if any.
func backupOf(r *infrav1.Metal3Remediation) (NodeBackup, bool, error) {
	raw, ok := r.Annotations[infrav1.RemediationNodeBackupAnnotation]
	if !ok {
		return NodeBackup{}, false, nil
	}
	var backup NodeBackup
	if err := json.Unmarshal([]byte(raw), &backup); err != nil {
		return NodeBackup{}, false, fmt.Errorf("annotation %s of Metal3Remediation %s/%s is not a saved Node: %w",
			infrav1.RemediationNodeBackupAnnotation, r.Namespace, r.Name, err)
	}
	return backup, true, nil
}

// saveBackup records node's labels and annotations on the remediation.
func saveBackup(r *infrav1.Metal3Remediation, node *corev1.Node) error {
	data, err := json.Marshal(NodeBackup{NodeUID: node.UID, Labels: node.Labels, Annotations: node.Annotations})
	if err != nil {
		return fmt.Errorf("save the labels and annotations of Node %s: %w", node.Name, err)
	}
	if r.Annotations == nil {
		r.Annotations = map[string]string{}
	}
	r.Annotations[infrav1.RemediationNodeBackupAnnotation] = string(data)
	return nil
}

func dropBackup(r *infrav1.Metal3Remediation) {
	delete(r.Annotations, infrav1.RemediationNodeBackupAnnotation)
}

// WorkloadClient returns a client of the workload cluster, or an error
// wrapping ErrWorkloadUnreachable.
type WorkloadClient func(ctx context.Context) (client.Client, error)

// WorkloadVersion returns the workload cluster's Kubernetes version (nil
// when its server does not tell), or an error.
type WorkloadVersion func(ctx context.Context) (*version.Info, error)

// WorkloadNodes are the Nodes the machine's query finds (its nodeRef, its
// providerID, the host's UID label: a Node that registered again after the
// reboot has no providerID yet), in the workload cluster connect reaches,
// whose version serverVersion reads (nil: never known).
func WorkloadNodes(connect WorkloadClient, serverVersion WorkloadVersion, query workload.NodeQuery) Nodes {
	return &workloadNodes{connect: connect, version: serverVersion, query: query}
}

type workloadNodes struct {
	connect WorkloadClient
	version WorkloadVersion
	query   workload.NodeQuery
}

// Find implements Nodes, as the Metal3Machine controller finds its Node.
func (n *workloadNodes) Find(ctx context.Context) (*corev1.Node, error) {
	c, err := n.connect(ctx)
	if err != nil {
		return nil, err
	}
	node, err := workload.FindNode(ctx, c, n.query)
	if err != nil && !errors.Is(err, workload.ErrAmbiguousNode) {
		return nil, fmt.Errorf("%w: %w", ErrWorkloadUnreachable, err)
	}
	return node, err
}

// Delete implements Nodes.
func (n *workloadNodes) Delete(ctx context.Context, node *corev1.Node) error {
	c, err := n.connect(ctx)
	if err != nil {
		return err
	}
	// The UID precondition keeps a Node registered meanwhile under the
	// same name from being deleted in its place.
	err = c.Delete(ctx, node, client.Preconditions{UID: &node.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Node %s: %w", node.Name, err)
	}
	return nil
}

// Restore implements Nodes.
func (n *workloadNodes) Restore(ctx context.Context, node *corev1.Node, backup NodeBackup) error {
	c, err := n.connect(ctx)
	if err != nil {
		return err
	}
	before := node.DeepCopy()
	node.Labels = mergeMissing(node.Labels, backup.Labels)
	node.Annotations = mergeMissing(node.Annotations, backup.Annotations)
	if err := c.Patch(ctx, node, client.MergeFrom(before)); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("restore Node %s: %w", node.Name, ErrNodeGone)
		}
		return fmt.Errorf("restore the labels and annotations of Node %s: %w", node.Name, err)
	}
	return nil
}

// mergeMissing adds to current the entries of saved whose keys it lacks.
func mergeMissing(current, saved map[string]string) map[string]string {
	if len(saved) == 0 {
		return current
	}
	if current == nil {
		current = map[string]string{}
	}
	for k, v := range saved {
		if _, ok := current[k]; !ok {
			current[k] = v
		}
	}
	return current
}

// Version implements Nodes; any error is the workload cluster's being
// unreachable (retried), never a reason to guess the version.
func (n *workloadNodes) Version(ctx context.Context) (*version.Info, error) {
	if n.version == nil {
		return nil, nil
	}
	info, err := n.version(ctx)
	if err != nil && !errors.Is(err, ErrWorkloadUnreachable) {
		return nil, fmt.Errorf("%w: read its Kubernetes version: %w", ErrWorkloadUnreachable, err)
	}
	return info, err
}

// Taint implements Nodes.
func (n *workloadNodes) Taint(ctx context.Context, node *corev1.Node) error {
	return n.changeTaints(ctx, node, func(taints []corev1.Taint) ([]corev1.Taint, bool) {
		if hasOutOfServiceTaint(taints) {
			return taints, false
		}
		taint := OutOfServiceTaint
		// When it was added: the remediation gives the cluster's taint
		// eviction a moment from then before it counts terminating pods.
		taint.TimeAdded = ptrTime(time.Now())
		return append(taints, taint), true
	})
}

// Untaint implements Nodes.
func (n *workloadNodes) Untaint(ctx context.Context, node *corev1.Node) error {
	return n.changeTaints(ctx, node, func(taints []corev1.Taint) ([]corev1.Taint, bool) {
		kept := slices.DeleteFunc(slices.Clone(taints), isOutOfServiceTaint)
		return kept, len(kept) != len(taints)
	})
}

// changeTaints applies change to node's taints, as Cluster API changes the
// taints it owns: a strategic merge patch guarded by the Node's
// resourceVersion, since the list is replaced whole and the node lifecycle
// controller changes it too while the host is off. A conflict is retried
// on the Node read again, if it is still the same Node (UID).
func (n *workloadNodes) changeTaints(ctx context.Context, node *corev1.Node, change func([]corev1.Taint) ([]corev1.Taint, bool)) error {
	c, err := n.connect(ctx)
	if err != nil {
		return err
	}
	current := node.DeepCopy()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		taints, changed := change(current.Spec.Taints)
		if !changed {
			return nil
		}
		updated := current.DeepCopy()
		updated.Spec.Taints = taints
		err := c.Patch(ctx, updated, client.StrategicMergeFrom(current, client.MergeFromWithOptimisticLock{}))
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("change the taints of Node %s: %w", node.Name, ErrNodeGone)
		case apierrors.IsConflict(err):
			live := &corev1.Node{}
			if getErr := c.Get(ctx, client.ObjectKeyFromObject(node), live); getErr != nil {
				if apierrors.IsNotFound(getErr) {
					return fmt.Errorf("change the taints of Node %s: %w", node.Name, ErrNodeGone)
				}
				return fmt.Errorf("%w: read Node %s: %w", ErrWorkloadUnreachable, node.Name, getErr)
			}
			if live.UID != node.UID {
				return fmt.Errorf("change the taints of Node %s: it was registered again: %w", node.Name, ErrNodeGone)
			}
			current = live
			return err
		case err != nil:
			return fmt.Errorf("change the taints of Node %s: %w", node.Name, err)
		}
		return nil
	})
}

// listPage bounds each list a remediation makes in a workload cluster.
const listPage = 500

// Drain implements Nodes with upstream CAPM3's conditions. Pods: those
// bound to the node (a field selector, served by the API server) that are
// terminating, read as metadata only. The taint eviction controller marks
// every pod that does not tolerate the taint for deletion, and the pod
// garbage collector force-deletes terminating pods of a Node out of
// service; a pod that tolerates the taint stays and does not hold the
// host. Volume attachments: every VolumeAttachment naming the node,
// attached or not, until the attach-detach controller, which detaches
// volumes of a Node out of service at once, deletes it. VolumeAttachments
// take no field selector: they are listed a page at a time.
func (n *workloadNodes) Drain(ctx context.Context, node *corev1.Node) (Drain, error) {
	c, err := n.connect(ctx)
	if err != nil {
		return Drain{}, err
	}
	var d Drain
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	for {
		if err := c.List(ctx, pods, client.MatchingFields{"spec.nodeName": node.Name},
			client.Limit(listPage), client.Continue(pods.Continue)); err != nil {
			return Drain{}, fmt.Errorf("%w: list the pods of Node %s: %w", ErrWorkloadUnreachable, node.Name, err)
		}
		for _, pod := range pods.Items {
			if pod.DeletionTimestamp != nil {
				d.Pods = append(d.Pods, pod.Namespace+"/"+pod.Name)
			}
		}
		if pods.Continue == "" {
			break
		}
	}
	attachments := &storagev1.VolumeAttachmentList{}
	for {
		if err := c.List(ctx, attachments, client.Limit(listPage), client.Continue(attachments.Continue)); err != nil {
			return Drain{}, fmt.Errorf("%w: list the volume attachments: %w", ErrWorkloadUnreachable, err)
		}
		for _, va := range attachments.Items {
			if va.Spec.NodeName == node.Name {
				d.VolumeAttachments = append(d.VolumeAttachments, va.Name)
			}
		}
		if attachments.Continue == "" {
			break
		}
	}
	return d, nil
}
