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
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv/hostdriver"
)

// The provider's defaults, which the floor copies: its clients' rate limits
// (--kube-api-qps/--kube-api-burst, --remote-client-qps/--remote-client-burst)
// and its Metal3Machine workers (--metal3machine-concurrency).
const (
	providerQPS         = 100
	providerBurst       = 200
	remoteQPS           = 20
	remoteBurst         = 30
	providerConcurrency = 10
)

// assocMode is how the machines of an association run reach their hosts,
// and whose controllers associate them.
type assocMode string

const (
	modeInCluster assocMode = "in-cluster"
	modeRemote    assocMode = "remote identity"
	modeHostClaim assocMode = "HostClaim"
	modeUpstream  assocMode = "upstream CAPM3 v1.13.2"
)

// associationResult is one association run: n machines against n available
// hosts, in one mode, and its floor.
type associationResult struct {
	Machines int
	Mode     assocMode
	// Associated is the time from creating the first Metal3Machine until
	// every one is HostAssociated.
	Associated time.Duration
	// Floor is the time the same associations take as bare API writes.
	Floor time.Duration
	// ContractFloor is the time they take as the writes and reads Cluster
	// API's contract and a host's boot add to the floor's (zero when not
	// measured): see contractFloor.
	ContractFloor time.Duration
	// Management and Pool are the provider's requests to each server
	// during the run (Pool is zero in-cluster).
	Management, Pool requestCount
	// AtRest is per minute on each server after every host is provisioned,
	// over RestWindow; probes are counted apart.
	AtRestManagement, AtRestPool requestCount
	RestWindow                   time.Duration
	// Watches is the most watches the provider opened per kind on the
	// hosts' server.
	Watches map[string]int
	// Binder and AtRestBinder are the HostClaim binder's requests to the
	// pool during the run and per minute at rest (HostClaim mode only).
	Binder, AtRestBinder requestCount
	// Reconciles is how many Metal3Machine reconciles the provider
	// finished from just before the first creation until every machine was
	// seen associated (zero for upstream CAPM3, whose metrics are not read).
	Reconciles float64
	// CPU, FloorCPU and ContractFloorCPU are where the machine's CPU went
	// during the provider's associations and during each floor's.
	CPU, FloorCPU, ContractFloorCPU cpuUse
}

func (r associationResult) Ratio() float64 { return r.Associated.Seconds() / r.Floor.Seconds() }

// association is the environment of one association run.
type association struct {
	mgmt      *env.Management
	hosts     *testenv.Env // where the hosts are: mgmt's server, or the pool
	mgmtAudit string
	poolAudit string
	remote    bool
	identity  []byte
}

const (
	assocNamespace = "assoc"       // the tenant's cluster (and in-cluster hosts)
	poolNamespace  = "pool-assoc"  // the hosts of the remote identity
	floorNamespace = "floor"       // the floor's machines
	floorHosts     = "floor-hosts" // the floor's hosts
	// The contract floor's machines and hosts.
	contractNamespace = "floor-contract"
	contractHosts     = "floor-contract-hosts"
)

// floorRun is one floor: where its machines and hosts are, and whether it
// does what Cluster API's contract and a host's boot need as well.
type floorRun struct {
	machines, hosts string
	contract        bool
}

var (
	// bareFloor does only the writes an association needs: the user-data
	// Secret next to the host, the host's claim, the machine's status.
	bareFloor = floorRun{machines: floorNamespace, hosts: floorHosts}
	// contractFloor adds the two requests no provider keeping Cluster
	// API's contract can do without: the finalizer on the machine before
	// the host is touched (else a machine deleted in between leaves its
	// host claimed for ever), and the read of the bootstrap provider's
	// data that the user-data Secret carries (a Secret's data is read
	// live, never cached). It measures what of the gap to the bare floor
	// is the contract's, and what is the provider's.
	contractFloor = floorRun{machines: contractNamespace, hosts: contractHosts, contract: true}
)

// floorBootstrapSecret is the contract floor's bootstrap data.
const floorBootstrapSecret = "floor-bootstrap"

