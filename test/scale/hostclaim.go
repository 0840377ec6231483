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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv/hostdriver"
)

// binderConcurrency is the binder's default --concurrency, which its side
// of the floor copies; the binder's client has no rate limit of its own
// (controller-runtime's default configuration disables client-go's).
const binderConcurrency = 4

const (
	// claimTenantNamespace is the tenant's namespace on the pool: its
	// HostClaims, their Secrets and the binder's HardwareData copies.
	claimTenantNamespace = "claims-assoc"
	claimTenantAccount   = "tenant"
	// floorClaimNamespace is the floor's tenant namespace on the pool.
	floorClaimNamespace = "floor-claims"
	// claimTenantUser is the API server user of the HostClaim identity.
	claimTenantUser = "system:serviceaccount:" + claimTenantNamespace + ":" + claimTenantAccount
)

// runHostClaimAssociation measures n associations of a cluster in HostClaim
// mode: its identity is a tenant ServiceAccount of a namespace of the pool
// server, which may touch only HostClaims, their Secrets and HardwareData
// there; the binder, run on the pool as shipped, binds the claims to the n
// available hosts of a pool namespace a HostDeployPolicy opens to the
// tenant. A machine is associated once its claim is bound and its host's
// HardwareData copied next to it (HostAssociated, as in the other modes).
// The requests at rest, for rest afterwards (none when zero), are counted
// for the provider and the binder.
func runHostClaimAssociation(ctx context.Context, t testenv.T, dir string, n int, rest, provisionHold time.Duration) (associationResult, error) {
	a := &association{remote: true}
	tag := fmt.Sprintf("hostclaim-%d", n)
	a.mgmtAudit = filepath.Join(dir, tag+"-management-audit.log")
	a.poolAudit = filepath.Join(dir, tag+"-pool-audit.log")
	for _, f := range []string{a.mgmtAudit, a.poolAudit} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return associationResult{}, err
		}
	}
	metricsArgs, metricsURL := providerMetrics(t)
	a.mgmt = env.StartManagement(t, env.ManagementOptions{Name: tag, AuditLogPath: a.mgmtAudit, WithoutClusterAPI: true, ProviderArgs: metricsArgs})
	a.hosts = testenv.Start(t, testenv.Options{Scheme: env.Scheme(), CRDDirectoryPaths: []string{testenv.BMOCRDPath(t)}, AuditLogPath: a.poolAudit})
	for _, ns := range []struct {
		c    client.Client
		name string
	}{{a.mgmt.Client, assocNamespace}, {a.mgmt.Client, floorNamespace}, {a.hosts.Client, poolNamespace}, {a.hosts.Client, floorHosts}, {a.hosts.Client, floorClaimNamespace}} {
		if err := env.CreateNamespace(ctx, ns.c, ns.name); err != nil {
			return associationResult{}, err
		}
	}
	a.identity = a.hosts.ServiceAccountKubeconfig(t, claimTenantNamespace, claimTenantAccount, 24*time.Hour, testenv.HostClaimTenantRules()...)
	if err := admitClaims(ctx, a.hosts.Client, poolNamespace, claimTenantNamespace); err != nil {
		return associationResult{}, err
	}
	driver, err := hostdriver.Start(ctx, a.hosts.Config, associationDriver(provisionHold, poolNamespace, floorHosts))
	if err != nil {
		return associationResult{}, err
	}
	defer driver.Stop()
	if err := registerAvailableHosts(ctx, a.hosts.Client, []string{poolNamespace, floorHosts}, n); err != nil {
		return associationResult{}, err
	}

	res := associationResult{Machines: n, Mode: modeHostClaim}
	// The floor runs before the binder starts, so that the binder never
	// sees the floor's claims: they are gone by then.
	if res.FloorCPU, err = measureCPU(func() (err error) {
		res.Floor, err = hostClaimFloor(ctx, a, n)
		return err
	}); err != nil {
		return res, fmt.Errorf("floor: %w", err)
	}
	a.hosts.StartHostClaimBinder(t)
	if err := waitBinderWatching(ctx, a.poolAudit); err != nil {
		return res, err
	}
	if err := a.createHostClaimCluster(ctx, n); err != nil {
		return res, err
	}
	var started, associated time.Time
	res.Reconciles, err = countReconciles(ctx, metricsURL, func() (err error) {
		res.CPU, err = measureCPU(func() (err error) {
			started, associated, err = associateMachines(ctx, a.mgmt.Env, n)
			return err
		})
		return err
	})
	if err != nil {
		return res, err
	}
	res.Associated = associated.Sub(started)

	if rest > 0 {
		if err := a.claimsAtRest(ctx, n, rest, &res); err != nil {
			return res, err
		}
	}
	return res, a.countClaimRequests(started, associated, &res)
}

