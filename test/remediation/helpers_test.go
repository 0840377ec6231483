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
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
)

// cluster is one workload cluster of a scenario: where its objects are on
// the management cluster and where its hosts are.
type cluster struct {
	mgmt      client.Client
	namespace string
	name      string
	hosts     client.Client
	// hostsConfig reaches the hosts' API server, for watching a host.
	hostsConfig *rest.Config
}

// createHealthCheck creates the workers' MachineHealthCheck, remediating
// through a Metal3RemediationTemplate with the strategy given. A Node not
// Ready for a few seconds makes its machine unhealthy.
func (c *cluster) createHealthCheck(ctx context.Context, g Gomega, retryLimit int32, timeout time.Duration) {
	template := &infrav1.Metal3RemediationTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: c.name + "-reboot"},
		Spec: infrav1.Metal3RemediationTemplateSpec{Template: infrav1.Metal3RemediationTemplateResource{
			Spec: infrav1.Metal3RemediationSpec{Strategy: &infrav1.RemediationStrategy{
				Type: infrav1.RebootRemediationStrategy, RetryLimit: retryLimit, TimeoutSeconds: int32(timeout / time.Second),
			}},
		}},
	}
	unhealthyAfter := ptr.To[int32](3)
	check := &clusterv1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: c.name + "-workers"},
		Spec: clusterv1.MachineHealthCheckSpec{
			ClusterName: c.name,
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"nodepool": c.name + "-workers"}},
			Checks: clusterv1.MachineHealthCheckChecks{UnhealthyNodeConditions: []clusterv1.UnhealthyNodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, TimeoutSeconds: unhealthyAfter},
				{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, TimeoutSeconds: unhealthyAfter},
			}},
			Remediation: clusterv1.MachineHealthCheckRemediation{TemplateRef: clusterv1.MachineHealthCheckRemediationTemplateReference{
				APIVersion: infrav1.GroupVersion.String(), Kind: "Metal3RemediationTemplate", Name: template.Name,
			}},
		},
	}
	g.Expect(c.mgmt.Create(ctx, template)).To(Succeed())
	g.Expect(c.mgmt.Create(ctx, check)).To(Succeed())
}

// runningWorker waits for the cluster's only worker to run with a Ready
// Node, and returns the Machine, its host and its Node.
func (c *cluster) runningWorker(ctx context.Context, g Gomega, workload client.Client, except string) (*clusterv1.Machine, *bmov1alpha1.BareMetalHost, *corev1.Node) {
	var (
		machine *clusterv1.Machine
		host    *bmov1alpha1.BareMetalHost
		node    *corev1.Node
	)
	g.Eventually(func(g Gomega) {
		machines := &clusterv1.MachineList{}
		g.Expect(c.mgmt.List(ctx, machines, client.InNamespace(c.namespace),
			client.MatchingLabels{"nodepool": c.name + "-workers"})).To(Succeed())
		machine = nil
		for i := range machines.Items {
			if m := &machines.Items[i]; m.Name != except && m.DeletionTimestamp.IsZero() {
				machine = m
			}
		}
		g.Expect(machine).NotTo(BeNil(), "a worker Machine of %s other than %q", c.name, except)
		g.Expect(machine.Status.Phase).To(Equal(string(clusterv1.MachinePhaseRunning)), "Machine %s", machine.Name)
		g.Expect(machine.Status.NodeRef.IsDefined()).To(BeTrue(), "Machine %s has a Node", machine.Name)
		host = c.hostOf(ctx, g, machine)
		node = &corev1.Node{}
		g.Expect(workload.Get(ctx, client.ObjectKey{Name: machine.Status.NodeRef.Name}, node)).To(Succeed())
		g.Expect(nodeReady(node)).To(BeTrue(), "Node %s is Ready", node.Name)
	}).WithTimeout(5*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "the worker of %s runs", c.name)
	return machine, host, node
}

// hostOf is the host machine's Metal3Machine records, or in HostClaim
// mode the host its claim is bound to.
func (c *cluster) hostOf(ctx context.Context, g Gomega, machine *clusterv1.Machine) *bmov1alpha1.BareMetalHost {
	m3m := c.metal3Machine(ctx, g, machine)
	key := m3m.Annotations[infrav1.HostAnnotation]
	if _, claimed := m3m.Annotations[infrav1.HostClaimAnnotation]; claimed {
		ref := c.claimOf(ctx, g, machine).Status.BareMetalHost
		g.Expect(ref).NotTo(BeNil(), "the claim of Metal3Machine %s is bound", m3m.Name)
		key = ref.Namespace + "/" + ref.Name
	}
	namespace, name, ok := strings.Cut(key, "/")
	g.Expect(ok).To(BeTrue(), "Metal3Machine %s has a host", m3m.Name)
	host := &bmov1alpha1.BareMetalHost{}
	g.Expect(c.hosts.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, host)).To(Succeed())
	return host
}

