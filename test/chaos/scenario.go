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

package chaos

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// pollInterval is how often a run looks again while it waits.
const pollInterval = 2 * time.Second

// addPools registers, in each pool namespace, one host per machine of the
// tenants using it, and gives each tenant its own least-privilege identity
// there. It returns the identities by tenant namespace.
func addPools(ctx context.Context, t testenv.T, e *env.Environment, tenants []tenant) (map[string][]byte, error) {
	t.Helper()
	hosts := map[string]int{}
	for _, tn := range tenants {
		hosts[tn.pool] += tn.machines
	}
	identities := map[string][]byte{}
	for _, tn := range tenants {
		// The pool's first tenant creates it; hosts forgets it then.
		if count, unmade := hosts[tn.pool]; unmade {
			kubeconfig, err := e.AddPool(ctx, t, tn.pool, tn.namespace, count)
			if err != nil {
				return nil, fmt.Errorf("pool %s: %w", tn.pool, err)
			}
			identities[tn.namespace] = kubeconfig
			delete(hosts, tn.pool)
			continue
		}
		identities[tn.namespace] = e.Pool.ServiceAccountKubeconfig(t, tn.pool, tn.namespace, 24*time.Hour, testenv.HostProviderRules()...)
	}
	return identities, nil
}

// waitHostsAvailable waits until want hosts of namespaces are available, so
// that the clusters created next associate at once, under the kills.
func waitHostsAvailable(ctx context.Context, pool client.Reader, namespaces []string, want int, timeout time.Duration) error {
	available := 0
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		available = 0
		for _, ns := range namespaces {
			hosts := &bmov1alpha1.BareMetalHostList{}
			if err := pool.List(ctx, hosts, client.InNamespace(ns)); err != nil {
				return false, nil //nolint:nilerr // the pool's API server may be slow under load: look again.
			}
			for i := range hosts.Items {
				if hosts.Items[i].Status.Provisioning.State == bmov1alpha1.StateAvailable {
					available++
				}
			}
		}
		return available == want, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d hosts available: %w", available, want, err)
	}
	return nil
}

// createClusters creates every tenant's namespace and cluster on the first
// management cluster, through the tenant's pool identity.
func createClusters(ctx context.Context, t testenv.T, e *env.Environment, tenants []tenant, identities map[string][]byte) error {
	t.Helper()
	for _, tn := range tenants {
		if err := env.CreateNamespace(ctx, e.Management.Client, tn.namespace); err != nil {
			return err
		}
		spec := env.ClusterSpec{
			Namespace: tn.namespace, Name: tn.cluster, Identity: identities[tn.namespace],
			Workers: int32(tn.machines - 1),
		}
		if tn.plainWorkers {
			spec.Workers = 0
		}
		if err := e.Management.CreateCluster(ctx, t, e.Workload, spec); err != nil {
			return fmt.Errorf("tenant %s: %w", tn.namespace, err)
		}
		if tn.plainWorkers {
			if err := usePlainWorkers(ctx, e.Management.Client, tn); err != nil {
				return fmt.Errorf("tenant %s: %w", tn.namespace, err)
			}
		}
	}
	return nil
}

// usePlainWorkers points tn's MachineDeployment, before it has any
// machine, at a copy of its Metal3MachineTemplate without dataTemplate and
// scales it up. Such a machine's Secrets are written before its host is
// claimed, in the same reconcile, which a kill can split.
func usePlainWorkers(ctx context.Context, c client.Client, tn tenant) error {
	template := &infrav1.Metal3MachineTemplate{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: tn.namespace, Name: tn.cluster + "-workers"}, template); err != nil {
		return err
	}
	plain := &infrav1.Metal3MachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.namespace, Name: tn.cluster + "-workers-plain"},
		Spec:       *template.Spec.DeepCopy(),
	}
	plain.Spec.Template.Spec.DataTemplate = nil
	if err := c.Create(ctx, plain); err != nil {
		return fmt.Errorf("create Metal3MachineTemplate %s: %w", plain.Name, err)
	}
	md := &clusterv1.MachineDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: tn.namespace, Name: tn.cluster + "-workers"}, md); err != nil {
		return err
	}
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Template.Spec.InfrastructureRef.Name = plain.Name
	md.Spec.Replicas = ptr.To(int32(tn.machines - 1))
	if err := c.Patch(ctx, md, patch); err != nil {
		return fmt.Errorf("scale MachineDeployment %s up on plain workers: %w", md.Name, err)
	}
	return nil
}

