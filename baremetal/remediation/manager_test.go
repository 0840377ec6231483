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
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// fakeHost records what the manager asks of a host.
type fakeHost struct {
	poweredOn, rebootRequested, unhealthy bool
	requests, releases                    int
}

func (h *fakeHost) String() string        { return "pool/host-0" }
func (h *fakeHost) UID() types.UID        { return "host-uid" }
func (h *fakeHost) PoweredOn() bool       { return h.poweredOn }
func (h *fakeHost) RebootRequested() bool { return h.rebootRequested }
func (h *fakeHost) MarkUnhealthy(context.Context) error {
	h.unhealthy = true
	return nil
}

func (h *fakeHost) RequestReboot(context.Context) error {
	h.requests++
	h.rebootRequested = true
	return nil
}

func (h *fakeHost) ReleaseReboot(context.Context) error {
	h.releases++
	h.rebootRequested = false
	return nil
}

// fakeNodes is a workload cluster of at most one Node of the machine.
type fakeNodes struct {
	node        *corev1.Node
	unreachable bool
	deleted     []string
	restored    *NodeBackup
	// version is the cluster's Kubernetes version (nil: not told); drain
	// what its Node out of service still holds.
	version            *version.Info
	drain              Drain
	tainted, untainted int
	drainRead          bool
}

func (n *fakeNodes) Version(context.Context) (*version.Info, error) {
	if n.unreachable {
		return nil, fmt.Errorf("%w: connection refused", ErrWorkloadUnreachable)
	}
	return n.version, nil
}

func (n *fakeNodes) Taint(_ context.Context, node *corev1.Node) error {
	n.tainted++
	taint := OutOfServiceTaint
	taint.TimeAdded = ptrTime(now)
	node.Spec.Taints = append(node.Spec.Taints, taint)
	return nil
}

func (n *fakeNodes) Untaint(_ context.Context, node *corev1.Node) error {
	n.untainted++
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, isOutOfServiceTaint)
	return nil
}

func (n *fakeNodes) Drain(context.Context, *corev1.Node) (Drain, error) {
	if n.unreachable {
		return Drain{}, fmt.Errorf("%w: connection refused", ErrWorkloadUnreachable)
	}
	n.drainRead = true
	return n.drain, nil
}

func (n *fakeNodes) Find(context.Context) (*corev1.Node, error) {
	if n.unreachable {
		return nil, fmt.Errorf("%w: connection refused", ErrWorkloadUnreachable)
	}
	return n.node, nil
}

func (n *fakeNodes) Delete(_ context.Context, node *corev1.Node) error {
	n.deleted = append(n.deleted, node.Name)
	n.node = nil
	return nil
}

func (n *fakeNodes) Restore(_ context.Context, _ *corev1.Node, backup NodeBackup) error {
	n.restored = &backup
	return nil
}

type fakeMachine struct {
	unhealthy, deleting, replaceable bool
	replacementRequested             bool
	previous, recorded               *History
}

func (m *fakeMachine) PreviousRemediation() (History, bool) {
	if m.previous == nil {
		return History{}, false
	}
	return *m.previous, true
}

func (m *fakeMachine) RecordRemediation(_ context.Context, h History) error {
	m.recorded = &h
	return nil
}

func (m *fakeMachine) Unhealthy() bool   { return m.unhealthy }
func (m *fakeMachine) Deleting() bool    { return m.deleting }
func (m *fakeMachine) Replaceable() bool { return m.replaceable }
func (m *fakeMachine) RequestReplacement(context.Context, string) error {
	m.replacementRequested = true
	return nil
}

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func node(uid types.UID) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: "host-0", UID: uid,
		Labels: map[string]string{"role": "db"}, Annotations: map[string]string{"owner": "team-a"},
	}}
}

// notReadySince is a Node registered at registered, NotReady since since.
func notReadySince(registered, since time.Time) *corev1.Node {
	n := node("new")
	n.CreationTimestamp = metav1.NewTime(registered)
	n.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(since),
	}}
	return n
}