// admitClaims opens hostNamespace to the claims of tenantNamespace, as a
// pool admin does with a HostDeployPolicy.
func admitClaims(ctx context.Context, c client.Client, hostNamespace, tenantNamespace string) error {
	return c.Create(ctx, &bmov1alpha1.HostDeployPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: hostNamespace, Name: "tenants"},
		Spec: bmov1alpha1.HostDeployPolicySpec{
			HostClaimNamespaces: &bmov1alpha1.HostClaimNamespaces{Names: []string{tenantNamespace}},
		},
	})
}

// registerAvailableHosts registers n hosts in each namespace and waits until
// the host driver has made them all available.
func registerAvailableHosts(ctx context.Context, c client.Client, namespaces []string, n int) error {
	for _, ns := range namespaces {
		if err := registerHostsParallel(ctx, c, ns, n); err != nil {
			return err
		}
	}
	return pollUntil(ctx, 10*time.Minute, flowPoll, "hosts available", func() (bool, error) {
		for _, ns := range namespaces {
			if ok, err := hostsInState(ctx, c, ns, bmov1alpha1.StateAvailable, n); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// waitBinderWatching waits until the binder, just started, watches claims
// and hosts: it has won its leader election and synced its caches, so its
// start is not part of the time measured.
func waitBinderWatching(ctx context.Context, poolAudit string) error {
	return pollUntil(ctx, 2*time.Minute, flowPoll, "the binder to watch claims and hosts", func() (bool, error) {
		events, err := testenv.ReadAuditLog(poolAudit)
		if err != nil {
			return false, err
		}
		watching := map[string]bool{}
		for _, e := range filterUser(events, testenv.HostClaimBinderUser) {
			if e.Verb == "watch" {
				watching[e.Resource()] = true
			}
		}
		return watching["hostclaims"] && watching["baremetalhosts"], nil
	})
}

// createHostClaimCluster is createCluster in HostClaim mode: the identity
// Secret holds the tenant's kubeconfig, and the Metal3Cluster asks for its
// hosts with HostClaims.
func (a *association) createHostClaimCluster(ctx context.Context, n int) error {
	c := a.mgmt.Client
	const name = "assoc"
	base := newClusterBase(assocNamespace, name)
	base.m3c.Spec.CloudProviderEnabled = ptr.To(true) // no workload cluster here
	base.m3c.Spec.HostMode = infrav1.HostModeHostClaim
	base.m3c.Spec.IdentityRef = &infrav1.IdentityRef{Name: name + "-pool"}
	// The identity first, so the Metal3Cluster never waits for it.
	objects := append([]client.Object{testenv.IdentitySecret(assocNamespace, name+"-pool", a.identity)}, base.objects()...)
	if err := createAll(ctx, c, objects); err != nil {
		return err
	}
	cluster := base.cluster
	patch := client.MergeFrom(cluster.DeepCopy())
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	if err := c.Status().Patch(ctx, cluster, patch); err != nil {
		return err
	}
	return createMachines(ctx, c, name, n)
}

// claimsAtRest waits until every machine is Ready (its host provisioned)
// and both the provider and the binder stopped writing, then counts their
// requests per minute for rest.
func (a *association) claimsAtRest(ctx context.Context, n int, rest time.Duration, res *associationResult) error {
	if err := pollUntil(ctx, 30*time.Minute, flowPoll, "machines ready", func() (bool, error) {
		return metal3MachinesWith(ctx, a.mgmt.Client, assocNamespace, infrav1.ReadyCondition, n)
	}); err != nil {
		return err
	}
	quiet := []quietLog{{a.mgmtAudit, providerUser}, {a.poolAudit, claimTenantUser}, {a.poolAudit, testenv.HostClaimBinderUser}}
	if err := waitQuiet(ctx, quiet); err != nil {
		return err
	}
	restStart := time.Now()
	time.Sleep(rest)
	res.RestWindow = time.Since(restStart)
	restEnd := restStart.Add(res.RestWindow)
	mgmtEvents, poolEvents, err := a.readAuditLogs()
	if err != nil {
		return err
	}
	res.AtRestManagement = countRequests(filterUser(mgmtEvents, providerUser), restStart, restEnd).perMinute(res.RestWindow)
	res.AtRestPool = countRequests(filterUser(poolEvents, claimTenantUser), restStart, restEnd).perMinute(res.RestWindow)
	res.AtRestBinder = countRequests(filterUser(poolEvents, testenv.HostClaimBinderUser), restStart, restEnd).perMinute(res.RestWindow)
	return nil
}

// countClaimRequests counts the provider's requests on both servers and the
// binder's on the pool between from and to, and the provider's most open
// watches on the pool.
func (a *association) countClaimRequests(from, to time.Time, res *associationResult) error {
	mgmtEvents, poolEvents, err := a.readAuditLogs()
	if err != nil {
		return err
	}
	res.Management = countRequests(filterUser(mgmtEvents, providerUser), from, to)
	byTenant := filterUser(poolEvents, claimTenantUser)
	res.Pool = countRequests(byTenant, from, to)
	res.Watches = maxOpenWatches(byTenant)
	res.Binder = countRequests(filterUser(poolEvents, testenv.HostClaimBinderUser), from, to)
	return nil
}

func (a *association) readAuditLogs() (mgmtEvents, poolEvents []testenv.AuditEvent, err error) {
	if mgmtEvents, err = testenv.ReadAuditLog(a.mgmtAudit); err != nil {
		return nil, nil, err
	}
	poolEvents, err = testenv.ReadAuditLog(a.poolAudit)
	return mgmtEvents, poolEvents, err
}

// hostClaimFloor does exactly the writes n HostClaim associations need, each
// side with its own workers and client limits:
//   - the provider (providerConcurrency workers; on the pool the identity's
//     client at remoteQPS and remoteBurst, on the management server its own
//     at providerQPS and providerBurst): the user-data Secret next to the claim, the claim
//     (created whole: consumer, image, user data, power), and at the end the
//     machine's status;
//   - the binder (binderConcurrency workers, its client unlimited): the host
//     update binding it (consumerRef, image, user data copy, power in one
//     write), the Secret's copy next to the host, the HardwareData copy
//     next to the claim (the provider reports a host associated only with
//     it) and the claim's status.
//
// Eight writes per machine; the binder's finalizer on the claim and its
// reads are left out. Its machines have no owner Machine, so the provider
// leaves them alone; it runs before the binder starts.
func hostClaimFloor(ctx context.Context, a *association, n int) (time.Duration, error) {
	hosts, mgmt, err := a.prepareFloor(ctx, floorHosts)
	if err != nil {
		return 0, err
	}
	tenant, err := throttledClient(a.hosts.Config, remoteQPS, remoteBurst)
	if err != nil {
		return 0, err
	}
	binder := a.hosts.Client
	providerWorkers, binderWorkers := make(chan struct{}, providerConcurrency), make(chan struct{}, binderConcurrency)
	onWorker := func(workers chan struct{}, do func() error) error {
		workers <- struct{}{}
		defer func() { <-workers }()
		return do()
	}
	started := time.Now()
	machines := startFloorMachines(ctx, a.mgmt.Client, n, floorMachineIn(floorNamespace))
	// A machine waits for the binder between its two reconciles without
	// holding a provider worker, as in the provider.
	err = parallel(n, n, func(i int) error {
		if err := machines.wait(i); err != nil {
			return err
		}
		machine := floorMachineName(i)
		var claim *bmov1alpha1.HostClaim
		if err := onWorker(providerWorkers, func() (err error) {
			claim, err = floorCreateClaim(ctx, tenant, machine)
			return err
		}); err != nil {
			return err
		}
		if err := onWorker(binderWorkers, func() error { return floorBindClaim(ctx, binder, claim, &hosts.Items[i]) }); err != nil {
			return err
		}
		return onWorker(providerWorkers, func() error {
			m3m := &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{Namespace: floorNamespace, Name: machine}}
			patch := client.MergeFrom(m3m.DeepCopy())
			conditions.Set(m3m, metav1.Condition{Type: infrav1.HostAssociatedCondition, Status: metav1.ConditionTrue, Reason: infrav1.AssociatedReason,
				Message: "Host " + claim.Namespace + "/" + claim.Name})
			m3m.Status.UserData = claim.Spec.UserData
			return mgmt.Status().Patch(ctx, m3m, patch)
		})
	})
	elapsed := time.Since(started)
	if finished := machines.finish(); err == nil {
		err = finished
	}
	if err != nil {
		return elapsed, err
	}
	// Gone before the binder starts (they have no finalizer yet).
	return elapsed, a.hosts.Client.DeleteAllOf(ctx, &bmov1alpha1.HostClaim{}, client.InNamespace(floorClaimNamespace))
}

// floorCreateClaim is the provider's side of a claim: its user data, then
// the claim itself.
func floorCreateClaim(ctx context.Context, tenant client.Client, machine string) (*bmov1alpha1.HostClaim, error) {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: floorClaimNamespace, Name: machine + "-user-data"},
		Data:       map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
	}
	if err := tenant.Create(ctx, secret); err != nil {
		return nil, err
	}
	claim := &bmov1alpha1.HostClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: floorClaimNamespace, Name: machine},
		Spec: bmov1alpha1.HostClaimSpec{
			PoweredOn: true,
			Image:     floorImage(),
			UserData:  &corev1.SecretReference{Namespace: floorClaimNamespace, Name: secret.Name},
			ConsumerRef: &corev1.ObjectReference{
				APIVersion: infrav1.GroupVersion.String(), Kind: "Metal3Machine", Namespace: floorNamespace, Name: machine,
			},
		},
	}
	return claim, tenant.Create(ctx, claim)
}

