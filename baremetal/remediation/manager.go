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
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

const (
	// powerRequeue looks at a host again while it changes power, besides
	// the host events that wake the remediation.
	powerRequeue = 30 * time.Second
	// nodeRequeue looks for the Node while it registers again, and retries
	// a workload cluster that cannot be reached.
	nodeRequeue = 10 * time.Second
)

// Manager remediates one Metal3Remediation. It sets the remediation's
// phase, counters and conditions; the caller patches them.
type Manager struct {
	Remediation *infrav1.Metal3Remediation
	// Host is nil when the host cannot be found (ReconcileDelete only).
	Host Host
	// Nodes is nil when the remediation cannot reach the workload cluster
	// at all (ReconcileDelete only).
	Nodes Nodes
	// Machine is nil when the Machine is gone (ReconcileDelete only).
	Machine Machine
	// Recorder records an Event at every decision; nil records none.
	Recorder events.EventRecorder
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Reconcile takes the remediation one step further.
func (m *Manager) Reconcile(ctx context.Context) (ctrl.Result, error) {
	r := m.Remediation
	if m.Machine.Deleting() {
		// The machine goes anyway: its host must not stay powered off for
		// the next machine that takes it.
		return ctrl.Result{}, m.end(ctx, "the Machine is being deleted")
	}
	if t := strategy(r).Type; t != infrav1.RebootRemediationStrategy {
		if r.Status.Phase != infrav1.RemediationPhaseFailed {
			r.Status.Phase = infrav1.RemediationPhaseFailed
			m.event(ctx, corev1.EventTypeWarning, EventUnsupported, "Strategy %q is not supported; only %s is",
				t, infrav1.RebootRemediationStrategy)
		}
		return ctrl.Result{}, nil
	}
	switch r.Status.Phase {
	case "":
		return m.begin(ctx)
	case infrav1.RemediationPhaseRunning:
		return m.powerOff(ctx)
	case infrav1.RemediationPhaseWaiting:
		return m.wait(ctx)
	case infrav1.RemediationPhaseDeleting:
		// Both are idempotent: a crash halfway through is finished here.
		return ctrl.Result{}, m.giveUp(ctx)
	default:
		return ctrl.Result{}, nil
	}
}

// begin starts a new remediation: its first try or, for a machine that
// the previous remediation did not heal, the try after that one's, or
// giving up.
func (m *Manager) begin(ctx context.Context) (ctrl.Result, error) {
	r := m.Remediation
	if previous, ok := m.Machine.PreviousRemediation(); ok && previous.RetryCount > 0 {
		if relapse := m.relapse(ctx, previous); relapse != "" {
			r.Status.RetryCount = previous.RetryCount
			r.Status.LastRemediated = previous.LastRemediated.DeepCopy()
			if r.Status.RetryCount >= retryLimit(r) {
				return m.exhausted(ctx, relapse)
			}
			return m.startTry(ctx, relapse)
		}
	}
	return m.startTry(ctx, "")
}

// registrationGrace is how soon after registering a kubelet first posts
// its Node's readiness.
const registrationGrace = time.Minute

// relapse says why the previous remediation did not heal the machine, or
// "" if it did. The MachineHealthCheck deletes a remediation as soon as the
// Node looks healthy, which a Node that registers NotReady does until its
// unhealthy timeout: such a Node, never Ready since it registered after the
// reboot, was not healed. Nor was a machine that fell unhealthy again
// within the strategy's timeout of being declared healthy.
func (m *Manager) relapse(ctx context.Context, previous History) string {
	r := m.Remediation
	if node, err := m.Nodes.Find(ctx); err == nil && node != nil && node.CreationTimestamp.After(previous.LastRemediated.Time) {
		ready := nodeReadyCondition(node)
		if ready == nil || (ready.Status != corev1.ConditionTrue &&
			ready.LastTransitionTime.Sub(node.CreationTimestamp.Time) < registrationGrace) {
			return fmt.Sprintf("Node %s has not been Ready since it registered after reboot %d", node.Name, previous.RetryCount)
		}
	}
	if healthyFor := r.CreationTimestamp.Sub(previous.HealthyAt.Time); healthyFor < strategyTimeout(r) {
		return fmt.Sprintf("The machine fell unhealthy again %s after reboot %d made it healthy",
			healthyFor.Round(time.Second), previous.RetryCount)
	}
	return ""
}

func nodeReadyCondition(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// startTry requests the host's power-off and counts the try. It is
// counted with the phase in one status write; a crash before that write
// sets the (same) annotation again and counts then, once.
func (m *Manager) startTry(ctx context.Context, why string) (ctrl.Result, error) {
	r := m.Remediation
	if err := m.Host.RequestReboot(ctx); err != nil {
		return ctrl.Result{}, err
	}
	r.Status.Phase = infrav1.RemediationPhaseRunning
	r.Status.RetryCount++
	r.Status.LastRemediated = ptrTime(m.now())
	setCondition(r, infrav1.RemediationPowerCycledCondition, metav1.ConditionFalse, infrav1.RemediationPoweringOffReason,
		fmt.Sprintf("Try %d of %d: waiting for host %s to power off", r.Status.RetryCount, retryLimit(r), m.Host))
	conditions.Delete(r, infrav1.RemediationNodeRestoredCondition)
	if why != "" {
		why += ": "
	}
	m.event(ctx, corev1.EventTypeNormal, EventRebootRequested, "%sTry %d of %d: powering off host %s",
		why, r.Status.RetryCount, retryLimit(r), m.Host)
	return ctrl.Result{RequeueAfter: powerRequeue}, nil
}

// powerOff is the Running phase: wait for the host to power off, then
// taint the Node out-of-service and wait for it to drain, or delete it,
// and move to Waiting.
func (m *Manager) powerOff(ctx context.Context) (ctrl.Result, error) {
	r := m.Remediation
	if !m.Host.RebootRequested() {
		// Someone removed it before the host was seen off.
		if err := m.Host.RequestReboot(ctx); err != nil {
			return ctrl.Result{}, err
		}
	}
	if m.Host.PoweredOn() {
		return ctrl.Result{RequeueAfter: powerRequeue}, nil
	}
	// The host is off, so are its workloads: taking the Node out of
	// service lets the cluster reschedule them (and release their volumes)
	// at once. How is decided once, and saved first (nodeStrategy).
	strategy, result, err := m.nodeStrategy(ctx)
	if err != nil || strategy == "" {
		return result, err
	}
	fenced := false
	if strategy == infrav1.RemediationNodeOutOfServiceTaint {
		fenced, result, err = m.fenceOutOfService(ctx)
	} else {
		fenced, result, err = m.deleteNode(ctx)
	}
	if err != nil || !fenced {
		return result, err
	}
	// Waiting is saved before the host is powered on: after a crash in
	// between, Running would power it off again.
	r.Status.Phase = infrav1.RemediationPhaseWaiting
	setCondition(r, infrav1.RemediationPowerCycledCondition, metav1.ConditionFalse, infrav1.RemediationPoweringOnReason,
		fmt.Sprintf("Host %s is powered off; powering it on", m.Host))
	return ctrl.Result{}, nil
}

// deleteNode deletes the machine's Node once its labels and annotations
// are saved on the remediation; true once no old Node is left.
func (m *Manager) deleteNode(ctx context.Context) (bool, ctrl.Result, error) {
	r := m.Remediation
	node, err := m.Nodes.Find(ctx)
	if err != nil {
		return m.nodeError(err)
	}
	if node != nil {
		backup, saved, err := backupOf(r)
		if err != nil {
			return false, ctrl.Result{}, err
		}
		if !saved {
			// Saved with the remediation before the Node is deleted; the
			// update brings the next step.
			return false, ctrl.Result{}, saveBackup(r, node)
		}
		if backup.NodeUID != node.UID {
			// A Node registered since the one saved (a retry): the saved
			// labels are the original ones and are kept.
			ctrl.LoggerFrom(ctx).Info("Keeping the labels saved from an earlier Node", "node", klog.KObj(node))
		}
		if err := m.Nodes.Delete(ctx, node); err != nil {
			return m.nodeError(err)
		}
		m.event(ctx, corev1.EventTypeNormal, EventNodeDeleted, "Deleted Node %s while host %s is powered off", node.Name, m.Host)
	}
	setCondition(r, infrav1.RemediationNodeRestoredCondition, metav1.ConditionFalse, infrav1.RemediationWaitingForNodeReason,
		"Waiting for the Node to register again after the reboot")
	return true, ctrl.Result{}, nil
}

// wait is the Waiting phase: once the timeout has passed with the machine
// still unhealthy, try again or give up; until then, power the host on and
// restore the Node, or remove its out-of-service taint once the host is on.
func (m *Manager) wait(ctx context.Context) (ctrl.Result, error) {
	r := m.Remediation
	remaining := m.remaining()
	if remaining <= 0 && m.Machine.Unhealthy() {
		still := fmt.Sprintf("The machine is still unhealthy %s after reboot %d", strategyTimeout(r), r.Status.RetryCount)
		if r.Status.RetryCount < retryLimit(r) {
			m.event(ctx, corev1.EventTypeNormal, EventRetrying, "%s: trying again", still)
			return m.startTry(ctx, still)
		}
		return m.exhausted(ctx, still)
	}
	if m.Host.RebootRequested() {
		if err := m.Host.ReleaseReboot(ctx); err != nil {
			return ctrl.Result{}, err
		}
		m.event(ctx, corev1.EventTypeNormal, EventPowerOnRequested, "Powering on host %s", m.Host)
	}
	var result ctrl.Result
	if m.Host.PoweredOn() {
		setCondition(r, infrav1.RemediationPowerCycledCondition, metav1.ConditionTrue, infrav1.RemediationPowerCycledReason,
			fmt.Sprintf("Host %s was powered off and on (try %d of %d)", m.Host, r.Status.RetryCount, retryLimit(r)))
	} else {
		result.RequeueAfter = powerRequeue
	}
	restore := m.restoreNode
	if outOfService(r) {
		restore = m.returnToService
	}
	restored, nodeResult, err := restore(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !restored {
		result = earliest(result, nodeResult)
	}
	if remaining > 0 {
		return earliest(result, ctrl.Result{RequeueAfter: remaining}), nil
	}
	// Healthy again: the MachineHealthCheck deletes the remediation.
	return result, nil
}

// exhausted gives up on the machine: no try is left.
func (m *Manager) exhausted(ctx context.Context, why string) (ctrl.Result, error) {
	r := m.Remediation
	m.event(ctx, corev1.EventTypeWarning, EventRetriesExhausted,
		"%s, the last of %d: marking host %s unhealthy and asking for the machine to be replaced", why, retryLimit(r), m.Host)
	if m.Machine.Replaceable() {
		r.Status.Phase = infrav1.RemediationPhaseDeleting
	} else {
		r.Status.Phase = infrav1.RemediationPhaseFailed
	}
	return ctrl.Result{}, m.giveUp(ctx)
}

// giveUp marks the host unhealthy, so that no machine takes it again, and
// asks the Machine's owner to replace the machine.
func (m *Manager) giveUp(ctx context.Context) error {
	if err := m.Host.MarkUnhealthy(ctx); err != nil {
		return err
	}
	if !m.Machine.Replaceable() {
		// A Machine without owner is nobody's to replace: it stays, and so
		// does its (unhealthy) host.
		return nil
	}
	return m.Machine.RequestReplacement(ctx, fmt.Sprintf("Metal3Remediation %s: the machine is still unhealthy after %d reboots",
		m.Remediation.Name, m.Remediation.Status.RetryCount))
}

// restoreNode gives the Node registered after the reboot the labels and
// annotations of the one deleted; true once it did, or nothing was saved
// and a Node is back.
func (m *Manager) restoreNode(ctx context.Context) (bool, ctrl.Result, error) {
	r := m.Remediation
	if conditions.IsTrue(r, infrav1.RemediationNodeRestoredCondition) {
		return true, ctrl.Result{}, nil
	}
	backup, saved, err := backupOf(r)
	if err != nil {
		return false, ctrl.Result{}, err
	}
	node, err := m.Nodes.Find(ctx)
	if err != nil {
		return m.nodeError(err)
	}
	if node == nil || (saved && node.UID == backup.NodeUID) {
		setCondition(r, infrav1.RemediationNodeRestoredCondition, metav1.ConditionFalse, infrav1.RemediationWaitingForNodeReason,
			"Waiting for the Node to register again after the reboot")
		return false, ctrl.Result{RequeueAfter: nodeRequeue}, nil
	}
	if saved {
		if err := m.Nodes.Restore(ctx, node, backup); err != nil {
			if errors.Is(err, ErrNodeGone) {
				return false, ctrl.Result{RequeueAfter: nodeRequeue}, nil
			}
			return m.nodeError(err)
		}
		dropBackup(r)
		m.event(ctx, corev1.EventTypeNormal, EventNodeRestored, "Node %s is back; restored %d labels and %d annotations",
			node.Name, len(backup.Labels), len(backup.Annotations))
	}
	setCondition(r, infrav1.RemediationNodeRestoredCondition, metav1.ConditionTrue, infrav1.RemediationNodeRestoredReason,
		fmt.Sprintf("Node %s registered again", node.Name))
	return true, ctrl.Result{}, nil
}

// ReconcileDelete cleans up when the remediation is deleted, typically by
// the MachineHealthCheck once the machine is healthy: the host is powered
// on if it is still held off, the Node's out-of-service taint is removed,
// and the Node gets back what was saved. True once the finalizer can go.
func (m *Manager) ReconcileDelete(ctx context.Context) (bool, ctrl.Result, error) {
	r := m.Remediation
	if m.Machine != nil && !m.Machine.Deleting() && r.Status.RetryCount > 0 && r.Status.LastRemediated != nil {
		healthyAt := m.now()
		if r.DeletionTimestamp != nil {
			healthyAt = r.DeletionTimestamp.Time
		}
		if err := m.Machine.RecordRemediation(ctx, History{
			RetryCount: r.Status.RetryCount, LastRemediated: *r.Status.LastRemediated, HealthyAt: metav1.NewTime(healthyAt),
		}); err != nil {
			return false, ctrl.Result{}, err
		}
	}
	if m.Host != nil && m.Host.RebootRequested() {
		if err := m.Host.ReleaseReboot(ctx); err != nil {
			return false, ctrl.Result{}, err
		}
		m.event(ctx, corev1.EventTypeNormal, EventPowerOnRequested, "Powering on host %s: the remediation is deleted", m.Host)
	}
	if outOfService(r) && m.Machine != nil && !m.Machine.Deleting() && m.Nodes != nil && m.Host != nil {
		// A Node left tainted would stay out of service for good; a
		// Machine being deleted takes its Node along.
		if done, result, err := m.untaintOnDelete(ctx); err != nil || !done {
			return false, result, err
		}
	}
	if _, saved, _ := backupOf(r); !saved {
		return true, ctrl.Result{}, nil
	}
	if m.Machine == nil || m.Machine.Deleting() || m.Nodes == nil || m.Host == nil {
		dropBackup(r)
		return true, ctrl.Result{}, nil
	}
	restored, result, err := m.restoreNode(ctx)
	if err != nil || restored {
		return restored, result, err
	}
	// The Node may never come back: waiting ends after the strategy's timeout.
	if deleted := r.DeletionTimestamp; deleted != nil && m.now().Sub(deleted.Time) >= strategyTimeout(r) {
		m.event(ctx, corev1.EventTypeWarning, EventRemediationEnded,
			"The Node did not register again within %s: its saved labels and annotations are dropped", strategyTimeout(r))
		dropBackup(r)
		return true, ctrl.Result{}, nil
	}
	return false, result, nil
}

// end stops a remediation whose machine goes: the host is powered on and
// nothing is restored.
func (m *Manager) end(ctx context.Context, why string) error {
	if m.Host != nil && m.Host.RebootRequested() {
		if err := m.Host.ReleaseReboot(ctx); err != nil {
			return err
		}
		m.event(ctx, corev1.EventTypeNormal, EventRemediationEnded, "Powering on host %s: %s", m.Host, why)
	}
	dropBackup(m.Remediation)
	return nil
}

// nodeError reports an unreachable workload cluster in the NodeRestored
// condition and retries; other errors are returned. The step is not done.
func (m *Manager) nodeError(err error) (bool, ctrl.Result, error) {
	if !errors.Is(err, ErrWorkloadUnreachable) {
		return false, ctrl.Result{}, err
	}
	setCondition(m.Remediation, infrav1.RemediationNodeRestoredCondition, metav1.ConditionFalse,
		infrav1.RemediationWorkloadClusterUnreachableReason, err.Error())
	return false, ctrl.Result{RequeueAfter: nodeRequeue}, nil
}

// remaining is how long the current try has left before its timeout.
func (m *Manager) remaining() time.Duration {
	last := m.Remediation.Status.LastRemediated
	if last == nil {
		return 0
	}
	return last.Add(strategyTimeout(m.Remediation)).Sub(m.now())
}

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// event logs a decision and records it as an Event on the remediation.
func (m *Manager) event(ctx context.Context, eventType, reason, note string, args ...any) {
	message := fmt.Sprintf(note, args...)
	ctrl.LoggerFrom(ctx).Info(message, "metal3Remediation", klog.KObj(m.Remediation), "reason", reason)
	if m.Recorder != nil {
		m.Recorder.Eventf(m.Remediation, nil, eventType, reason, "Remediate", "%s", message)
	}
}

// strategy is the remediation's strategy with the webhook's defaults, for
// objects written without the webhook.
func strategy(r *infrav1.Metal3Remediation) infrav1.RemediationStrategy {
	s := infrav1.RemediationStrategy{}
	if r.Spec.Strategy != nil {
		s = *r.Spec.Strategy
	}
	if s.Type == "" {
		s.Type = infrav1.RebootRemediationStrategy
	}
	if s.RetryLimit <= 0 {
		s.RetryLimit = infrav1.DefaultRemediationRetryLimit
	}
	if s.TimeoutSeconds <= 0 {
		s.TimeoutSeconds = infrav1.DefaultRemediationTimeoutSeconds
	}
	return s
}

func retryLimit(r *infrav1.Metal3Remediation) int32 { return strategy(r).RetryLimit }

func strategyTimeout(r *infrav1.Metal3Remediation) time.Duration {
	return time.Duration(strategy(r).TimeoutSeconds) * time.Second
}

// earliest is the result that comes back first; no requeue counts as never.
func earliest(a, b ctrl.Result) ctrl.Result {
	if a.RequeueAfter == 0 || (b.RequeueAfter > 0 && b.RequeueAfter < a.RequeueAfter) {
		return b
	}
	return a
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

func setCondition(r *infrav1.Metal3Remediation, condType string, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(r, metav1.Condition{Type: condType, Status: status, Reason: reason, Message: message})
}