// claimOf is the HostClaim of machine, in HostClaim mode.
func (c *cluster) claimOf(ctx context.Context, g Gomega, machine *clusterv1.Machine) *bmov1alpha1.HostClaim {
	m3m := c.metal3Machine(ctx, g, machine)
	namespace, name, ok := strings.Cut(m3m.Annotations[infrav1.HostClaimAnnotation], "/")
	g.Expect(ok).To(BeTrue(), "Metal3Machine %s has a claim", m3m.Name)
	claim := &bmov1alpha1.HostClaim{}
	g.Expect(c.hosts.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, claim)).To(Succeed())
	return claim
}

func (c *cluster) metal3Machine(ctx context.Context, g Gomega, machine *clusterv1.Machine) *infrav1.Metal3Machine {
	m3m := &infrav1.Metal3Machine{}
	g.Expect(c.mgmt.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: machine.Spec.InfrastructureRef.Name}, m3m)).To(Succeed())
	return m3m
}

// remediationEvents are the reasons of the Events recorded on the
// remediation name, oldest first.
func (c *cluster) remediationEvents(ctx context.Context, g Gomega, name string) []string {
	var reasons []string
	for _, e := range c.events(ctx, g, name) {
		reasons = append(reasons, e.Reason)
	}
	return reasons
}

// logEvents logs the Events recorded on the remediation name: what it
// decided, and why.
func (c *cluster) logEvents(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	for _, e := range c.events(ctx, NewWithT(t), name) {
		t.Logf("  %s %s: %s", e.EventTime.Format("15:04:05.000"), e.Reason, e.Note)
	}
}

func (c *cluster) events(ctx context.Context, g Gomega, name string) []eventsv1.Event {
	list := &eventsv1.EventList{}
	g.Expect(c.mgmt.List(ctx, list, client.InNamespace(c.namespace))).To(Succeed())
	var events []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "Metal3Remediation" && e.Regarding.Name == name {
			events = append(events, e)
		}
	}
	sort.Slice(events, func(i, j int) bool { return events[i].EventTime.Before(&events[j].EventTime) })
	return events
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// hostState is one state of a host as a watch saw it.
type hostState struct {
	poweredOn, rebootAnnotation bool
}

// hostHistory records every state of one host, from a watch: a power-off
// may last less than any poll.
type hostHistory struct {
	mu     sync.Mutex
	states []hostState
}

// watchHost records the states of c's host from now until the test ends.
func (c *cluster) watchHost(t *testing.T, host *bmov1alpha1.BareMetalHost) *hostHistory {
	t.Helper()
	watcher, err := client.NewWithWatch(c.hostsConfig, client.Options{Scheme: env.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := watcher.Watch(ctx, &bmov1alpha1.BareMetalHostList{}, client.InNamespace(host.Namespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", host.Name)})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	h := &hostHistory{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for event := range w.ResultChan() {
			seen, ok := event.Object.(*bmov1alpha1.BareMetalHost)
			if !ok || event.Type == watch.Error {
				continue
			}
			state := hostState{poweredOn: seen.Status.PoweredOn}
			for k := range seen.Annotations {
				if strings.HasPrefix(k, infrav1.RemediationRebootAnnotationPrefix) {
					state.rebootAnnotation = true
				}
			}
			h.mu.Lock()
			if n := len(h.states); n == 0 || h.states[n-1] != state {
				h.states = append(h.states, state)
			}
			h.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		cancel()
		<-done
	})
	return h
}

// powerCycled reports whether the host was seen powered off while the
// remediation's reboot annotation was on it, then powered on again without it.
func (h *hostHistory) powerCycled() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	off := false
	for _, s := range h.states {
		switch {
		case s.rebootAnnotation && !s.poweredOn:
			off = true
		case off && !s.rebootAnnotation && s.poweredOn:
			return true
		}
	}
	return false
}

func (h *hostHistory) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, s := range h.states {
		b.WriteString("[")
		if s.poweredOn {
			b.WriteString("on")
		} else {
			b.WriteString("off")
		}
		if s.rebootAnnotation {
			b.WriteString(" +reboot")
		}
		b.WriteString("] ")
	}
	return b.String()
}

