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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	deprecatedv1beta1conditions "sigs.k8s.io/cluster-api/util/conditions/deprecated/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv/hostdriver"
)

// upstreamUser is the API server user upstream's manager runs as: its
// release ships the same Namespace and ServiceAccount as this provider's
// (capm3-system/capm3-manager), and RunShipped runs it as that account.
const upstreamUser = testenv.ProviderUser

// upstreamInfraVersion is the version upstream v1.13.2 stores and its
// controllers read (it serves v1beta1 too, converted by its webhook): its
// objects are written in it, as unstructured, so that nothing of this
// fork's types (which upstream's schema would prune) is sent.
const upstreamInfraVersion = "infrastructure.cluster.x-k8s.io/v1beta2"

// runUpstreamAssociation is runAssociation in-cluster for upstream CAPM3
// v1.13.2: n available hosts (the in-process host driver), the same floor,
// then a Cluster, Metal3Cluster, bootstrap Secret and n Machines, and n
// Metal3Machines created at once, which upstream's manager, run as its
// release ships it, associates. Its requests are counted until then, and at
// rest for rest afterwards (none when zero).
func runUpstreamAssociation(ctx context.Context, t testenv.T, dir string, n int, rest, provisionHold time.Duration) (associationResult, error) {
	res := associationResult{Machines: n, Mode: modeUpstream}
	upstream := testenv.UpstreamCAPM3(t)
	auditLog := filepath.Join(dir, fmt.Sprintf("upstream-assoc-%d-audit.log", n))
	if err := os.Remove(auditLog); err != nil && !os.IsNotExist(err) {
		return res, err
	}
	// Upstream's CRDs as controller-gen wrote them, for the floor; its
	// shipped API (conversion webhooks, webhook configurations) replaces
	// them before its manager starts. Its manager watches hosts and the
	// Metal3 IPAM's kinds, and its controllers start only with their CRDs.
	mgmt := testenv.Start(t, testenv.Options{
		Scheme:            env.Scheme(),
		CRDDirectoryPaths: []string{testenv.CAPICRDPath(t), testenv.BMOCRDPath(t), testenv.IPAMCRDPath(t), upstream.CRDs},
		AuditLogPath:      auditLog,
	})
	c := mgmt.Client
	for _, ns := range []string{assocNamespace, floorNamespace, floorHosts} {
		if err := env.CreateNamespace(ctx, c, ns); err != nil {
			return res, err
		}
	}
	driver, err := startAvailableHosts(ctx, mgmt, associationDriver(provisionHold, assocNamespace, floorHosts), n)
	if err != nil {
		return res, err
	}
	defer driver.Stop()

	// The floor runs before upstream's manager starts, and its machines are
	// gone when it does: upstream writes the status of every Metal3Machine
	// it sees, owned or not, and would otherwise be busy with them while it
	// associates its own.
	floor := &association{mgmt: &env.Management{Env: mgmt}, hosts: mgmt}
	if res.FloorCPU, err = measureCPU(func() (err error) {
		res.Floor, err = floor.floor(ctx, n, bareFloor)
		return err
	}); err != nil {
		return res, fmt.Errorf("floor: %w", err)
	}
	if err := c.DeleteAllOf(ctx, &infrav1.Metal3Machine{}, client.InNamespace(floorNamespace)); err != nil {
		return res, err
	}

	shipped := upstream.Shipped(t, nil)
	mgmt.InstallRBAC(t, shipped) // its Namespace, for its webhook Service
	mgmt.InstallShippedAPI(t, shipped)
	mgmt.StartUpstreamCAPM3(t, upstream)

	if err := createUpstreamCluster(ctx, c, n); err != nil {
		return res, err
	}
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	upstreamMachine := &unstructured.Unstructured{}
	upstreamMachine.SetAPIVersion(upstreamInfraVersion)
	upstreamMachine.SetKind("Metal3Machine")
	watched, err := watchNamespace(watchCtx, mgmt.Config, assocNamespace, upstreamMachine, &bmov1alpha1.BareMetalHost{})
	if err != nil {
		return res, err
	}
	machines, err := listMachines(ctx, c, n)
	if err != nil {
		return res, err
	}
	var started, associated time.Time
	if res.CPU, err = measureCPU(func() error {
		started = time.Now()
		if err := createUpstreamMetal3Machines(ctx, c, machines); err != nil {
			return err
		}
		if err := pollUntil(ctx, 30*time.Minute, flowPoll, "upstream's machines associated", func() (bool, error) {
			return upstreamAssociated(ctx, watched, n)
		}); err != nil {
			return err
		}
		associated = time.Now()
		return nil
	}); err != nil {
		return res, err
	}
	// Before the at-rest window: the benchmark's own watches end with the
	// window they timed.
	stopWatching()
	res.Associated = associated.Sub(started)

	if rest > 0 {
		if res.AtRestManagement, res.RestWindow, err = upstreamAtRest(ctx, c, auditLog, n, rest); err != nil {
			return res, err
		}
	}
	events, err := testenv.ReadAuditLog(auditLog)
	if err != nil {
		return res, err
	}
	byUpstream := filterUser(events, upstreamUser)
	res.Management = countRequests(byUpstream, started, associated)
	res.Watches = maxOpenWatches(byUpstream)
	return res, nil
}

