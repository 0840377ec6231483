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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

func TestOutOfServiceSupported(t *testing.T) {
	tests := []struct {
		name string
		info *version.Info
		want bool
	}{
		{"not told", nil, false},
		{"1.27", &version.Info{Major: "1", Minor: "27", GitVersion: "v1.27.9"}, false},
		{"1.28, where the taint is GA", &version.Info{Major: "1", Minor: "28", GitVersion: "v1.28.0"}, true},
		{"a distribution's minor with a plus", &version.Info{Major: "1", Minor: "30+", GitVersion: "v1.30.2-eks-1552ad0"}, true},
		{"an older one with a plus", &version.Info{Major: "1", Minor: "26+", GitVersion: "v1.26.1-gke.100"}, false},
		{"only the git version", &version.Info{GitVersion: "v1.29.4+k3s1"}, true},
		{"only an old git version", &version.Info{GitVersion: "v1.25.0"}, false},
		{"nothing readable", &version.Info{Major: "one", GitVersion: "master"}, false},
		{"a major release ahead", &version.Info{Major: "2", Minor: "0"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := OutOfServiceSupported(tt.info)
			if got != tt.want || why == "" {
				t.Errorf("OutOfServiceSupported(%+v) = %v (%q), want %v and a reason", tt.info, got, why, tt.want)
			}
		})
	}
}

var (
	v128 = &version.Info{Major: "1", Minor: "28", GitVersion: "v1.28.3"}
	v127 = &version.Info{Major: "1", Minor: "27", GitVersion: "v1.27.8"}
)

// TestNodeStrategy: the choice is made once the host is off, from the
// workload cluster's version, and saved before the Node is touched; a
// choice made stays.
func TestNodeStrategy(t *testing.T) {
	running := func() *infrav1.Metal3Remediation {
		return remediationAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason, 1, time.Second, "")
	}
	tests := []struct {
		name        string
		remediation *infrav1.Metal3Remediation
		host        fakeHost
		nodes       fakeNodes

		wantStrategy     string
		wantNodeRestored string
		wantEvents       []string
		wantTainted      bool
		wantBackup       bool
	}{{
		name:        "nothing is decided while the host is on",
		remediation: running(),
		host:        fakeHost{poweredOn: true, rebootRequested: true}, nodes: fakeNodes{node: node("old"), version: v128},
	}, {
		name:        "a 1.28 cluster gets the taint, chosen before the Node is touched",
		remediation: running(),
		host:        fakeHost{rebootRequested: true}, nodes: fakeNodes{node: node("old"), version: v128},
		wantStrategy: infrav1.RemediationNodeOutOfServiceTaint,
	}, {
		name:        "a 1.27 cluster falls back to the Node's deletion, and says so",
		remediation: running(),
		host:        fakeHost{rebootRequested: true}, nodes: fakeNodes{node: node("old"), version: v127},
		wantStrategy: infrav1.RemediationNodeDeletion, wantEvents: []string{EventOutOfServiceUnsupported},
	}, {
		name:        "so does a cluster that does not tell its version",
		remediation: running(),
		host:        fakeHost{rebootRequested: true}, nodes: fakeNodes{node: node("old")},
		wantStrategy: infrav1.RemediationNodeDeletion, wantEvents: []string{EventOutOfServiceUnsupported},
	}, {
		name:        "an unreachable cluster decides nothing: the host stays off",
		remediation: running(),
		host:        fakeHost{rebootRequested: true}, nodes: fakeNodes{unreachable: true, version: v128},
		wantNodeRestored: infrav1.RemediationWorkloadClusterUnreachableReason,
	}, {
		name:        "a recorded deletion stays, whatever the cluster runs now",
		remediation: withNodeStrategy(running(), infrav1.RemediationNodeDeletion),
		host:        fakeHost{rebootRequested: true}, nodes: fakeNodes{node: node("old"), version: v128},
		wantStrategy: infrav1.RemediationNodeDeletion, wantBackup: true,
	}, {
		name:        "a recorded taint stays, whatever the cluster answers now",
		remediation: withNodeStrategy(running(), infrav1.RemediationNodeOutOfServiceTaint),
		host:        fakeHost{rebootRequested: true}, nodes: fakeNodes{node: node("old")},
		wantStrategy: infrav1.RemediationNodeOutOfServiceTaint, wantTainted: true,
		wantNodeRestored: infrav1.RemediationWaitingForDrainReason, wantEvents: []string{EventOutOfServiceTaintAdded},
	}, {
		name:        "a remediation that saved a Node before the taint existed carries on deleting it",
		remediation: remediationAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason, 1, time.Second, "old"),
		host:        fakeHost{rebootRequested: true}, nodes: fakeNodes{node: node("old"), version: v128},
		wantNodeRestored: infrav1.RemediationWaitingForNodeReason, wantBackup: true, wantEvents: []string{EventNodeDeleted},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recorder := &eventRecorder{}
			host, nodes, machine := tt.host, tt.nodes, fakeMachine{unhealthy: true}
			m := &Manager{Remediation: tt.remediation, Host: &host, Nodes: &nodes, Machine: &machine,
				Recorder: recorder, Now: func() time.Time { return now }}
			if _, err := m.Reconcile(context.Background()); err != nil {
				t.Fatal(err)
			}
			r := tt.remediation
			_, backup, _ := backupOf(r)
			checks := []struct {
				what      string
				got, want any
			}{
				{"recorded strategy", r.Annotations[infrav1.RemediationNodeStrategyAnnotation], tt.wantStrategy},
				{"NodeRestored", reasonOf(r, infrav1.RemediationNodeRestoredCondition), tt.wantNodeRestored},
				{"events", fmt.Sprint(recorder.reasons), fmt.Sprint(tt.wantEvents)},
				{"tainted", nodes.tainted > 0, tt.wantTainted},
				{"saved Node", backup, tt.wantBackup},
				{"host still held off", host.rebootRequested, true},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
				}
			}
		})
	}
}