// kills is what the killer did.
type kills struct {
	// at is when each kill happened, since the chaos started.
	at  []time.Duration
	err error
}

type killer struct {
	done   chan struct{}
	result kills
}

// startKilling kills the provider opts.Kills times, each after it led for
// a random opts.KillInterval, restarting it at once. The first countdown
// starts once begin is closed, which must happen within
// opts.ConvergeTimeout; each later one once the restarted provider holds
// the leader election Lease. The provider runs as shipped, with leader
// election: a SIGKILLed leader does not release its Lease, so its
// successor waits for it to expire (15 s) before it reconciles anything,
// and a countdown from the restart would kill it while it waits, never in
// the middle of its work.
func startKilling(ctx context.Context, management client.Client, provider *testenv.Process, opts Options, begin <-chan struct{}, started time.Time) *killer {
	k := &killer{done: make(chan struct{})}
	// Seeded, so that a run's kill instants can be replayed.
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)) //nolint:gosec // G404: a chaos schedule, not a secret.
	go func() {
		defer close(k.done)
		waited := time.NewTimer(opts.ConvergeTimeout)
		defer waited.Stop()
		select {
		case <-ctx.Done():
			k.result.err = ctx.Err()
			return
		case <-waited.C:
			k.result.err = fmt.Errorf("no host was claimed within %s of the clusters' creation", opts.ConvergeTimeout)
			return
		case <-begin:
		}
		leader, err := leaseHolder(ctx, management)
		if err != nil {
			k.result.err = err
			return
		}
		for range opts.Kills {
			timer := time.NewTimer(opts.KillInterval.draw(rng))
			select {
			case <-ctx.Done():
				timer.Stop()
				k.result.err = ctx.Err()
				return
			case <-timer.C:
			}
			if err := provider.Kill(); err != nil {
				k.result.err = err
				return
			}
			k.result.at = append(k.result.at, time.Since(started))
			if err := provider.Restart(); err != nil {
				k.result.err = err
				return
			}
			if leader, err = awaitNewLeader(ctx, management, leader, opts.ConvergeTimeout); err != nil {
				k.result.err = err
				return
			}
		}
	}()
	return k
}

// providerLease is the provider's leader election Lease as shipped: in its
// namespace, under the default --leader-elect-id.
var providerLease = client.ObjectKey{Namespace: "capm3-system", Name: "controller-leader-election-capm3"}

// leaseHolder is who holds the provider's Lease now.
func leaseHolder(ctx context.Context, c client.Client) (string, error) {
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, providerLease, lease); err != nil {
		return "", fmt.Errorf("the provider's leader election Lease %s: %w", providerLease, err)
	}
	return ptr.Deref(lease.Spec.HolderIdentity, ""), nil
}

// awaitNewLeader waits until a provider other than previous holds the
// Lease, and returns it.
func awaitNewLeader(ctx context.Context, c client.Client, previous string, timeout time.Duration) (string, error) {
	var holder string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		holder, err = leaseHolder(ctx, c)
		return err == nil && holder != "" && holder != previous, nil
	})
	if err != nil {
		return "", fmt.Errorf("no restarted provider took the leader election Lease %s from %q within %s: %w", providerLease, previous, timeout, err)
	}
	return holder, nil
}

// wait returns once every kill is done.
func (k *killer) wait() kills {
	<-k.done
	return k.result
}

