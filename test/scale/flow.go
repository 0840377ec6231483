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
	"os"
	"path/filepath"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// providerUser is the API server user the provider's process runs as:
// its shipped ServiceAccount.
const providerUser = testenv.ProviderUser

// flowResult is one run of the in-cluster flow the issue compares with
// upstream CAPM3.
type flowResult struct {
	Machines int
	// Converged is the time from creating the MachineDeployment until every
	// Metal3Machine is Ready (its host provisioned).
	Converged time.Duration
	// Claimed is when the provider had claimed the last host, and
	// LastProvisioned when the Bare Metal Operator reported the last host
	// provisioned: the provider's part is before the one and after the other.
	Claimed, LastProvisioned time.Duration
	// Until convergence.
	Until requestCount
	// AtRest is per minute, over the rest window after convergence.
	AtRest     requestCount
	RestWindow time.Duration
}

// runFlow runs the flow: one API server with the real Cluster API core
// controllers, the real Bare Metal Operator in test mode and the provider's
// binary; machines hosts in the cluster's namespace, available; a
// MachineDeployment of as many Machines created at once, without a
// workload cluster (no cloud provider, as upstream's default). Requests are
// counted from the API server's audit log.
func runFlow(ctx context.Context, t testenv.T, dir string, machines int, rest time.Duration) (flowResult, error) {
	auditLog := filepath.Join(dir, "flow-audit.log")
	// The API server appends: a previous run's requests are not this one's.
	if err := os.Remove(auditLog); err != nil && !os.IsNotExist(err) {
		return flowResult{}, err
	}
	mgmt := env.StartManagement(t, env.ManagementOptions{Name: "flow", AuditLogPath: auditLog})
	mgmt.StartBMO(t, "baremetal-operator-system")
	c := mgmt.Client
	const ns, name = "flow", "flow"
	if err := env.CreateNamespace(ctx, c, ns); err != nil {
		return flowResult{}, err
	}
	if err := testenv.RegisterHosts(ctx, c, ns, "host", machines); err != nil {
		return flowResult{}, err
	}
	if err := pollUntil(ctx, 5*time.Minute, flowPoll, "hosts available", func() (bool, error) {
		return hostsInState(ctx, c, ns, bmov1alpha1.StateAvailable, machines)
	}); err != nil {
		return flowResult{}, err
	}
	// The cluster's infrastructure first: the flow measures the machines.
	if err := createFlowCluster(ctx, c, ns, name); err != nil {
		return flowResult{}, err
	}
	if err := pollUntil(ctx, time.Minute, flowPoll, "cluster infrastructure provisioned", func() (bool, error) {
		cluster := &clusterv1.Cluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cluster); err != nil {
			return false, err
		}
		return ptr.Deref(cluster.Status.Initialization.InfrastructureProvisioned, false), nil
	}); err != nil {
		return flowResult{}, err
	}
	time.Sleep(2 * time.Second) // let the cluster's own reconciles finish outside the window

	started := time.Now()
	if err := c.Create(ctx, flowMachineDeployment(ns, name, machines)); err != nil {
		return flowResult{}, err
	}
	if err := pollUntil(ctx, 5*time.Minute, flowPoll, "Metal3Machines ready", func() (bool, error) {
		return metal3MachinesWith(ctx, c, ns, infrav1.ReadyCondition, machines)
	}); err != nil {
		return flowResult{}, err
	}
	converged := time.Now()
	time.Sleep(rest)
	events, err := testenv.ReadAuditLog(auditLog)
	if err != nil {
		return flowResult{}, err
	}
	byProvider := filterUser(events, providerUser)
	claimed, lastProvisioned := lastWrite(byProvider, "update", "baremetalhosts", started, converged), lastWrite(filterUser(events, "baremetal-operator"), "update", "baremetalhosts/status", started, converged)
	restStart := converged.Add(5 * time.Second) // the last status patches land just after
	return flowResult{
		Machines:  machines,
		Converged: converged.Sub(started),
		Claimed:   claimed.Sub(started), LastProvisioned: lastProvisioned.Sub(started),
		Until:      countRequests(byProvider, started, converged),
		AtRest:     countRequests(byProvider, restStart, converged.Add(rest)).perMinute(rest - 5*time.Second),
		RestWindow: rest - 5*time.Second,
	}, nil
}

func createFlowCluster(ctx context.Context, c client.Client, ns, name string) error {
	base := newClusterBase(ns, name)
	return createAll(ctx, c, append(base.objects(),
		&infrav1.Metal3MachineTemplate{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-workers"},
			Spec: infrav1.Metal3MachineTemplateSpec{Template: infrav1.Metal3MachineTemplateResource{
				Spec: infrav1.Metal3MachineSpec{Image: env.Image},
			}},
		},
	))
}

// clusterBase is what every scenario's cluster starts from: its bootstrap
// data, the Cluster and the Metal3Cluster, which callers adjust.
type clusterBase struct {
	bootstrap *corev1.Secret
	cluster   *clusterv1.Cluster
	m3c       *infrav1.Metal3Cluster
}

func newClusterBase(ns, name string) clusterBase {
	return clusterBase{
		bootstrap: &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-bootstrap"},
			Data:       map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
		},
		cluster: &clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "Metal3Cluster", Name: name,
			}},
		},
		m3c: &infrav1.Metal3Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: name}},
			Spec:       infrav1.Metal3ClusterSpec{ControlPlaneEndpoint: infrav1.APIEndpoint{Host: "192.168.111.249", Port: 6443}},
		},
	}
}

func (b clusterBase) objects() []client.Object { return []client.Object{b.bootstrap, b.cluster, b.m3c} }

func createAll(ctx context.Context, c client.Client, objects []client.Object) error {
	for _, obj := range objects {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("create %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

func flowMachineDeployment(ns, name string, replicas int) *clusterv1.MachineDeployment {
	labels := map[string]string{"nodepool": name + "-workers"}
	return &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-workers"},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: name,
			Replicas:    ptr.To(int32(replicas)),
			Selector:    metav1.LabelSelector{MatchLabels: labels},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: labels},
				Spec: clusterv1.MachineSpec{
					ClusterName: name,
					Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(name + "-bootstrap")},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: infrav1.GroupVersion.Group, Kind: "Metal3MachineTemplate", Name: name + "-workers",
					},
				},
			},
		},
	}
}

func hostsInState(ctx context.Context, c client.Client, ns string, state bmov1alpha1.ProvisioningState, want int) (bool, error) {
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := c.List(ctx, hosts, client.InNamespace(ns)); err != nil {
		return false, err
	}
	n := 0
	for i := range hosts.Items {
		if hosts.Items[i].Status.Provisioning.State == state {
			n++
		}
	}
	return n >= want, nil
}

// lastWrite is when the last verb on resource in [from, to) was received.
func lastWrite(events []testenv.AuditEvent, verb, resource string, from, to time.Time) time.Time {
	last := from
	for i := range events {
		e := &events[i]
		if e.Counted() && e.Verb == verb && e.Resource() == resource && e.RequestReceivedTimestamp.After(last) && e.RequestReceivedTimestamp.Before(to) {
			last = e.RequestReceivedTimestamp
		}
	}
	return last
}