// runAssociation measures n associations, and the requests at rest for
// rest afterwards (none when zero).
func runAssociation(ctx context.Context, t testenv.T, dir string, n int, remote bool, rest, provisionHold time.Duration) (associationResult, error) {
	a := &association{remote: remote}
	tag := fmt.Sprintf("assoc-%d-%v", n, remote)
	a.mgmtAudit = filepath.Join(dir, tag+"-management-audit.log")
	a.poolAudit = filepath.Join(dir, tag+"-pool-audit.log")
	for _, f := range []string{a.mgmtAudit, a.poolAudit} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return associationResult{}, err
		}
	}
	metricsArgs, metricsURL := providerMetrics(t)
	a.mgmt = env.StartManagement(t, env.ManagementOptions{Name: tag, AuditLogPath: a.mgmtAudit, WithoutClusterAPI: true, ProviderArgs: metricsArgs})
	a.hosts = a.mgmt.Env
	hostNamespace := assocNamespace
	if remote {
		a.hosts = testenv.Start(t, testenv.Options{Scheme: env.Scheme(), CRDDirectoryPaths: []string{testenv.BMOCRDPath(t)}, AuditLogPath: a.poolAudit})
		hostNamespace = poolNamespace
	}
	for _, ns := range []struct {
		c    client.Client
		name string
	}{{a.mgmt.Client, assocNamespace}, {a.mgmt.Client, floorNamespace}, {a.hosts.Client, floorHosts},
		{a.mgmt.Client, contractNamespace}, {a.hosts.Client, contractHosts}} {
		if err := env.CreateNamespace(ctx, ns.c, ns.name); err != nil {
			return associationResult{}, err
		}
	}
	if remote {
		if err := env.CreateNamespace(ctx, a.hosts.Client, poolNamespace); err != nil {
			return associationResult{}, err
		}
		a.identity = a.hosts.ServiceAccountKubeconfig(t, poolNamespace, "tenant", 24*time.Hour, testenv.HostProviderRules()...)
	}
	driver, err := hostdriver.Start(ctx, a.hosts.Config, associationDriver(provisionHold, hostNamespace, floorHosts, contractHosts))
	if err != nil {
		return associationResult{}, err
	}
	defer driver.Stop()
	for _, ns := range []string{hostNamespace, floorHosts, contractHosts} {
		if err := registerHostsParallel(ctx, a.hosts.Client, ns, n); err != nil {
			return associationResult{}, err
		}
	}
	if err := pollUntil(ctx, 10*time.Minute, flowPoll, "hosts available", func() (bool, error) {
		for _, ns := range []string{hostNamespace, floorHosts, contractHosts} {
			if ok, err := hostsInState(ctx, a.hosts.Client, ns, bmov1alpha1.StateAvailable, n); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	}); err != nil {
		return associationResult{}, err
	}

	res := associationResult{Machines: n, Mode: modeInCluster}
	if remote {
		res.Mode = modeRemote
	}
	if res.FloorCPU, err = measureCPU(func() (err error) {
		res.Floor, err = a.floor(ctx, n, bareFloor)
		return err
	}); err != nil {
		return res, fmt.Errorf("floor: %w", err)
	}
	if res.ContractFloorCPU, err = measureCPU(func() (err error) {
		res.ContractFloor, err = a.floor(ctx, n, contractFloor)
		return err
	}); err != nil {
		return res, fmt.Errorf("contract floor: %w", err)
	}
	if err := a.createCluster(ctx, n); err != nil {
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

	// At rest: once every host is provisioned (the driver's provisioning
	// is quick) and the last status patches landed.
	if rest > 0 {
		if err := pollUntil(ctx, 30*time.Minute, flowPoll, "machines ready", func() (bool, error) {
			return metal3MachinesWith(ctx, a.mgmt.Client, assocNamespace, infrav1.ReadyCondition, n)
		}); err != nil {
			return res, err
		}
		// The last machines' status patches queue behind the client's rate
		// limit after they are Ready: rest starts once the provider is quiet.
		quiet := []quietLog{{a.mgmtAudit, providerUser}}
		if remote {
			quiet = append(quiet, quietLog{a.poolAudit, "system:serviceaccount:" + poolNamespace + ":tenant"})
		}
		if err := waitQuiet(ctx, quiet); err != nil {
			return res, err
		}
		restStart := time.Now()
		time.Sleep(rest)
		res.RestWindow = time.Since(restStart)
		mgmtEvents, err := testenv.ReadAuditLog(a.mgmtAudit)
		if err != nil {
			return res, err
		}
		res.AtRestManagement = countRequests(filterUser(mgmtEvents, providerUser), restStart, restStart.Add(res.RestWindow)).perMinute(res.RestWindow)
		if remote {
			poolEvents, err := testenv.ReadAuditLog(a.poolAudit)
			if err != nil {
				return res, err
			}
			res.AtRestPool = countRequests(filterUser(poolEvents, "system:serviceaccount:"+poolNamespace+":tenant"), restStart, restStart.Add(res.RestWindow)).perMinute(res.RestWindow)
		}
	}

	mgmtEvents, err := testenv.ReadAuditLog(a.mgmtAudit)
	if err != nil {
		return res, err
	}
	byProvider := filterUser(mgmtEvents, providerUser)
	res.Management = countRequests(byProvider, started, associated)
	res.Watches = maxOpenWatches(byProvider)
	if remote {
		poolEvents, err := testenv.ReadAuditLog(a.poolAudit)
		if err != nil {
			return res, err
		}
		byIdentity := filterUser(poolEvents, "system:serviceaccount:"+poolNamespace+":tenant")
		res.Pool = countRequests(byIdentity, started, associated)
		res.Watches = maxOpenWatches(byIdentity)
	}
	return res, nil
}

// floor does exactly the requests n associations need (run says which),
// with the provider's workers and client rate limits. Its window starts,
// as the provider's, with the first Metal3Machine created; they have no
// owner Machine, so the provider leaves them alone.
func (a *association) floor(ctx context.Context, n int, run floorRun) (time.Duration, error) {
	hosts, mgmt, err := a.prepareFloor(ctx, run.hosts)
	if err != nil {
		return 0, err
	}
	if run.contract {
		bootstrap := newClusterBase(run.machines, "floor").bootstrap
		bootstrap.Name = floorBootstrapSecret
		if err := a.mgmt.Client.Create(ctx, bootstrap); err != nil {
			return 0, err
		}
	}
	pool := mgmt
	if a.remote {
		if pool, err = throttledClient(a.hosts.Config, remoteQPS, remoteBurst); err != nil {
			return 0, err
		}
	}
	started := time.Now()
	machines := startFloorMachines(ctx, a.mgmt.Client, n, floorMachineIn(run.machines))
	err = parallel(n, providerConcurrency, func(i int) error {
		if err := machines.wait(i); err != nil {
			return err
		}
		return floorAssociation(ctx, mgmt, pool, &hosts.Items[i], run, floorMachineName(i))
	})
	elapsed := time.Since(started)
	if finished := machines.finish(); err == nil {
		err = finished
	}
	return elapsed, err
}

func floorAssociation(ctx context.Context, mgmt, pool client.Client, host *bmov1alpha1.BareMetalHost, run floorRun, machine string) error {
	userData := []byte("#cloud-config\n")
	if run.contract {
		m3m := &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{Namespace: run.machines, Name: machine}}
		patch := client.MergeFrom(m3m.DeepCopy())
		m3m.Finalizers = []string{infrav1.Metal3MachineFinalizer}
		if err := mgmt.Patch(ctx, m3m, patch); err != nil {
			return err
		}
		bootstrap := &corev1.Secret{}
		if err := mgmt.Get(ctx, client.ObjectKey{Namespace: run.machines, Name: floorBootstrapSecret}, bootstrap); err != nil {
			return err
		}
		userData = bootstrap.Data["value"]
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: host.Namespace, Name: machine + "-user-data"},
		Data:       map[string][]byte{"value": userData, "format": []byte("cloud-config")},
	}
	if err := pool.Create(ctx, secret); err != nil {
		return err
	}
	host.Spec.ConsumerRef = &corev1.ObjectReference{APIVersion: infrav1.GroupVersion.String(), Kind: "Metal3Machine", Namespace: run.machines, Name: machine}
	host.Spec.Image = &bmov1alpha1.Image{URL: env.Image.URL, Checksum: ptr.Deref(env.Image.Checksum, ""), ChecksumType: bmov1alpha1.SHA256, DiskFormat: ptr.To(env.Image.DiskFormat)}
	host.Spec.UserData = &corev1.SecretReference{Namespace: host.Namespace, Name: secret.Name}
	if err := pool.Update(ctx, host); err != nil {
		return err
	}
	m3m := &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{Namespace: run.machines, Name: machine}}
	patch := client.MergeFrom(m3m.DeepCopy())
	conditions.Set(m3m, metav1.Condition{Type: infrav1.HostAssociatedCondition, Status: metav1.ConditionTrue, Reason: infrav1.AssociatedReason,
		Message: "Host " + host.Namespace + "/" + host.Name})
	m3m.Status.UserData = host.Spec.UserData
	return mgmt.Status().Patch(ctx, m3m, patch)
}

