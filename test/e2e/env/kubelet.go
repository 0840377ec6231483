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

package env

import (
	"context"
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// kubeletFault is what a test made of a host's kubelet.
type kubeletFault int

const (
	// wedged: the Node reports NotReady until the host next powers off.
	wedged kubeletFault = iota + 1
	// broken: the Node reports NotReady whatever happens to the host.
	broken
	// unregistered: the host boots but its kubelet has not registered a
	// Node yet.
	unregistered
)

// kubelet stands in for the kubelet of every host: a host the Bare Metal
// Operator reports provisioned and powered on boots a node, which
// registers with the workload cluster as kubelet would with the template's
// configuration (named after the host, labelled with the metal3.io/uuid of
// its metadata, Ready unless the test faulted it); a host that is no
// longer provisioned has no node. A powered-off host's node is left as it was, as the API server
// keeps a silent node until the node lifecycle controller notices.
type kubelet struct {
	workload client.Client
	hosts    []client.Client

	mu     sync.Mutex
	faults map[types.UID]kubeletFault
	// off are the hosts the power watch last saw powered off. The watch
	// is newer than the poll's list: a host it saw off posts nothing, or a
	// healed kubelet would report Ready from a list read before the host
	// went off, and the cluster would call the machine healthy mid-reboot.
	off map[types.UID]bool
}

// StartKubelet runs the kubelet stand-in until t ends: a Node on workload
// for every provisioned, powered-on host of every cluster in hostClusters
// (see kubelet), for benchmarks that build their own environment.
func StartKubelet(t testenv.T, workload *testenv.Env, hostClusters ...*testenv.Env) {
	t.Helper()
	startKubelet(t, workload, hostClusters...)
}

// startKubelet runs the stand-in until t ends, for the hosts of every
// cluster in hostClusters.
func startKubelet(t testenv.T, workload *testenv.Env, hostClusters ...*testenv.Env) *kubelet {
	t.Helper()
	k := &kubelet{workload: workload.Client, faults: map[types.UID]kubeletFault{}, off: map[types.UID]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	for _, c := range hostClusters {
		k.hosts = append(k.hosts, c.Client)
		// A wedged kubelet heals when its host powers off, which may last
		// less than a poll: power changes come from a watch.
		powerWatch, err := cache.New(c.Config, cache.Options{Scheme: Scheme(), DefaultTransform: cache.TransformStripManagedFields()})
		if err != nil {
			cancel()
			t.Fatalf("kubelet stand-in: host cache: %v", err)
		}
		informer, err := powerWatch.GetInformer(ctx, &bmov1alpha1.BareMetalHost{})
		if err != nil {
			cancel()
			t.Fatalf("kubelet stand-in: host informer: %v", err)
		}
		if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    k.sawHost,
			UpdateFunc: func(_, obj any) { k.sawHost(obj) },
		}); err != nil {
			cancel()
			t.Fatalf("kubelet stand-in: host informer: %v", err)
		}
		running.Go(func() { _ = powerWatch.Start(ctx) })
	}
	running.Go(func() {
		ticker := time.NewTicker(pollInterval)
		defer ticker.Stop()
		for {
			k.syncNodes(ctx)
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		running.Wait()
	})
	return k
}

// sawHost records the power of a host the watch saw, and heals a wedged
// kubelet whose host is off.
func (k *kubelet) sawHost(obj any) {
	host, ok := obj.(*bmov1alpha1.BareMetalHost)
	if !ok {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.off[host.UID] = !host.Status.PoweredOn
	if !host.Status.PoweredOn && k.faults[host.UID] == wedged {
		delete(k.faults, host.UID)
	}
}

// seenOff reports whether the watch last saw host powered off.
func (k *kubelet) seenOff(host types.UID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.off[host]
}

func (k *kubelet) setFault(host types.UID, fault kubeletFault) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.faults[host] = fault
}

// readiness says what host's kubelet posts now: nothing while the watch
// last saw the host off (post false), else whether its Node is Ready. One
// lock for both answers: a wedged kubelet heals when the watch sees its
// host go off, so a poll that read the host on, checked seenOff just
// before the watch saw it off, and asked for the fault just after, would
// post the healed kubelet's Ready for a host that is off — and the
// MachineHealthCheck would call the machine healthy mid-reboot and delete
// its remediation.
func (k *kubelet) readiness(host types.UID) (post, ready bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.off[host] {
		return false, false
	}
	return true, k.faults[host] != wedged && k.faults[host] != broken
}

func (k *kubelet) unregistered(host types.UID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.faults[host] == unregistered
}

// WedgeKubelet makes the kubelet of the host with UID host report its
// Node NotReady until the host powers off: a reboot heals it.
func (e *Environment) WedgeKubelet(host types.UID) { e.kubelet.setFault(host, wedged) }

// BreakKubelet makes the kubelet of the host with UID host report its Node
// NotReady for good, through reboots.
func (e *Environment) BreakKubelet(host types.UID) { e.kubelet.setFault(host, broken) }

// HoldNodeRegistration keeps the kubelet of the host with UID host from
// registering its Node, however long the host runs, until the returned
// function is called.
func (e *Environment) HoldNodeRegistration(host types.UID) (register func()) {
	e.kubelet.setFault(host, unregistered)
	return func() { e.kubelet.setFault(host, 0) }
}

// syncNodes makes the workload's Nodes match the provisioned hosts of every
// cluster holding hosts. Errors (a pool that is down, a conflict) are left
// to the next round; while a cluster cannot be read, no node is removed.
func (k *kubelet) syncNodes(ctx context.Context) {
	running, complete := map[string]bool{}, true
	for _, c := range k.hosts {
		hosts := &bmov1alpha1.BareMetalHostList{}
		if err := c.List(ctx, hosts); err != nil {
			// Its hosts keep their nodes; the others are still served.
			complete = false
			continue
		}
		for i := range hosts.Items {
			host := &hosts.Items[i]
			if host.Status.Provisioning.State != bmov1alpha1.StateProvisioned || host.Spec.ConsumerRef == nil {
				continue
			}
			running[host.Name] = true
			if host.Status.PoweredOn && !k.seenOff(host.UID) && !k.unregistered(host.UID) {
				k.registerNode(ctx, host)
			}
		}
	}
	if !complete {
		return
	}
	nodes := &corev1.NodeList{}
	if err := k.workload.List(ctx, nodes, client.HasLabels{pool.HostUIDLabel}); err != nil {
		return
	}
	for i := range nodes.Items {
		if !running[nodes.Items[i].Name] {
			_ = client.IgnoreNotFound(k.workload.Delete(ctx, &nodes.Items[i]))
		}
	}
}

// registerNode creates host's Node, and posts its readiness, as kubelet's
// registration and heartbeats do.
func (k *kubelet) registerNode(ctx context.Context, host *bmov1alpha1.BareMetalHost) {
	node := &corev1.Node{}
	err := k.workload.Get(ctx, client.ObjectKey{Name: host.Name}, node)
	switch {
	case apierrors.IsNotFound(err):
		node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   host.Name,
			Labels: map[string]string{pool.HostUIDLabel: string(metadataUUID(host))},
		}}
		if err := k.workload.Create(ctx, node); err != nil {
			return
		}
	case err != nil:
		return
	case node.Labels[pool.HostUIDLabel] != string(metadataUUID(host)):
		// Another host of the same name (another pool namespace): its node
		// was registered first.
		return
	}
	post, healthy := k.readiness(host.UID)
	if !post {
		return
	}
	ready := corev1.NodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status",
	}
	if !healthy {
		ready = corev1.NodeCondition{
			Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
			Message: "container runtime is down",
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == ready.Status {
			return
		}
	}
	now := metav1.Now()
	ready.LastHeartbeatTime, ready.LastTransitionTime = now, now
	node.Status.Conditions = []corev1.NodeCondition{ready}
	_ = k.workload.Status().Update(ctx, node)
}

// metadataUUID is the metal3.io/uuid the provider renders into the
// metadata of host's machine: the host's UID, or in HostClaim mode the
// UID of the claim the host is bound to, the only host the tenant knows.
func metadataUUID(host *bmov1alpha1.BareMetalHost) types.UID {
	if ref := host.Spec.ConsumerRef; ref != nil && ref.Kind == "HostClaim" {
		return ref.UID
	}
	return host.UID
}