func isUnreachable(t corev1.Taint) bool { return t.Key == corev1.TaintNodeUnreachable }

// taintedNode is the machine's Node with the out-of-service taint added
// ago (no timeAdded when ago is negative), next to another taint.
func taintedNode(ago time.Duration) *corev1.Node {
	n := node("old")
	taint := OutOfServiceTaint
	if ago >= 0 {
		taint.TimeAdded = ptrTime(now.Add(-ago))
	}
	n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}, taint}
	return n
}

// outOfServiceAt is a remediation of the out-of-service flow in phase,
// with the NodeRestored condition at nodeReason (none if empty).
func outOfServiceAt(phase, powerReason, nodeReason string, ago time.Duration) *infrav1.Metal3Remediation {
	r := withNodeStrategy(remediationAt(phase, powerReason, 1, ago, ""), infrav1.RemediationNodeOutOfServiceTaint)
	if nodeReason != "" {
		status := metav1.ConditionFalse
		if nodeReason == infrav1.RemediationNodeRestoredReason {
			status = metav1.ConditionTrue
		}
		setCondition(r, infrav1.RemediationNodeRestoredCondition, status, nodeReason, "")
	}
	return r
}

var leftOnNode = Drain{Pods: []string{"shop/db-0", "shop/web-1"}, VolumeAttachments: []string{"csi-4f1d"}}