func floorMachineName(i int) string { return fmt.Sprintf("floor-%d", i) }

// floorMachineIn makes a floor's Metal3Machine i in namespace, without
// owner: the provider leaves it alone.
func floorMachineIn(namespace string) func(int) client.Object {
	return func(i int) client.Object {
		return &infrav1.Metal3Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: floorMachineName(i)},
			Spec:       infrav1.Metal3MachineSpec{Image: env.Image},
		}
	}
}

// prepareFloor returns a floor's hosts, in namespace hostNamespace, and its
// management client, with the provider's limits.
func (a *association) prepareFloor(ctx context.Context, hostNamespace string) (*bmov1alpha1.BareMetalHostList, client.Client, error) {
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := a.hosts.Client.List(ctx, hosts, client.InNamespace(hostNamespace)); err != nil {
		return nil, nil, err
	}
	mgmt, err := throttledClient(a.mgmt.Config, providerQPS, providerBurst)
	return hosts, mgmt, err
}

// throttledClient is a client with the rate limits qps and burst, per
// kind, as the provider's clients have.
func throttledClient(cfg *rest.Config, qps float32, burst int) (client.Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = qps, burst
	return client.New(cfg, client.Options{Scheme: env.Scheme()})
}

// createCluster plays Cluster API's part up to the machines: the Cluster
// with its infrastructure provisioned, the Metal3Cluster, the bootstrap
// data, and n Machines whose Metal3Machines come later.
func (a *association) createCluster(ctx context.Context, n int) error {
	c := a.mgmt.Client
	const name = "assoc"
	base := newClusterBase(assocNamespace, name)
	base.m3c.Spec.CloudProviderEnabled = ptr.To(true) // no workload cluster here
	var objects []client.Object
	if a.remote {
		// The identity first, so the Metal3Cluster never waits for it.
		objects = append(objects, testenv.IdentitySecret(assocNamespace, name+"-pool", a.identity))
		base.m3c.Spec.IdentityRef = &infrav1.IdentityRef{Name: name + "-pool"}
	}
	if err := createAll(ctx, c, append(objects, base.objects()...)); err != nil {
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

// createMachines creates the n Machines m-<i> of cluster name in the
// association's namespace, with their bootstrap data, whose
// Metal3Machines come later.
func createMachines(ctx context.Context, c client.Client, name string, n int) error {
	return parallel(n, 8, func(i int) error {
		return c.Create(ctx, &clusterv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: assocNamespace, Name: fmt.Sprintf("m-%d", i), Labels: map[string]string{clusterv1.ClusterNameLabel: name}},
			Spec: clusterv1.MachineSpec{
				ClusterName: name,
				Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(name + "-bootstrap")},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: infrav1.GroupVersion.Group, Kind: "Metal3Machine", Name: fmt.Sprintf("m-%d", i),
				},
			},
		})
	})
}