// waitRunning waits until every tenant's Machines are Running with a node
// and every Metal3Machine is provisioned, logging progress as it changes.
func waitRunning(ctx context.Context, t testenv.T, e *env.Environment, tenants []tenant, timeout time.Duration) error {
	t.Helper()
	last := ""
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		var progress []string
		done := true
		for _, tn := range tenants {
			running, provisioned, err := tenantProgress(ctx, e.Management.Client, tn)
			if err != nil {
				progress = append(progress, fmt.Sprintf("%s: %v", tn.namespace, err))
				done = false
				continue
			}
			progress = append(progress, fmt.Sprintf("%s: %d/%d running, %d provisioned", tn.namespace, running, tn.machines, provisioned))
			done = done && running == tn.machines && provisioned == tn.machines
		}
		if now := strings.Join(progress, "; "); now != last {
			last = now
			t.Logf("chaos: %s", now)
		}
		return done, nil
	})
	if err != nil {
		return fmt.Errorf("machines did not all run within %s (%s): %w", timeout, last, err)
	}
	return nil
}

// tenantProgress counts tn's Machines that are Running with a node, and its
// Metal3Machines that are provisioned; more of either than the tenant
// should have is an error (a machine was replaced).
func tenantProgress(ctx context.Context, c client.Reader, tn tenant) (running, provisioned int, err error) {
	machines := &clusterv1.MachineList{}
	if err := c.List(ctx, machines, client.InNamespace(tn.namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: tn.cluster}); err != nil {
		return 0, 0, err
	}
	m3ms := &infrav1.Metal3MachineList{}
	if err := c.List(ctx, m3ms, client.InNamespace(tn.namespace)); err != nil {
		return 0, 0, err
	}
	if len(machines.Items) > tn.machines || len(m3ms.Items) > tn.machines {
		return 0, 0, fmt.Errorf("%d Machines and %d Metal3Machines for %d machines", len(machines.Items), len(m3ms.Items), tn.machines)
	}
	for i := range machines.Items {
		m := &machines.Items[i]
		if m.Status.Phase == string(clusterv1.MachinePhaseRunning) && m.Status.NodeRef.IsDefined() {
			running++
		}
	}
	for i := range m3ms.Items {
		if ptr.Deref(m3ms.Items[i].Status.Initialization.Provisioned, false) {
			provisioned++
		}
	}
	return running, provisioned, nil
}

// settleTimeout bounds how long a converged run's final state may take to
// keep every invariant: the last reconciles (a Secret deleted after a lost
// race, say) may trail the machines' Running phase.
const settleTimeout = time.Minute

// checkInvariants checks the hosts' history and the final state. For a
// converged run the state is read until it keeps every invariant or
// settleTimeout passes; the violations are those of the last reading.
func checkInvariants(ctx context.Context, e *env.Environment, h *historian, r *retirements, poolNamespaces, tenantNamespaces []string,
	converged bool,
) ([]Violation, int, error) {
	var state []Violation
	var o *observed
	read := func(ctx context.Context) (bool, error) {
		var err error
		if o, err = observe(ctx, e.Pool.Client, e.Management.Client, poolNamespaces, tenantNamespaces); err != nil {
			return false, nil //nolint:nilerr // an API server slow under load: look again.
		}
		state = checkState(o)
		return len(state) == 0 || !converged, nil
	}
	err := wait.PollUntilContextTimeout(ctx, pollInterval, settleTimeout, true, read)
	if o == nil {
		return nil, 0, fmt.Errorf("read the final state: %w", err)
	}
	if err != nil && !wait.Interrupted(err) {
		return nil, 0, err
	}
	o.retired = r.retired()
	history, once := checkHistory(h.records(), o)
	violations := slices.Concat(history, state)
	slices.SortFunc(violations, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(slices.Index(Invariants, a.Invariant), slices.Index(Invariants, b.Invariant)),
			cmp.Compare(a.Detail, b.Detail))
	})
	return violations, once, nil
}
