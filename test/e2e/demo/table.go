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
	"sort"
	"strings"
	"text/tabwriter"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// machineRow is one Machine as the demo shows it.
type machineRow struct {
	machine, phase, metal3Machine, host, hostState string
}

// observe reads every Machine of the demo cluster with its Metal3Machine and
// its host in the pool; ready is true once they all run. What cannot be
// read yet shows as "-".
func observe(ctx context.Context, mgmt, pool client.Client) (rows []machineRow, ready bool) {
	machines := &clusterv1.MachineList{}
	if err := mgmt.List(ctx, machines, client.InNamespace(tenantNamespace), client.MatchingLabels{clusterv1.ClusterNameLabel: clusterName}); err != nil {
		return nil, false
	}
	ready = len(machines.Items) > 0
	for _, m := range machines.Items {
		row := machineRow{machine: m.Name, phase: orDash(m.Status.Phase), metal3Machine: "-", host: "-", hostState: "-"}
		if m.Status.Phase != string(clusterv1.MachinePhaseRunning) {
			ready = false
		}
		m3m := &infrav1.Metal3Machine{}
		if m.Spec.InfrastructureRef.Name != "" &&
			mgmt.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.InfrastructureRef.Name}, m3m) == nil {
			row.metal3Machine = conditionSummary(m3m)
			if host := m3m.Annotations[infrav1.HostAnnotation]; host != "" {
				row.host = host
				namespace, name, _ := strings.Cut(host, "/")
				bmh := &bmov1alpha1.BareMetalHost{}
				if pool.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, bmh) == nil {
					row.hostState = orDash(string(bmh.Status.Provisioning.State))
				}
			}
		}
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].machine < rows[j].machine })
	return rows, ready
}

// conditionSummary is the Metal3Machine's Ready condition: "Ready", or the
// reason it is not.
func conditionSummary(m3m *infrav1.Metal3Machine) string {
	ready := conditions.Get(m3m, infrav1.ReadyCondition)
	switch {
	case ready == nil:
		return "-"
	case ready.Status == metav1.ConditionTrue:
		return "Ready"
	default:
		return ready.Reason
	}
}

// renderTable renders rows as a table.
func renderTable(rows []machineRow) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "MACHINE\tPHASE\tMETAL3MACHINE\tHOST (pool)\tHOST STATE")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.machine, r.phase, r.metal3Machine, r.host, r.hostState)
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "(waiting for Cluster API to create the Machines)\t\t\t\t")
	}
	_ = w.Flush()
	return b.String()
}

// progress says, in one line, how far the Machines are.
func progress(rows []machineRow) string {
	running := 0
	for _, r := range rows {
		if r.phase == string(clusterv1.MachinePhaseRunning) {
			running++
		}
	}
	return fmt.Sprintf("%d of %d Machines Running, waiting for the rest", running, len(rows))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