// associateMachines creates the n Metal3Machines and waits until all are
// HostAssociated, watching them (see watchNamespace); the window starts
// with the first creation.
func associateMachines(ctx context.Context, mgmt *testenv.Env, n int) (started, associated time.Time, err error) {
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	watched, err := watchNamespace(watchCtx, mgmt.Config, assocNamespace, &infrav1.Metal3Machine{})
	if err != nil {
		return started, started, err
	}
	machines, err := listMachines(ctx, mgmt.Client, n)
	if err != nil {
		return started, started, err
	}
	started = time.Now()
	if err := createMetal3Machines(ctx, mgmt.Client, machines); err != nil {
		return started, started, err
	}
	err = pollUntil(ctx, 30*time.Minute, flowPoll, "machines associated", func() (bool, error) {
		return metal3MachinesWith(ctx, watched, assocNamespace, infrav1.HostAssociatedCondition, n)
	})
	return started, time.Now(), err
}

// listMachines reads the n Machines of the association's namespace, whose
// Metal3Machines are still to come.
func listMachines(ctx context.Context, c client.Client, n int) ([]clusterv1.Machine, error) {
	machines := &clusterv1.MachineList{}
	if err := c.List(ctx, machines, client.InNamespace(assocNamespace)); err != nil {
		return nil, err
	}
	if len(machines.Items) != n {
		return nil, fmt.Errorf("%d Machines in namespace %s, want %d", len(machines.Items), assocNamespace, n)
	}
	return machines.Items, nil
}

