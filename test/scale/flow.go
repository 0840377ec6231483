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

// flowResult is one run of the flow the issue compares with upstream CAPM3,
// for one provider. Every duration is from creating the MachineDeployment.
type flowResult struct {
	// Provider is "this provider" or "upstream CAPM3 <version>".
	Provider string
	Machines int
	// Converged is when every Metal3Machine was ready (this provider: its
	// Ready condition; upstream: status.initialization.provisioned, what
	// Cluster API reads).
	Converged time.Duration
	// Running is when every Machine had status.phase Running and a
	// nodeRef: the time as a user sees it.
	Running time.Duration
	// Where the time goes, each the last of its machines: the provider
	// claimed the host (its first write of the host), the Bare Metal
	// Operator reported it provisioned (its last status write before
	// Converged), its Node registered, and the Node's providerID set (both
	// seen by polling the workload cluster every flowPoll).
	Claimed, LastProvisioned, NodeRegistered, ProviderIDSet time.Duration
	// Until is the provider's requests until Running.
	Until requestCount
	// AtRest is per minute, over the rest window after Running.
	AtRest     requestCount
	RestWindow time.Duration
}

// runFlow runs the flow as a user would see it, for this provider or, with
// upstream, for upstream CAPM3 (testenv.UpstreamCAPM3) run as its release
// ships it: one management API server with the real Cluster API core
// controllers, the provider, and the real Bare Metal Operator in test mode
// holding machines+1 hosts in the cluster's namespace; a workload API
// server whose kubeconfig Secret exists before the cluster's
// infrastructure is ready, and the kubelet stand-in registering a Node for
// each provisioned host; Metal3Cluster cloudProviderEnabled false. A
// control-plane Machine is provisioned first, outside the measurement: a
// user's cluster has one, and Cluster API watches a cluster's Nodes only
// once its control plane is initialized. Then a MachineDeployment of
// machines is created at once and measured until every Machine is Running.
// The provider's requests are counted from the API server's audit log.
func runFlow(ctx context.Context, t testenv.T, dir string, machines int, rest time.Duration, upstream bool) (flowResult, error) {
	auditLog := filepath.Join(dir, "flow-audit.log")
	// The API server appends: a previous run's requests are not this one's.
	if err := os.Remove(auditLog); err != nil && !os.IsNotExist(err) {
		return flowResult{}, err
	}
	opts := env.ManagementOptions{Name: "flow", AuditLogPath: auditLog}
	res := flowResult{Provider: "this provider", Machines: machines}
	if upstream {
		opts.Upstream = testenv.UpstreamCAPM3(t)
		res.Provider = "upstream CAPM3 " + opts.Upstream.Version
	}
	mgmt := env.StartManagement(t, opts)
	mgmt.StartBMO(t, "baremetal-operator-system")
	workload := testenv.Start(t, testenv.Options{Scheme: env.Scheme()})
	env.StartKubelet(t, workload, mgmt.Env)
	c := mgmt.Client
	const ns, name = "flow", "flow"
	if err := env.CreateNamespace(ctx, c, ns); err != nil {
		return res, err
	}
	if err := testenv.RegisterHosts(ctx, c, ns, "host", machines+1); err != nil {
		return res, err
	}
	if err := pollUntil(ctx, 5*time.Minute, flowPoll, "hosts available", func() (bool, error) {
		return hostsInState(ctx, c, ns, bmov1alpha1.StateAvailable, machines+1)
	}); err != nil {
		return res, err
	}
	controlPlaneHost, err := startFlowWorkloadCluster(ctx, mgmt, workload, ns, name)
	if err != nil {
		return res, err
	}
	time.Sleep(2 * time.Second) // let the cluster's own reconciles finish outside the window

	watch := newFlowWatch(c, workload.Client, ns, name, machines, upstream)
	started := time.Now()
	if err := c.Create(ctx, flowMachineDeployment(ns, name, machines)); err != nil {
		return res, err
	}
	if err := pollUntil(ctx, 10*time.Minute, flowPoll, "Machines Running", func() (bool, error) {
		return watch.poll(ctx)
	}); err != nil {
		return res, fmt.Errorf("%w (%s)", err, watch)
	}
	running := time.Now()
	time.Sleep(rest)
	events, err := testenv.ReadAuditLog(auditLog)
	if err != nil {
		return res, err
	}
	byProvider := filterUser(events, providerUser)
	converged := started.Add(watch.converged)
	workers := func(e *testenv.AuditEvent) bool { return e.ObjectRef.Name != controlPlaneHost }
	claimed := lastFirstWrite(byProvider, "baremetalhosts", started, running, workers)
	lastProvisioned := lastWrite(filterUser(events, "baremetal-operator"), "update", "baremetalhosts/status", started, converged)
	restStart := running.Add(5 * time.Second) // the last status patches land just after
	res.Converged, res.Running = watch.converged, running.Sub(started)
	res.Claimed, res.LastProvisioned = claimed.Sub(started), lastProvisioned.Sub(started)
	res.NodeRegistered, res.ProviderIDSet = watch.lastNode(), watch.lastProviderID()
	res.Until = countRequests(byProvider, started, running)
	res.RestWindow = rest - 5*time.Second
	res.AtRest = countRequests(byProvider, restStart, running.Add(rest)).perMinute(res.RestWindow)
	return res, nil
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

// lastFirstWrite is, over the objects of resource that keep says to, the
// latest of their first writes (update or patch) in [from, to): when the
// last of them was first written, e.g. claimed.
func lastFirstWrite(events []testenv.AuditEvent, resource string, from, to time.Time, keep func(*testenv.AuditEvent) bool) time.Time {
	first := map[string]time.Time{}
	for i := range events {
		e := &events[i]
		at := e.RequestReceivedTimestamp
		if !e.Counted() || e.Resource() != resource || (e.Verb != "update" && e.Verb != "patch") || e.Code() >= 300 || at.Before(from) || !at.Before(to) || !keep(e) {
			continue
		}
		key := e.ObjectRef.Namespace + "/" + e.ObjectRef.Name
		if f, ok := first[key]; !ok || at.Before(f) {
			first[key] = at
		}
	}
	last := from
	for _, at := range first {
		if at.After(last) {
			last = at
		}
	}
	return last
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