// floorBindClaim is the binder's side: the host, the Secret's copy next to
// it, the HardwareData copy next to the claim and the claim's status.
func floorBindClaim(ctx context.Context, c client.Client, claim *bmov1alpha1.HostClaim, host *bmov1alpha1.BareMetalHost) error {
	userData := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: host.Namespace, Name: hostclaim.SecretCopyName(claim.Name, claim.UID, pool.UserDataPurpose),
			Labels:          map[string]string{hostclaim.ClaimUIDLabel: string(claim.UID)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: bmov1alpha1.GroupVersion.String(), Kind: "BareMetalHost", Name: host.Name, UID: host.UID}},
		},
		Data: map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
	}
	host.Spec.ConsumerRef = &corev1.ObjectReference{
		APIVersion: bmov1alpha1.GroupVersion.String(), Kind: "HostClaim", Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
	}
	host.Spec.Image = claim.Spec.Image
	host.Spec.Online = claim.Spec.PoweredOn
	host.Spec.UserData = &corev1.SecretReference{Namespace: userData.Namespace, Name: userData.Name}
	if err := c.Update(ctx, host); err != nil {
		return err
	}
	if err := c.Create(ctx, userData); err != nil {
		return err
	}
	hardware := &bmov1alpha1.HardwareData{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: claim.Namespace, Name: claim.Name, Labels: map[string]string{hostclaim.ClaimUIDLabel: string(claim.UID)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: bmov1alpha1.GroupVersion.String(), Kind: "HostClaim", Name: claim.Name, UID: claim.UID, Controller: ptr.To(true),
			}},
		},
		Spec: bmov1alpha1.HardwareDataSpec{HardwareDetails: host.Status.HardwareDetails.DeepCopy()},
	}
	if err := c.Create(ctx, hardware); err != nil {
		return err
	}
	claim.Status.BareMetalHost = &bmov1alpha1.ObjectReference{Namespace: host.Namespace, Name: host.Name}
	claim.Status.HardwareData = &bmov1alpha1.ObjectReference{Namespace: hardware.Namespace, Name: hardware.Name}
	meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{
		Type: bmov1alpha1.AssociatedCondition, Status: metav1.ConditionTrue, Reason: bmov1alpha1.BareMetalHostAssociatedReason,
		Message: "bound to host " + host.Namespace + "/" + host.Name,
	})
	return c.Status().Update(ctx, claim)
}

func floorImage() *bmov1alpha1.Image {
	return &bmov1alpha1.Image{
		URL: env.Image.URL, Checksum: ptr.Deref(env.Image.Checksum, ""), ChecksumType: bmov1alpha1.SHA256, DiskFormat: ptr.To(env.Image.DiskFormat),
	}
}