// createMetal3Machines creates the Metal3Machines of machines, owned by
// them as Cluster API would make them, as fast as the server takes them.
func createMetal3Machines(ctx context.Context, c client.Client, machines []clusterv1.Machine) error {
	return parallel(len(machines), 8, func(i int) error {
		machine := &machines[i]
		return c.Create(ctx, &infrav1.Metal3Machine{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: assocNamespace, Name: machine.Name, Labels: map[string]string{clusterv1.ClusterNameLabel: "assoc"},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: machine.Name, UID: machine.UID, Controller: ptr.To(true),
				}},
			},
			Spec: infrav1.Metal3MachineSpec{Image: env.Image},
		})
	})
}

func registerHostsParallel(ctx context.Context, c client.Client, namespace string, n int) error {
	const batch = 50
	return parallel((n+batch-1)/batch, 8, func(b int) error {
		count := min(batch, n-b*batch)
		return testenv.RegisterHosts(ctx, c, namespace, fmt.Sprintf("%s-b%d", namespace, b), count)
	})
}

func metal3MachinesWith(ctx context.Context, c client.Reader, ns, condition string, want int) (bool, error) {
	list := &infrav1.Metal3MachineList{}
	if err := c.List(ctx, list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	n := 0
	for i := range list.Items {
		if conditions.IsTrue(&list.Items[i], condition) {
			n++
		}
	}
	return n >= want, nil
}

// parallel runs do(0..n-1) on workers goroutines; the first error wins.
func parallel(n, workers int, do func(int) error) error {
	work := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := do(i); err != nil {
					errs <- err
					for range work { // drain, so the feeder ends
					}
					return
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

// quietLog is an audit log and the user whose writes it watches.
type quietLog struct{ path, user string }

// quietFor is how long the provider (and the binder) must not have written
// for a run to count as at rest.
const quietFor = 10 * time.Second

// waitQuiet returns once none of the logs shows a write by its user in the
// last quietFor, for at most 10 minutes.
func waitQuiet(ctx context.Context, logs []quietLog) error {
	return pollUntil(ctx, 10*time.Minute, flowPoll, "the provider to stop writing", func() (bool, error) {
		for _, l := range logs {
			events, err := testenv.ReadAuditLog(l.path)
			if err != nil {
				return false, err
			}
			for _, e := range filterUser(events, l.user) {
				if e.IsWrite() && time.Since(e.RequestReceivedTimestamp) < quietFor {
					return false, nil
				}
			}
		}
		return true, nil
	})
}

// associationDriver is the host driver of an association run on namespaces:
// fast enough to make a thousand hosts available in a few minutes, and
// keeping each host provisioning for provisionHold. With a hold longer than
// the run, what is measured is the association alone: the provider records
// no host provisioned within the window, as with real hardware, which takes
// minutes to provision, and as the floors, which provision nothing. Without
// one, hosts provision within a second, as in BMO's test mode, and the
// provider's records of it share the window and its client limits.
func associationDriver(provisionHold time.Duration, namespaces ...string) hostdriver.Options {
	return hostdriver.Options{
		Namespaces: namespaces, QPS: 1000, Burst: 2000, Workers: 16,
		Delays: hostdriver.Delays{Provision: provisionHold},
	}
}