// TestOutOfService runs the steps of the out-of-service taint: the host is
// powered on only once its Node, tainted, holds no terminating pod and no
// volume attachment, and the taint is removed once the host is on; the
// Node is never deleted.
func TestOutOfService(t *testing.T) {
	tests := []struct {
		name        string
		remediation *infrav1.Metal3Remediation
		host        fakeHost
		nodes       fakeNodes

		wantPhase        string
		wantPowerCycled  string
		wantNodeRestored string
		wantRebootOnHost bool
		wantTaint        bool
		wantDrainRead    bool
		wantRequeue      time.Duration
		wantEvents       []string
		wantMessage      string // in NodeRestored's message
	}{{
		name:        "a host still on is waited for, its Node untouched",
		remediation: outOfServiceAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason, "", time.Second),
		host:        fakeHost{poweredOn: true, rebootRequested: true}, nodes: fakeNodes{node: node("old"), version: v128},
		wantPhase: infrav1.RemediationPhaseRunning, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantRebootOnHost: true, wantRequeue: powerRequeue,
	}, {
		name:        "the Node of a powered-off host is tainted, and given a moment before pods are counted",
		remediation: outOfServiceAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason, "", time.Second),
		host:        fakeHost{rebootRequested: true}, nodes: fakeNodes{node: node("old"), drain: leftOnNode},
		wantPhase: infrav1.RemediationPhaseRunning, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantNodeRestored: infrav1.RemediationWaitingForDrainReason, wantRebootOnHost: true, wantTaint: true,
		wantRequeue: taintGrace, wantEvents: []string{EventOutOfServiceTaintAdded},
	}, {
		name: "a taint added a moment ago is given the rest of the moment",
		remediation: outOfServiceAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason,
			infrav1.RemediationWaitingForDrainReason, time.Second),
		host: fakeHost{rebootRequested: true}, nodes: fakeNodes{node: taintedNode(500 * time.Millisecond), drain: leftOnNode},
		wantPhase: infrav1.RemediationPhaseRunning, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantNodeRestored: infrav1.RemediationWaitingForDrainReason, wantRebootOnHost: true, wantTaint: true,
		wantRequeue: taintGrace - 500*time.Millisecond,
	}, {
		name: "terminating pods and volume attachments keep the host off",
		remediation: outOfServiceAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason,
			infrav1.RemediationWaitingForDrainReason, time.Minute),
		host: fakeHost{rebootRequested: true}, nodes: fakeNodes{node: taintedNode(30 * time.Second), drain: leftOnNode},
		wantPhase: infrav1.RemediationPhaseRunning, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantNodeRestored: infrav1.RemediationWaitingForDrainReason, wantRebootOnHost: true, wantTaint: true, wantDrainRead: true,
		wantRequeue: drainRequeue, wantEvents: []string{EventWaitingForDrain},
		wantMessage: "2 terminating pods (shop/db-0, shop/web-1) and 1 volume attachment (csi-4f1d)",
	}, {
		name: "a volume attachment alone keeps it off",
		remediation: outOfServiceAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason,
			infrav1.RemediationWaitingForDrainReason, time.Minute),
		host: fakeHost{rebootRequested: true}, nodes: fakeNodes{node: taintedNode(30 * time.Second), drain: Drain{VolumeAttachments: []string{"csi-4f1d"}}},
		wantPhase: infrav1.RemediationPhaseRunning, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantNodeRestored: infrav1.RemediationWaitingForDrainReason, wantRebootOnHost: true, wantTaint: true, wantDrainRead: true,
		wantRequeue: drainRequeue, wantEvents: []string{EventWaitingForDrain}, wantMessage: "0 terminating pods and 1 volume attachment",
	}, {
		name: "an operator's taint, without timeAdded, is the same fence",
		remediation: outOfServiceAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason,
			infrav1.RemediationWaitingForDrainReason, time.Minute),
		host: fakeHost{rebootRequested: true}, nodes: fakeNodes{node: taintedNode(-1), drain: Drain{Pods: []string{"shop/db-0"}}},
		wantPhase: infrav1.RemediationPhaseRunning, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantNodeRestored: infrav1.RemediationWaitingForDrainReason, wantRebootOnHost: true, wantTaint: true, wantDrainRead: true,
		wantRequeue: drainRequeue, wantEvents: []string{EventWaitingForDrain}, wantMessage: "1 terminating pod (shop/db-0)",
	}, {
		name: "a drained Node moves on to Waiting, the taint kept and the host not yet powered on",
		remediation: outOfServiceAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason,
			infrav1.RemediationWaitingForDrainReason, time.Minute),
		host: fakeHost{rebootRequested: true}, nodes: fakeNodes{node: taintedNode(30 * time.Second)},
		wantPhase: infrav1.RemediationPhaseWaiting, wantPowerCycled: infrav1.RemediationPoweringOnReason,
		wantNodeRestored: infrav1.RemediationOutOfServiceReason, wantRebootOnHost: true, wantTaint: true, wantDrainRead: true,
	}, {
		name:        "without a Node there is nothing to fence",
		remediation: outOfServiceAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason, "", time.Second),
		host:        fakeHost{rebootRequested: true}, nodes: fakeNodes{},
		wantPhase: infrav1.RemediationPhaseWaiting, wantPowerCycled: infrav1.RemediationPoweringOnReason,
		wantNodeRestored: infrav1.RemediationWaitingForNodeReason, wantRebootOnHost: true,
	}, {
		name:        "an unreachable workload cluster keeps the host off",
		remediation: outOfServiceAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason, "", time.Second),
		host:        fakeHost{rebootRequested: true}, nodes: fakeNodes{unreachable: true},
		wantPhase: infrav1.RemediationPhaseRunning, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantNodeRestored: infrav1.RemediationWorkloadClusterUnreachableReason, wantRebootOnHost: true, wantRequeue: nodeRequeue,
	}, {
		name: "waiting powers the host on; the taint stays until it is on",
		remediation: outOfServiceAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPoweringOnReason,
			infrav1.RemediationOutOfServiceReason, time.Minute),
		host: fakeHost{rebootRequested: true}, nodes: fakeNodes{node: taintedNode(time.Minute)},
		wantPhase: infrav1.RemediationPhaseWaiting, wantPowerCycled: infrav1.RemediationPoweringOnReason,
		wantNodeRestored: infrav1.RemediationOutOfServiceReason, wantTaint: true, wantRequeue: powerRequeue,
		wantEvents: []string{EventPowerOnRequested},
	}, {
		name: "the host on, the taint is removed from the same Node",
		remediation: outOfServiceAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPoweringOnReason,
			infrav1.RemediationOutOfServiceReason, time.Minute),
		host: fakeHost{poweredOn: true}, nodes: fakeNodes{node: taintedNode(time.Minute)},
		wantPhase: infrav1.RemediationPhaseWaiting, wantPowerCycled: infrav1.RemediationPowerCycledReason,
		wantNodeRestored: infrav1.RemediationNodeRestoredReason, wantRequeue: 4 * time.Minute,
		wantEvents: []string{EventOutOfServiceTaintRemoved},
	}, {
		name: "a taint removed before a crash is not looked for twice",
		remediation: outOfServiceAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPoweringOnReason,
			infrav1.RemediationOutOfServiceReason, time.Minute),
		host: fakeHost{poweredOn: true}, nodes: fakeNodes{node: node("old")},
		wantPhase: infrav1.RemediationPhaseWaiting, wantPowerCycled: infrav1.RemediationPowerCycledReason,
		wantNodeRestored: infrav1.RemediationNodeRestoredReason, wantRequeue: 4 * time.Minute,
	}, {
		name: "a machine still unhealthy after the timeout is tried again, fenced again",
		remediation: outOfServiceAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPowerCycledReason,
			infrav1.RemediationNodeRestoredReason, 6*time.Minute),
		host: fakeHost{poweredOn: true}, nodes: fakeNodes{node: node("old")},
		wantPhase: infrav1.RemediationPhaseRunning, wantPowerCycled: infrav1.RemediationPoweringOffReason,
		wantRebootOnHost: true, wantRequeue: powerRequeue, wantEvents: []string{EventRetrying, EventRebootRequested},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recorder := &eventRecorder{}
			// Unhealthy throughout: only a try timed out asks.
			host, nodes, machine := tt.host, tt.nodes, fakeMachine{unhealthy: true}
			hadUnreachable := nodes.node != nil && slices.ContainsFunc(nodes.node.Spec.Taints, isUnreachable)
			m := &Manager{Remediation: tt.remediation, Host: &host, Nodes: &nodes, Machine: &machine,
				Recorder: recorder, Now: func() time.Time { return now }}
			result, err := m.Reconcile(ctrl.LoggerInto(context.Background(), ctrl.Log))
			if err != nil {
				t.Fatal(err)
			}
			r := tt.remediation
			tainted := nodes.node != nil && hasOutOfServiceTaint(nodes.node.Spec.Taints)
			checks := []struct {
				what      string
				got, want any
			}{
				{"phase", r.Status.Phase, tt.wantPhase},
				{"PowerCycled", reasonOf(r, infrav1.RemediationPowerCycledCondition), tt.wantPowerCycled},
				{"NodeRestored", reasonOf(r, infrav1.RemediationNodeRestoredCondition), tt.wantNodeRestored},
				{"reboot annotation on the host", host.rebootRequested, tt.wantRebootOnHost},
				{"Node tainted", tainted, tt.wantTaint},
				{"pods and volume attachments read", nodes.drainRead, tt.wantDrainRead},
				{"requeue", result.RequeueAfter, tt.wantRequeue},
				{"events", fmt.Sprint(recorder.reasons), fmt.Sprint(tt.wantEvents)},
				{"Node deleted", len(nodes.deleted), 0},
				{"Node saved", r.Annotations[infrav1.RemediationNodeBackupAnnotation], ""},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
				}
			}
			if c := conditions.Get(r, infrav1.RemediationNodeRestoredCondition); tt.wantMessage != "" &&
				(c == nil || !strings.Contains(c.Message, tt.wantMessage)) {
				t.Errorf("NodeRestored = %+v, want a message with %q", c, tt.wantMessage)
			}
			if hadUnreachable && !slices.ContainsFunc(nodes.node.Spec.Taints, isUnreachable) {
				t.Errorf("taints %+v: the other taints are kept", nodes.node.Spec.Taints)
			}
		})
	}
}