// remediationAt is a remediation in phase with the PowerCycled reason
// (none if empty), retries so far, last try ago, and a saved Node of UID
// backup (none if empty).
func remediationAt(phase, reason string, retries int32, ago time.Duration, backup types.UID) *infrav1.Metal3Remediation {
	r := &infrav1.Metal3Remediation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "worker-0", CreationTimestamp: metav1.NewTime(now)},
		Spec: infrav1.Metal3RemediationSpec{Strategy: &infrav1.RemediationStrategy{
			Type: infrav1.RebootRemediationStrategy, RetryLimit: 2, TimeoutSeconds: 5 * 60,
		}},
		Status: infrav1.Metal3RemediationStatus{Phase: phase, RetryCount: retries},
	}
	if retries > 0 {
		r.Status.LastRemediated = ptrTime(now.Add(-ago))
	}
	if reason != "" {
		status := metav1.ConditionFalse
		if reason == infrav1.RemediationPowerCycledReason {
			status = metav1.ConditionTrue
		}
		setCondition(r, infrav1.RemediationPowerCycledCondition, status, reason, "")
	}
	if backup != "" {
		if err := saveBackup(r, node(backup)); err != nil {
			panic(err)
		}
	}
	return r
}

// withNodeStrategy records strategy on r, as its first powered-off step does.
func withNodeStrategy(r *infrav1.Metal3Remediation, strategy string) *infrav1.Metal3Remediation {
	if r.Annotations == nil {
		r.Annotations = map[string]string{}
	}
	r.Annotations[infrav1.RemediationNodeStrategyAnnotation] = strategy
	return r
}