// upstreamAtRest counts upstream's requests per minute over rest, once
// every host is provisioned and upstream stopped writing. There is no
// workload cluster: upstream then waits for a Node that never comes,
// which its requests at rest include (upstream-flow measures it with
// one).
func upstreamAtRest(ctx context.Context, c client.Client, auditLog string, n int, rest time.Duration) (requestCount, time.Duration, error) {
	if err := pollUntil(ctx, 30*time.Minute, flowPoll, "upstream's hosts provisioned", func() (bool, error) {
		return hostsInState(ctx, c, assocNamespace, bmov1alpha1.StateProvisioned, n)
	}); err != nil {
		return requestCount{}, 0, err
	}
	if err := waitQuiet(ctx, []quietLog{{auditLog, upstreamUser}}); err != nil {
		return requestCount{}, 0, err
	}
	restStart := time.Now()
	time.Sleep(rest)
	window := time.Since(restStart)
	events, err := testenv.ReadAuditLog(auditLog)
	if err != nil {
		return requestCount{}, 0, err
	}
	return countRequests(filterUser(events, upstreamUser), restStart, restStart.Add(window)).perMinute(window), window, nil
}

// startAvailableHosts registers n hosts in each of opts' namespaces, starts
// the host driver with opts and returns once every one is available.
func startAvailableHosts(ctx context.Context, e *testenv.Env, opts hostdriver.Options, n int) (*hostdriver.Driver, error) {
	namespaces := opts.Namespaces
	driver, err := hostdriver.Start(ctx, e.Config, opts)
	if err != nil {
		return nil, err
	}
	err = func() error {
		for _, ns := range namespaces {
			if err := registerHostsParallel(ctx, e.Client, ns, n); err != nil {
				return err
			}
		}
		return pollUntil(ctx, 10*time.Minute, flowPoll, "hosts available", func() (bool, error) {
			for _, ns := range namespaces {
				if ok, err := hostsInState(ctx, e.Client, ns, bmov1alpha1.StateAvailable, n); !ok || err != nil {
					return false, err
				}
			}
			return true, nil
		})
	}()
	if err != nil {
		driver.Stop()
		return nil, err
	}
	return driver, nil
}