// TestWaitingForDrainEventsOnChange: the Event comes when what is left
// changes, not at every look.
func TestWaitingForDrainEventsOnChange(t *testing.T) {
	r := outOfServiceAt(infrav1.RemediationPhaseRunning, infrav1.RemediationPoweringOffReason, "", time.Minute)
	nodes := &fakeNodes{node: taintedNode(time.Minute), drain: leftOnNode}
	recorder := &eventRecorder{}
	m := &Manager{Remediation: r, Host: &fakeHost{rebootRequested: true}, Nodes: nodes, Machine: &fakeMachine{unhealthy: true},
		Recorder: recorder, Now: func() time.Time { return now }}
	for _, drain := range []Drain{leftOnNode, leftOnNode, {Pods: leftOnNode.Pods}, {Pods: leftOnNode.Pods}} {
		nodes.drain = drain
		if _, err := m.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if want := fmt.Sprint([]string{EventWaitingForDrain, EventWaitingForDrain}); fmt.Sprint(recorder.reasons) != want {
		t.Errorf("events %v, want %s: one per change", recorder.reasons, want)
	}
}

// TestOutOfServiceOnDelete: a remediation deleted with its Node still
// tainted removes the taint once its host is on again.
func TestOutOfServiceOnDelete(t *testing.T) {
	deletedAgo := func(ago time.Duration) *infrav1.Metal3Remediation {
		r := outOfServiceAt(infrav1.RemediationPhaseWaiting, infrav1.RemediationPoweringOnReason, infrav1.RemediationOutOfServiceReason, ago)
		r.DeletionTimestamp = ptrTime(now.Add(-ago))
		return r
	}
	tests := []struct {
		name        string
		remediation *infrav1.Metal3Remediation
		host        fakeHost
		nodes       fakeNodes
		machine     fakeMachine

		wantDone, wantTaint, wantPoweredOn bool
	}{{
		name:        "the host on, the taint goes with the remediation",
		remediation: deletedAgo(0), host: fakeHost{poweredOn: true}, nodes: fakeNodes{node: taintedNode(time.Minute)},
		wantDone: true,
	}, {
		name:        "a host held off is powered on first, the taint kept until it is on",
		remediation: deletedAgo(0), host: fakeHost{rebootRequested: true}, nodes: fakeNodes{node: taintedNode(time.Minute)},
		wantTaint: true, wantPoweredOn: true,
	}, {
		name:        "a host that never comes on does not keep the Node out of service past the timeout",
		remediation: deletedAgo(time.Hour), host: fakeHost{}, nodes: fakeNodes{node: taintedNode(time.Hour)},
		wantDone: true,
	}, {
		name:        "a Machine being deleted takes its Node along",
		remediation: deletedAgo(0), host: fakeHost{}, nodes: fakeNodes{node: taintedNode(time.Minute)}, machine: fakeMachine{deleting: true},
		wantDone: true, wantTaint: true,
	}, {
		name:        "an unreachable workload cluster is waited for within the timeout",
		remediation: deletedAgo(0), host: fakeHost{poweredOn: true}, nodes: fakeNodes{unreachable: true},
	}, {
		name:        "and given up on after it",
		remediation: deletedAgo(time.Hour), host: fakeHost{poweredOn: true}, nodes: fakeNodes{unreachable: true},
		wantDone: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host, nodes, machine := tt.host, tt.nodes, tt.machine
			m := &Manager{Remediation: tt.remediation, Host: &host, Nodes: &nodes, Machine: &machine, Now: func() time.Time { return now }}
			done, _, err := m.ReconcileDelete(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			tainted := nodes.node != nil && hasOutOfServiceTaint(nodes.node.Spec.Taints)
			if done != tt.wantDone || tainted != tt.wantTaint || (host.releases > 0) != tt.wantPoweredOn {
				t.Errorf("done %v, tainted %v, powered on %v; want %v, %v, %v",
					done, tainted, host.releases > 0, tt.wantDone, tt.wantTaint, tt.wantPoweredOn)
			}
		})
	}
}
