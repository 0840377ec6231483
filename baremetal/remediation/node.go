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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
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

// WorkloadNodes are the Nodes the machine's query finds (its nodeRef, its
// providerID, the host's UID label: a Node that registered again after the
// reboot has no providerID yet), in the workload cluster connect reaches.
func WorkloadNodes(connect WorkloadClient, query workload.NodeQuery) Nodes {
	return &workloadNodes{connect: connect, query: query}
}

type workloadNodes struct {
	connect WorkloadClient
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