// createUpstreamCluster plays Cluster API v1.14's part up to the machines:
// the Cluster, its Metal3Cluster owned by it (which upstream's own
// controller provisions), the Cluster's infrastructure then marked
// provisioned (status.initialization) and ready (the v1beta1 condition
// InfrastructureReady, which upstream's Metal3Machine controller waits
// for), the bootstrap data, and n Machines whose Metal3Machines come later.
func createUpstreamCluster(ctx context.Context, c client.Client, n int) error {
	const name = "assoc"
	base := newClusterBase(assocNamespace, name)
	if err := createAll(ctx, c, []client.Object{base.bootstrap, base.cluster}); err != nil {
		return err
	}
	cluster := base.cluster
	m3c := upstreamObject("Metal3Cluster", name, "Cluster", cluster, map[string]any{
		"controlPlaneEndpoint": map[string]any{"host": base.m3c.Spec.ControlPlaneEndpoint.Host, "port": int64(base.m3c.Spec.ControlPlaneEndpoint.Port)},
		"cloudProviderEnabled": true, // no workload cluster here, as runAssociation
	})
	if err := c.Create(ctx, m3c); err != nil {
		return fmt.Errorf("create Metal3Cluster: %w", err)
	}
	if err := pollUntil(ctx, 2*time.Minute, flowPoll, "upstream's Metal3Cluster provisioned", func() (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(m3c), m3c); err != nil {
			return false, err
		}
		provisioned, _, err := unstructured.NestedBool(m3c.Object, "status", "initialization", "provisioned")
		return provisioned, err
	}); err != nil {
		return err
	}

	patch := client.MergeFrom(cluster.DeepCopy())
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	conditions.Set(cluster, metav1.Condition{Type: clusterv1.ClusterInfrastructureReadyCondition, Status: metav1.ConditionTrue, Reason: clusterv1.ClusterInfrastructureReadyReason})
	deprecatedv1beta1conditions.MarkTrue(cluster, clusterv1.InfrastructureReadyV1Beta1Condition)
	if err := c.Status().Patch(ctx, cluster, patch); err != nil {
		return err
	}
	return createMachines(ctx, c, name, n)
}

// createUpstreamMetal3Machines creates the Metal3Machines of machines in
// upstream's API, owned by their Machines as Cluster API would make them, as fast as
// the server takes them.
func createUpstreamMetal3Machines(ctx context.Context, c client.Client, machines []clusterv1.Machine) error {
	image, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&env.Image)
	if err != nil {
		return err
	}
	return parallel(len(machines), 8, func(i int) error {
		machine := &machines[i]
		return c.Create(ctx, upstreamObject("Metal3Machine", machine.Name, "Machine", machine, map[string]any{"image": image}))
	})
}

// upstreamObject is one of upstream's kinds in assocNamespace, controlled
// by owner and labelled with its cluster.
func upstreamObject(kind, name, ownerKind string, owner client.Object, spec map[string]any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	obj.SetAPIVersion(upstreamInfraVersion)
	obj.SetKind(kind)
	obj.SetNamespace(assocNamespace)
	obj.SetName(name)
	obj.SetLabels(map[string]string{clusterv1.ClusterNameLabel: "assoc"})
	obj.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: clusterv1.GroupVersion.String(), Kind: ownerKind,
		Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true),
	}})
	return obj
}

// upstreamAssociated reports whether want Metal3Machines are associated
// by upstream's own signals: the Metal3Machine records its host in the
// annotation metal3.io/BareMetalHost ("namespace/name"), and that host's
// consumerRef names the Metal3Machine. Upstream writes the host first
// (consumerRef, image, user data) and the annotation in the Metal3Machine's
// patch that ends the reconcile; its AssociateBareMetalHost condition
// follows in the status patch just after.
func upstreamAssociated(ctx context.Context, c client.Reader, want int) (bool, error) {
	machines := &unstructured.UnstructuredList{}
	machines.SetAPIVersion(upstreamInfraVersion)
	machines.SetKind("Metal3MachineList")
	if err := c.List(ctx, machines, client.InNamespace(assocNamespace), client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := c.List(ctx, hosts, client.InNamespace(assocNamespace), client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	consumer := map[string]string{} // host "namespace/name" -> its Metal3Machine
	for i := range hosts.Items {
		h := &hosts.Items[i]
		if ref := h.Spec.ConsumerRef; ref != nil && ref.Kind == "Metal3Machine" {
			consumer[h.Namespace+"/"+h.Name] = ref.Namespace + "/" + ref.Name
		}
	}
	n := 0
	for i := range machines.Items {
		m := &machines.Items[i]
		host, ok := m.GetAnnotations()[infrav1.HostAnnotation]
		if ok && consumer[host] == m.GetNamespace()+"/"+m.GetName() {
			n++
		}
	}
	return n >= want, nil
}