// TestReconcile runs the steps of the Node's deletion (the flow of
// workload clusters older than 1.28); outofservice_test.go runs the
// out-of-service taint's.
func TestReconcile(t *testing.T) {
	tests := []struct {
		name        string
		remediation *infrav1.Metal3Remediation
		host        fakeHost
		nodes       fakeNodes
		machine     fakeMachine

		wantPhase         string
		wantRetries       int32
		wantPowerCycled   string // reason, "" if unset
		wantNodeRestored  string // reason, "" if unset
		wantRebootOnHost  bool
		wantBackup        bool
		wantDeleted       bool
		wantRestored      bool
		wantHostUnhealthy bool
		wantReplacement   bool
		wantRequeue       time.Duration
		wantEvents        []string
	}{{
		name:        "a new remediation powers the host off and counts a try",
		remediation: remediationAt("", "", 0, 0, ""),
		host:        fakeHost{poweredOn: true}, nodes: fakeNodes{node: node("old")}, machine: fakeMachine{unhealthy: true},
		wantPhase: infrav1.RemediationPhaseRunning, wantRetries: 1, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantRebootOnHost: true, wantRequeue: powerRequeue, wantEvents: []string{EventRebootRequested},
	}, {
		name:        "a try whose status was lost after the host was annotated is counted once",
		remediation: remediationAt("", "", 0, 0, ""),
		host:        fakeHost{poweredOn: true, rebootRequested: true}, nodes: fakeNodes{node: node("old")}, machine: fakeMachine{unhealthy: true},
		wantPhase: infrav1.RemediationPhaseRunning, wantRetries: 1, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantRebootOnHost: true, wantRequeue: powerRequeue, wantEvents: []string{EventRebootRequested},
	}, {
		name:        "a host still on is waited for",
		remediation: remediationAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason, 1, time.Second, ""),
		host:        fakeHost{poweredOn: true, rebootRequested: true}, nodes: fakeNodes{node: node("old")}, machine: fakeMachine{unhealthy: true},
		wantPhase: infrav1.RemediationPhaseRunning, wantRetries: 1, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantRebootOnHost: true, wantRequeue: powerRequeue,
	}, {
		name:        "an annotation removed by someone else is set again, not counted",
		remediation: remediationAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason, 1, time.Second, ""),
		host:        fakeHost{poweredOn: true}, nodes: fakeNodes{node: node("old")}, machine: fakeMachine{unhealthy: true},
		wantPhase: infrav1.RemediationPhaseRunning, wantRetries: 1, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantRebootOnHost: true, wantRequeue: powerRequeue,
	}, {
		name: "a powered-off host's Node is saved before it is deleted",
		remediation: withNodeStrategy(remediationAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason, 1, time.Second, ""),
			infrav1.RemediationNodeDeletion),
		host: fakeHost{rebootRequested: true}, nodes: fakeNodes{node: node("old")}, machine: fakeMachine{unhealthy: true},
		wantPhase: infrav1.RemediationPhaseRunning, wantRetries: 1, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantRebootOnHost: true, wantBackup: true,
	}, {
		name:        "once saved the Node is deleted and the remediation waits, the host still off",
		remediation: remediationAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason, 1, time.Second, "old"),
		host:        fakeHost{rebootRequested: true}, nodes: fakeNodes{node: node("old")}, machine: fakeMachine{unhealthy: true},
		wantPhase: infrav1.RemediationPhaseWaiting, wantRetries: 1, wantPowerCycled: infrav1.RemediationPoweringOnReason,
		wantNodeRestored: infrav1.RemediationWaitingForNodeReason, wantRebootOnHost: true, wantBackup: true, wantDeleted: true,
		wantEvents: []string{EventNodeDeleted},
	}, {
		name: "without a Node there is nothing to save or delete",
		remediation: withNodeStrategy(remediationAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason, 1, time.Second, ""),
			infrav1.RemediationNodeDeletion),
		host: fakeHost{rebootRequested: true}, machine: fakeMachine{unhealthy: true},
		wantPhase: infrav1.RemediationPhaseWaiting, wantRetries: 1, wantPowerCycled: infrav1.RemediationPoweringOnReason,
		wantNodeRestored: infrav1.RemediationWaitingForNodeReason, wantRebootOnHost: true,
	}, {
		name:        "an unreachable workload cluster is reported and retried, the host kept off",
		remediation: remediationAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason, 1, time.Second, ""),
		host:        fakeHost{rebootRequested: true}, nodes: fakeNodes{unreachable: true}, machine: fakeMachine{unhealthy: true},
		wantPhase: infrav1.RemediationPhaseRunning, wantRetries: 1, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantNodeRestored: infrav1.RemediationWorkloadClusterUnreachableReason, wantRebootOnHost: true, wantRequeue: nodeRequeue,
	}, {
		name:        "waiting powers the host on",
		remediation: remediationAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPoweringOnReason, 1, time.Second, "old"),
		host:        fakeHost{rebootRequested: true}, machine: fakeMachine{unhealthy: true},
		wantPhase: infrav1.RemediationPhaseWaiting, wantRetries: 1, wantPowerCycled: infrav1.RemediationPoweringOnReason,
		wantNodeRestored: infrav1.RemediationWaitingForNodeReason, wantBackup: true, wantRequeue: nodeRequeue,
		wantEvents: []string{EventPowerOnRequested},
	}, {
		name:        "the Node registered again gets its labels and annotations back",
		remediation: remediationAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPoweringOnReason, 1, time.Minute, "old"),
		host:        fakeHost{poweredOn: true}, nodes: fakeNodes{node: node("new")}, machine: fakeMachine{unhealthy: true},
		wantPhase: infrav1.RemediationPhaseWaiting, wantRetries: 1, wantPowerCycled: infrav1.RemediationPowerCycledReason,
		wantNodeRestored: infrav1.RemediationNodeRestoredReason, wantRestored: true, wantRequeue: 4 * time.Minute,
		wantEvents: []string{EventNodeRestored},
	}, {
		name:        "the deleted Node still in a stale cache is not taken for the new one",
		remediation: remediationAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPoweringOnReason, 1, time.Minute, "old"),
		host:        fakeHost{poweredOn: true}, nodes: fakeNodes{node: node("old")}, machine: fakeMachine{unhealthy: true},
		wantPhase: infrav1.RemediationPhaseWaiting, wantRetries: 1, wantPowerCycled: infrav1.RemediationPowerCycledReason,
		wantNodeRestored: infrav1.RemediationWaitingForNodeReason, wantBackup: true, wantRequeue: nodeRequeue,
	}, {
		name:        "a machine still unhealthy after the timeout is tried again",
		remediation: remediationAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPowerCycledReason, 1, 6*time.Minute, ""),
		host:        fakeHost{poweredOn: true}, nodes: fakeNodes{node: node("new")}, machine: fakeMachine{unhealthy: true},
		wantPhase: infrav1.RemediationPhaseRunning, wantRetries: 2, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantRebootOnHost: true, wantRequeue: powerRequeue, wantEvents: []string{EventRetrying, EventRebootRequested},
	}, {
		name:        "a machine unhealthy again soon after its last remediation counts on from it",
		remediation: remediationAt("", "", 0, 0, ""),
		host:        fakeHost{poweredOn: true}, nodes: fakeNodes{node: node("new")},
		machine: fakeMachine{unhealthy: true, previous: &History{
			RetryCount: 1, LastRemediated: metav1.NewTime(now.Add(-time.Minute)), HealthyAt: metav1.NewTime(now.Add(-10 * time.Second)),
		}},
		wantPhase: infrav1.RemediationPhaseRunning, wantRetries: 2, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantRebootOnHost: true, wantRequeue: powerRequeue, wantEvents: []string{EventRebootRequested},
	}, {
		name:        "and gives up at once when that one used the last try",
		remediation: remediationAt("", "", 0, 0, ""),
		host:        fakeHost{poweredOn: true}, nodes: fakeNodes{node: node("new")},
		machine: fakeMachine{unhealthy: true, replaceable: true, previous: &History{
			RetryCount: 2, LastRemediated: metav1.NewTime(now.Add(-time.Minute)), HealthyAt: metav1.NewTime(now.Add(-10 * time.Second)),
		}},
		wantPhase: infrav1.RemediationPhaseDeleting, wantRetries: 2, wantHostUnhealthy: true, wantReplacement: true,
		wantEvents: []string{EventRetriesExhausted},
	}, {
		name:        "a Node never Ready since it registered after the last reboot was not healed, however long ago",
		remediation: remediationAt("", "", 0, 0, ""),
		host:        fakeHost{poweredOn: true}, nodes: fakeNodes{node: notReadySince(now.Add(-40*time.Minute), now.Add(-40*time.Minute+5*time.Second))},
		machine: fakeMachine{unhealthy: true, replaceable: true, previous: &History{
			RetryCount: 1, LastRemediated: metav1.NewTime(now.Add(-time.Hour)), HealthyAt: metav1.NewTime(now.Add(-40 * time.Minute)),
		}},
		wantPhase: infrav1.RemediationPhaseRunning, wantRetries: 2, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantRebootOnHost: true, wantRequeue: powerRequeue, wantEvents: []string{EventRebootRequested},
	}, {
		name:        "a Node that was Ready for a while since was healed",
		remediation: remediationAt("", "", 0, 0, ""),
		host:        fakeHost{poweredOn: true}, nodes: fakeNodes{node: notReadySince(now.Add(-40*time.Minute), now.Add(-time.Minute))},
		machine: fakeMachine{unhealthy: true, replaceable: true, previous: &History{
			RetryCount: 2, LastRemediated: metav1.NewTime(now.Add(-time.Hour)), HealthyAt: metav1.NewTime(now.Add(-40 * time.Minute)),
		}},
		wantPhase: infrav1.RemediationPhaseRunning, wantRetries: 1, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantRebootOnHost: true, wantRequeue: powerRequeue, wantEvents: []string{EventRebootRequested},
	}, {
		name:        "a machine healthy for longer than the timeout starts afresh",
		remediation: remediationAt("", "", 0, 0, ""),
		host:        fakeHost{poweredOn: true}, nodes: fakeNodes{node: node("new")},
		machine: fakeMachine{unhealthy: true, replaceable: true, previous: &History{
			RetryCount: 2, LastRemediated: metav1.NewTime(now.Add(-time.Hour)), HealthyAt: metav1.NewTime(now.Add(-50 * time.Minute)),
		}},
		wantPhase: infrav1.RemediationPhaseRunning, wantRetries: 1, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantRebootOnHost: true, wantRequeue: powerRequeue, wantEvents: []string{EventRebootRequested},
	}, {
		name:        "after the last try the host is marked unhealthy and the machine's owner replaces it",
		remediation: remediationAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPowerCycledReason, 2, 6*time.Minute, ""),
		host:        fakeHost{poweredOn: true}, nodes: fakeNodes{node: node("new")}, machine: fakeMachine{unhealthy: true, replaceable: true},
		wantPhase: infrav1.RemediationPhaseDeleting, wantRetries: 2, wantPowerCycled: infrav1.RemediationPowerCycledReason,
		wantHostUnhealthy: true, wantReplacement: true, wantEvents: []string{EventRetriesExhausted},
	}, {
		name:        "a machine nobody would replace fails",
		remediation: remediationAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPowerCycledReason, 2, 6*time.Minute, ""),
		host:        fakeHost{poweredOn: true}, nodes: fakeNodes{node: node("new")}, machine: fakeMachine{unhealthy: true},
		wantPhase: infrav1.RemediationPhaseFailed, wantRetries: 2, wantPowerCycled: infrav1.RemediationPowerCycledReason,
		wantHostUnhealthy: true, wantEvents: []string{EventRetriesExhausted},
	}, {
		name:        "a machine healthy again is left to the MachineHealthCheck",
		remediation: remediationAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPowerCycledReason, 1, 6*time.Minute, ""),
		host:        fakeHost{poweredOn: true}, nodes: fakeNodes{node: node("new")}, machine: fakeMachine{replaceable: true},
		wantPhase: infrav1.RemediationPhaseWaiting, wantRetries: 1, wantPowerCycled: infrav1.RemediationPowerCycledReason,
		wantNodeRestored: infrav1.RemediationNodeRestoredReason,
	}, {
		name:        "giving up is finished after a crash",
		remediation: remediationAt(infrav1.RemediationPhaseDeleting, infrav1.RemediationPowerCycledReason, 2, 6*time.Minute, ""),
		host:        fakeHost{poweredOn: true}, machine: fakeMachine{unhealthy: true, replaceable: true},
		wantPhase: infrav1.RemediationPhaseDeleting, wantRetries: 2, wantPowerCycled: infrav1.RemediationPowerCycledReason,
		wantHostUnhealthy: true, wantReplacement: true,
	}, {
		name:        "a Machine being deleted has its host powered on and nothing restored",
		remediation: remediationAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPoweringOnReason, 1, time.Second, "old"),
		host:        fakeHost{rebootRequested: true}, machine: fakeMachine{unhealthy: true, deleting: true},
		wantPhase: infrav1.RemediationPhaseWaiting, wantRetries: 1, wantPowerCycled: infrav1.RemediationPoweringOnReason,
		wantEvents: []string{EventRemediationEnded},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recorder := &eventRecorder{}
			host, nodes, machine := tt.host, tt.nodes, tt.machine
			m := &Manager{Remediation: tt.remediation, Host: &host, Nodes: &nodes, Machine: &machine,
				Recorder: recorder, Now: func() time.Time { return now }}
			result, err := m.Reconcile(ctrl.LoggerInto(context.Background(), ctrl.Log))
			if err != nil {
				t.Fatal(err)
			}
			r := tt.remediation
			_, backup, _ := backupOf(r)
			checks := []struct {
				what      string
				got, want any
			}{
				{"phase", r.Status.Phase, tt.wantPhase},
				{"retryCount", r.Status.RetryCount, tt.wantRetries},
				{"PowerCycled", reasonOf(r, infrav1.RemediationPowerCycledCondition), tt.wantPowerCycled},
				{"NodeRestored", reasonOf(r, infrav1.RemediationNodeRestoredCondition), tt.wantNodeRestored},
				{"reboot annotation on the host", host.rebootRequested, tt.wantRebootOnHost},
				{"saved Node", backup, tt.wantBackup},
				{"Node deleted", len(nodes.deleted) > 0, tt.wantDeleted},
				{"Node restored", nodes.restored != nil, tt.wantRestored},
				{"host unhealthy", host.unhealthy, tt.wantHostUnhealthy},
				{"replacement requested", machine.replacementRequested, tt.wantReplacement},
				{"requeue", result.RequeueAfter, tt.wantRequeue},
				{"events", fmt.Sprint(recorder.reasons), fmt.Sprint(tt.wantEvents)},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
				}
			}
			newTry := len(tt.wantEvents) > 0 && tt.wantEvents[len(tt.wantEvents)-1] == EventRebootRequested
			if newTry && (r.Status.LastRemediated == nil || !r.Status.LastRemediated.Time.Equal(now)) {
				t.Errorf("lastRemediated = %v, want now for a new try", r.Status.LastRemediated)
			}
			if tt.wantRestored && (nodes.restored.Labels["role"] != "db" || nodes.restored.Annotations["owner"] != "team-a") {
				t.Errorf("restored %+v, want the saved labels and annotations", nodes.restored)
			}
		})
	}
}