// workloadLoad is what a scenario runs on its worker's Node in the
// workload cluster, which has no kubelet, scheduler or controller
// manager: pods bound to the Node (as the scheduler binds them), one that
// tolerates the out-of-service taint, and a volume attachment naming it.
type workloadLoad struct {
	evicted    []*corev1.Pod
	tolerating *corev1.Pod
	attachment *storagev1.VolumeAttachment
}

// runLoad creates the load of a scenario on node, in namespace.
func runLoad(ctx context.Context, g Gomega, workload client.Client, namespace string, node *corev1.Node) *workloadLoad {
	g.Expect(env.CreateNamespace(ctx, workload, namespace)).To(Succeed())
	pod := func(name string, tolerations ...corev1.Toleration) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: corev1.PodSpec{
				NodeName:    node.Name,
				Containers:  []corev1.Container{{Name: "app", Image: "registry.example.com/app:1"}},
				Tolerations: tolerations,
			},
		}
	}
	load := &workloadLoad{
		evicted: []*corev1.Pod{pod("db-0"), pod("web-0")},
		tolerating: pod("node-agent", corev1.Toleration{
			Key: corev1.TaintNodeOutOfService, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
		}),
		attachment: &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: "csi-" + namespace},
			Spec: storagev1.VolumeAttachmentSpec{
				Attacher: "csi.example.com", NodeName: node.Name,
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-" + namespace)},
			},
		},
	}
	for _, obj := range []client.Object{load.evicted[0], load.evicted[1], load.tolerating, load.attachment} {
		g.Expect(workload.Create(ctx, obj)).To(Succeed())
	}
	return load
}

// evict does what the workload cluster's taint eviction controller does
// to a Node tainted out-of-service: it deletes the pods that do not
// tolerate the taint. Bound to a Node whose kubelet cannot answer, they
// are terminating, not gone.
func (l *workloadLoad) evict(ctx context.Context, g Gomega, workload client.Client) {
	for _, pod := range l.evicted {
		g.Expect(workload.Delete(ctx, pod)).To(Succeed())
		terminating := &corev1.Pod{}
		g.Expect(workload.Get(ctx, client.ObjectKeyFromObject(pod), terminating)).To(Succeed())
		g.Expect(terminating.DeletionTimestamp).NotTo(BeNil(), "pod %s is terminating", pod.Name)
	}
}

// detach does what the attach-detach controller does to a Node out of
// service: it detaches its volumes at once, deleting their attachments.
func (l *workloadLoad) detach(ctx context.Context, g Gomega, workload client.Client) {
	g.Expect(workload.Delete(ctx, l.attachment)).To(Succeed())
}

// collect does what the pod garbage collector does to the terminating pods
// of a Node out of service: it force-deletes them.
func (l *workloadLoad) collect(ctx context.Context, g Gomega, workload client.Client) {
	for _, pod := range l.evicted {
		g.Expect(client.IgnoreNotFound(workload.Delete(ctx, pod, client.GracePeriodSeconds(0)))).To(Succeed())
	}
}

// outOfService returns node's out-of-service taint, nil if it has none.
func outOfService(node *corev1.Node) *corev1.Taint {
	for i := range node.Spec.Taints {
		if node.Spec.Taints[i].Key == corev1.TaintNodeOutOfService {
			return &node.Spec.Taints[i]
		}
	}
	return nil
}

// nodeRestored is the remediation's NodeRestored condition, nil if unset.
func (c *cluster) nodeRestored(ctx context.Context, g Gomega, name string) *metav1.Condition {
	m3r := &infrav1.Metal3Remediation{}
	g.Expect(c.mgmt.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: name}, m3r)).To(Succeed())
	return conditions.Get(m3r, infrav1.RemediationNodeRestoredCondition)
}

// heldOff asserts that host is powered off with the remediation's reboot
// annotation still on it.
func (c *cluster) heldOff(ctx context.Context, g Gomega, host *bmov1alpha1.BareMetalHost, why string) {
	now := &bmov1alpha1.BareMetalHost{}
	g.Expect(c.hosts.Get(ctx, client.ObjectKeyFromObject(host), now)).To(Succeed())
	g.Expect(now.Status.PoweredOn).To(BeFalse(), "host %s is off: %s", host.Name, why)
	g.Expect(now.Annotations).To(HaveKey(HavePrefix(infrav1.RemediationRebootAnnotationPrefix)), "host %s is held off: %s", host.Name, why)
}
