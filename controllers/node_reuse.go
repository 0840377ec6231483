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

	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
)

// nodeReuse is the machine's part in node reuse, as upstream CAPM3 defines
// it: a host released by a machine whose Metal3MachineTemplate has
// nodeReuse is kept for the machine's owner (its control plane, or its
// MachineDeployment) while that owner still wants machines, so the owner's
// next machine, of whatever template, gets it back.
func (r *Metal3MachineReconciler) nodeReuse(ctx context.Context, cluster *clusterv1.Cluster, machine *clusterv1.Machine, m3m *infrav1.Metal3Machine) (hostbinding.Reuse, error) {
	reuse := hostbinding.Reuse{Cluster: cluster.Namespace + "/" + cluster.Name}
	deployments := &clusterv1.MachineDeploymentList{}
	if err := r.Client.List(ctx, deployments, client.InNamespace(cluster.Namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name}); err != nil {
		return reuse, fmt.Errorf("list the MachineDeployments of cluster %s: %w", reuse.Cluster, err)
	}
	clusterLive := cluster.DeletionTimestamp.IsZero()
	if clusterLive && cluster.Spec.ControlPlaneRef.IsDefined() {
		reuse.LiveOwners = append(reuse.LiveOwners, "cp-"+cluster.Spec.ControlPlaneRef.Name)
	}
	ownerLive := false
	for _, md := range deployments.Items {
		live := clusterLive && md.DeletionTimestamp.IsZero()
		if live {
			reuse.LiveOwners = append(reuse.LiveOwners, "md-"+md.Name)
		}
		if md.Name == machine.Labels[clusterv1.MachineDeploymentNameLabel] {
			ownerLive = live
		}
	}
	switch {
	case util.IsControlPlaneMachine(machine) && cluster.Spec.ControlPlaneRef.IsDefined():
		reuse.Owner = "cp-" + cluster.Spec.ControlPlaneRef.Name
		ownerLive = clusterLive
	case machine.Labels[clusterv1.MachineDeploymentNameLabel] != "":
		reuse.Owner = "md-" + machine.Labels[clusterv1.MachineDeploymentNameLabel]
	default:
		return reuse, nil
	}
	if !ownerLive {
		return reuse, nil
	}
	templateName := m3m.Annotations[clusterv1.TemplateClonedFromNameAnnotation]
	if templateName == "" {
		return reuse, nil
	}
	template := &infrav1.Metal3MachineTemplate{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: m3m.Namespace, Name: templateName}, template); err != nil {
		// A template deleted with its owner reserves nothing.
		return reuse, client.IgnoreNotFound(err)
	}
	reuse.Reserve = ptr.Deref(template.Spec.NodeReuse, false)
	return reuse, nil
}