func TestReconcileDelete(t *testing.T) {
	deletedAgo := func(r *infrav1.Metal3Remediation, ago time.Duration) *infrav1.Metal3Remediation {
		r.DeletionTimestamp = ptrTime(now.Add(-ago))
		return r
	}
	tests := []struct {
		name        string
		remediation *infrav1.Metal3Remediation
		host        *fakeHost
		nodes       *fakeNodes
		machine     *fakeMachine

		wantDone, wantPoweredOn, wantRestored, wantBackup, wantRecorded bool
	}{{
		name:        "a host held off is powered on",
		remediation: deletedAgo(remediationAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason, 1, time.Second, ""), 0),
		host:        &fakeHost{rebootRequested: true}, nodes: &fakeNodes{}, machine: &fakeMachine{},
		wantDone: true, wantPoweredOn: true, wantRecorded: true,
	}, {
		name:        "the Node back after the reboot gets its labels before the remediation goes",
		remediation: deletedAgo(remediationAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPowerCycledReason, 1, time.Minute, "old"), 0),
		host:        &fakeHost{poweredOn: true}, nodes: &fakeNodes{node: node("new")}, machine: &fakeMachine{},
		wantDone: true, wantRestored: true, wantRecorded: true,
	}, {
		name:        "the remediation waits for the Node within the timeout",
		remediation: deletedAgo(remediationAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPoweringOnReason, 1, time.Minute, "old"), time.Minute),
		host:        &fakeHost{poweredOn: true}, nodes: &fakeNodes{}, machine: &fakeMachine{},
		wantBackup: true, wantRecorded: true,
	}, {
		name:        "and gives up on it after the timeout",
		remediation: deletedAgo(remediationAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPoweringOnReason, 1, time.Hour, "old"), time.Hour),
		host:        &fakeHost{poweredOn: true}, nodes: &fakeNodes{}, machine: &fakeMachine{},
		wantDone: true, wantRecorded: true,
	}, {
		name:        "a Machine being deleted has no history to keep",
		remediation: deletedAgo(remediationAt(infrav1.RemediationPhaseDeleting, infrav1.RemediationPowerCycledReason, 2, time.Hour, ""), 0),
		host:        &fakeHost{poweredOn: true}, nodes: &fakeNodes{}, machine: &fakeMachine{deleting: true},
		wantDone: true,
	}, {
		name:        "a Machine gone leaves nothing to restore",
		remediation: deletedAgo(remediationAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPoweringOnReason, 1, time.Minute, "old"), 0),
		wantDone:    true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Manager{Remediation: tt.remediation, Now: func() time.Time { return now }}
			if tt.host != nil {
				m.Host = tt.host
			}
			if tt.nodes != nil {
				m.Nodes = tt.nodes
			}
			if tt.machine != nil {
				m.Machine = tt.machine
			}
			done, _, err := m.ReconcileDelete(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			_, backup, _ := backupOf(tt.remediation)
			if done != tt.wantDone || backup != tt.wantBackup {
				t.Errorf("done %v, saved Node kept %v; want %v, %v", done, backup, tt.wantDone, tt.wantBackup)
			}
			if tt.host != nil && (tt.host.releases > 0) != tt.wantPoweredOn {
				t.Errorf("host powered on: %v, want %v", tt.host.releases > 0, tt.wantPoweredOn)
			}
			if tt.machine != nil && (tt.machine.recorded != nil) != tt.wantRecorded {
				t.Errorf("history recorded: %v, want %v", tt.machine.recorded != nil, tt.wantRecorded)
			}
			if tt.wantRecorded && (tt.machine.recorded.RetryCount != tt.remediation.Status.RetryCount ||
				!tt.machine.recorded.HealthyAt.Equal(tt.remediation.DeletionTimestamp)) {
				t.Errorf("recorded %+v, want the remediation's count and its deletion time", tt.machine.recorded)
			}
			if tt.nodes != nil && (tt.nodes.restored != nil) != tt.wantRestored {
				t.Errorf("Node restored: %v, want %v", tt.nodes.restored != nil, tt.wantRestored)
			}
		})
	}
}

func TestUnsupportedStrategyFails(t *testing.T) {
	r := remediationAt("", "", 0, 0, "")
	r.Spec.Strategy.Type = "Reprovision"
	host := &fakeHost{poweredOn: true}
	m := &Manager{Remediation: r, Host: host, Nodes: &fakeNodes{}, Machine: &fakeMachine{unhealthy: true}}
	if _, err := m.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.Status.Phase != infrav1.RemediationPhaseFailed || host.requests != 0 {
		t.Errorf("phase %q, %d reboots; want Failed, none", r.Status.Phase, host.requests)
	}
}

func reasonOf(r *infrav1.Metal3Remediation, condType string) string {
	if c := conditions.Get(r, condType); c != nil {
		return c.Reason
	}
	return ""
}

// eventRecorder records the reasons of the Events recorded.
type eventRecorder struct{ reasons []string }

func (e *eventRecorder) Eventf(_, _ runtime.Object, _, reason, _, _ string, _ ...any) {
	e.reasons = append(e.reasons, reason)
}
