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
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Out-of-service remediation, upstream CAPM3's flow for Kubernetes 1.28
// and later (where the out-of-service taint of non-graceful node shutdown
// is GA): once the host is off, its Node is tainted out-of-service; the
// workload cluster's taint eviction controller then deletes the pods that
// do not tolerate the taint, its pod garbage collector force-deletes them
// and its attach-detach controller detaches their volumes at once, without
// waiting for a kubelet that cannot answer. The host is powered on only
// when no terminating pod and no volume attachment is left on the Node, so
// stateful workloads have moved before it runs again, and the taint is
// removed once it is on. The Node is never deleted: it keeps its UID, its
// labels and annotations, and whatever points at it.

// OutOfServiceTaint is the taint upstream CAPM3 puts on the Node of a
// powered-off host, with its value and effect.
var OutOfServiceTaint = corev1.Taint{
	Key:    corev1.TaintNodeOutOfService,
	Value:  "nodeshutdown",
	Effect: corev1.TaintEffectNoExecute,
}

// outOfServiceSince is the first Kubernetes version in which the
// out-of-service taint is GA.
var outOfServiceSince = utilversion.MajorMinor(1, 28)

const (
	// taintGrace is how long after the taint was added pods are first
	// counted: upstream waits a second for the taint eviction controller
	// to mark them terminating, or the Node would look drained at once.
	// Two here, since the taint's timeAdded is kept to the second.
	taintGrace = 2 * time.Second
	// drainRequeue looks again at the pods and volume attachments left,
	// as upstream does: nothing in the workload cluster wakes a
	// remediation.
	drainRequeue = 5 * time.Second
)

// isOutOfServiceTaint matches the taint by key and effect, whatever its
// value, as upstream does (corev1.Taint.MatchTaint): an out-of-service
// taint an operator set is the same fence.
func isOutOfServiceTaint(t corev1.Taint) bool {
	return t.MatchTaint(&OutOfServiceTaint)
}

func hasOutOfServiceTaint(taints []corev1.Taint) bool {
	return outOfServiceTaintOf(taints) != nil
}

func outOfServiceTaintOf(taints []corev1.Taint) *corev1.Taint {
	for i := range taints {
		if isOutOfServiceTaint(taints[i]) {
			return &taints[i]
		}
	}
	return nil
}

// Drain is what a Node out of service still holds: its terminating pods
// (namespace/name) and its volume attachments.
type Drain struct {
	Pods              []string
	VolumeAttachments []string
}

// Empty reports whether nothing is left.
func (d Drain) Empty() bool { return len(d.Pods) == 0 && len(d.VolumeAttachments) == 0 }

// String counts what is left, naming a few of each.
func (d Drain) String() string {
	return fmt.Sprintf("%s and %s", counted(d.Pods, "terminating pod"), counted(d.VolumeAttachments, "volume attachment"))
}

// namedMax is how many names a message gives of each kind.
const namedMax = 3

func counted(names []string, noun string) string {
	if len(names) != 1 {
		noun += "s"
	}
	s := fmt.Sprintf("%d %s", len(names), noun)
	if len(names) == 0 {
		return s
	}
	shown := names[:min(len(names), namedMax)]
	more := ""
	if len(names) > namedMax {
		more = ", …"
	}
	return fmt.Sprintf("%s (%s%s)", s, strings.Join(shown, ", "), more)
}

// OutOfServiceSupported says whether a workload cluster of version info
// honours the out-of-service taint (1.28 and later), and why in words for
// the Event. The version is read as upstream reads it, from Major and
// Minor (a trailing "+", which some distributions add, ignored), else from
// GitVersion; a version that cannot be read counts as older, as upstream
// counts it.
func OutOfServiceSupported(info *version.Info) (bool, string) {
	if info == nil {
		return false, "the workload cluster does not tell its Kubernetes version"
	}
	v := majorMinor(info)
	if v == nil {
		return false, fmt.Sprintf("the workload cluster's Kubernetes version (%q) cannot be read", info.GitVersion)
	}
	if !v.AtLeast(outOfServiceSince) {
		return false, fmt.Sprintf("the workload cluster runs Kubernetes %s, older than %s", v, outOfServiceSince)
	}
	return true, fmt.Sprintf("the workload cluster runs Kubernetes %s", v)
}

func majorMinor(info *version.Info) *utilversion.Version {
	major, errMajor := strconv.ParseUint(info.Major, 10, 32)
	minor, errMinor := strconv.ParseUint(strings.TrimSuffix(info.Minor, "+"), 10, 32)
	if errMajor == nil && errMinor == nil {
		return utilversion.MajorMinor(uint(major), uint(minor))
	}
	if v, err := utilversion.ParseGeneric(info.GitVersion); err == nil {
		return utilversion.MajorMinor(v.Major(), v.Minor())
	}
	return nil
}

// nodeStrategy is how the remediation takes its Node out of service: as
// recorded on it, or "" while it decides. Deciding reads the workload
// cluster's version and records the choice, with an Event when it falls
// back to deleting the Node; the remediation's update brings the next step,
// so nothing touches the Node before the choice is saved. A remediation
// that already saved a Node, or went past the Running phase, without a
// choice recorded was started by a provider that only deleted Nodes: it
// carries on that way.
func (m *Manager) nodeStrategy(ctx context.Context) (string, ctrl.Result, error) {
	r := m.Remediation
	if s := recordedNodeStrategy(r); s != "" {
		return s, ctrl.Result{}, nil
	}
	info, err := m.Nodes.Version(ctx)
	if err != nil {
		_, result, err := m.nodeError(err)
		return "", result, err
	}
	supported, why := OutOfServiceSupported(info)
	strategy := infrav1.RemediationNodeDeletion
	if supported {
		strategy = infrav1.RemediationNodeOutOfServiceTaint
		ctrl.LoggerFrom(ctx).Info("The Node will be tainted out-of-service while its host is off", "why", why)
	} else {
		m.event(ctx, corev1.EventTypeNormal, EventOutOfServiceUnsupported,
			"Not using the out-of-service taint: %s; the Node is deleted while host %s is off and restored after", why, m.Host)
	}
	if r.Annotations == nil {
		r.Annotations = map[string]string{}
	}
	r.Annotations[infrav1.RemediationNodeStrategyAnnotation] = strategy
	return "", ctrl.Result{}, nil
}

// recordedNodeStrategy is the remediation's recorded choice, "" if none.
func recordedNodeStrategy(r *infrav1.Metal3Remediation) string {
	switch s := r.Annotations[infrav1.RemediationNodeStrategyAnnotation]; s {
	case infrav1.RemediationNodeOutOfServiceTaint, infrav1.RemediationNodeDeletion:
		return s
	}
	if _, saved := r.Annotations[infrav1.RemediationNodeBackupAnnotation]; saved ||
		(r.Status.Phase != "" && r.Status.Phase != infrav1.RemediationPhaseRunning) {
		return infrav1.RemediationNodeDeletion
	}
	return ""
}

// outOfService reports whether the remediation fences with the taint.
func outOfService(r *infrav1.Metal3Remediation) bool {
	return recordedNodeStrategy(r) == infrav1.RemediationNodeOutOfServiceTaint
}

// fenceOutOfService is the Running phase's step once the host is off: the
// Node is tainted, then its terminating pods and volume attachments are
// waited for. True once none is left (or there is no Node).
func (m *Manager) fenceOutOfService(ctx context.Context) (bool, ctrl.Result, error) {
	r := m.Remediation
	node, err := m.Nodes.Find(ctx)
	if err != nil {
		return m.nodeError(err)
	}
	if node == nil {
		setCondition(r, infrav1.RemediationNodeRestoredCondition, metav1.ConditionFalse, infrav1.RemediationWaitingForNodeReason,
			"No Node to take out of service; waiting for one to register after the reboot")
		return true, ctrl.Result{}, nil
	}
	taint := outOfServiceTaintOf(node.Spec.Taints)
	if taint == nil {
		if err := m.Nodes.Taint(ctx, node); err != nil {
			if errors.Is(err, ErrNodeGone) {
				return false, ctrl.Result{RequeueAfter: nodeRequeue}, nil
			}
			return m.nodeError(err)
		}
		m.event(ctx, corev1.EventTypeNormal, EventOutOfServiceTaintAdded,
			"Tainted Node %s %s while host %s is powered off: its pods are deleted and its volumes detached before the host is powered on",
			node.Name, taintString(), m.Host)
		setCondition(r, infrav1.RemediationNodeRestoredCondition, metav1.ConditionFalse, infrav1.RemediationWaitingForDrainReason,
			fmt.Sprintf("Node %s is tainted out-of-service; waiting for its pods and volume attachments to go", node.Name))
		return false, ctrl.Result{RequeueAfter: taintGrace}, nil
	}
	if taint.TimeAdded != nil {
		if since := m.now().Sub(taint.TimeAdded.Time); since >= 0 && since < taintGrace {
			return false, ctrl.Result{RequeueAfter: taintGrace - since}, nil
		}
	}
	drain, err := m.Nodes.Drain(ctx, node)
	if err != nil {
		return m.nodeError(err)
	}
	if !drain.Empty() {
		message := fmt.Sprintf("Node %s is tainted out-of-service; waiting for %s to go", node.Name, drain)
		// An Event when what is left changes, not at every look.
		if c := conditions.Get(r, infrav1.RemediationNodeRestoredCondition); c == nil || c.Message != message {
			m.event(ctx, corev1.EventTypeNormal, EventWaitingForDrain, "%s before host %s is powered on", message, m.Host)
		}
		ctrl.LoggerFrom(ctx).V(4).Info("Waiting for the Node out of service to drain", "node", node.Name,
			"terminatingPods", len(drain.Pods), "volumeAttachments", len(drain.VolumeAttachments))
		setCondition(r, infrav1.RemediationNodeRestoredCondition, metav1.ConditionFalse, infrav1.RemediationWaitingForDrainReason, message)
		return false, ctrl.Result{RequeueAfter: drainRequeue}, nil
	}
	ctrl.LoggerFrom(ctx).Info("The Node out of service has no terminating pod or volume attachment left", "node", node.Name)
	setCondition(r, infrav1.RemediationNodeRestoredCondition, metav1.ConditionFalse, infrav1.RemediationOutOfServiceReason,
		fmt.Sprintf("Node %s is out of service, its pods and volumes gone; the taint stays until host %s is powered on", node.Name, m.Host))
	return true, ctrl.Result{}, nil
}

// returnToService is the Waiting phase's Node step with the taint: once
// the host is powered on (as upstream, not before), the taint is removed.
// The Node is the same one, UID and all. True once done.
func (m *Manager) returnToService(ctx context.Context) (bool, ctrl.Result, error) {
	r := m.Remediation
	if conditions.IsTrue(r, infrav1.RemediationNodeRestoredCondition) {
		return true, ctrl.Result{}, nil
	}
	if !m.Host.PoweredOn() {
		// The power step requeues, and the host's power-on wakes it.
		return false, ctrl.Result{}, nil
	}
	node, err := m.Nodes.Find(ctx)
	if err != nil {
		return m.nodeError(err)
	}
	if node == nil {
		setCondition(r, infrav1.RemediationNodeRestoredCondition, metav1.ConditionFalse, infrav1.RemediationWaitingForNodeReason,
			"Waiting for the Node to register after the reboot")
		return false, ctrl.Result{RequeueAfter: nodeRequeue}, nil
	}
	if hasOutOfServiceTaint(node.Spec.Taints) {
		if err := m.Nodes.Untaint(ctx, node); err != nil {
			if errors.Is(err, ErrNodeGone) {
				return false, ctrl.Result{RequeueAfter: nodeRequeue}, nil
			}
			return m.nodeError(err)
		}
		m.event(ctx, corev1.EventTypeNormal, EventOutOfServiceTaintRemoved,
			"Host %s is powered on: removed the out-of-service taint from Node %s", m.Host, node.Name)
	}
	setCondition(r, infrav1.RemediationNodeRestoredCondition, metav1.ConditionTrue, infrav1.RemediationNodeRestoredReason,
		fmt.Sprintf("Node %s is back in service", node.Name))
	return true, ctrl.Result{}, nil
}

// untaintOnDelete removes the taint of a remediation deleted halfway:
// once the host it powered on again is on or, should it never be, after
// the strategy's timeout. True once done.
func (m *Manager) untaintOnDelete(ctx context.Context) (bool, ctrl.Result, error) {
	r := m.Remediation
	expired := r.DeletionTimestamp != nil && m.now().Sub(r.DeletionTimestamp.Time) >= strategyTimeout(r)
	node, err := m.Nodes.Find(ctx)
	if err != nil {
		if expired {
			m.event(ctx, corev1.EventTypeWarning, EventRemediationEnded,
				"The workload cluster could not be reached within %s to remove the out-of-service taint: %s", strategyTimeout(r), err)
			return true, ctrl.Result{}, nil
		}
		return m.nodeError(err)
	}
	if node == nil || !hasOutOfServiceTaint(node.Spec.Taints) {
		return true, ctrl.Result{}, nil
	}
	if !m.Host.PoweredOn() && !expired {
		return false, ctrl.Result{RequeueAfter: powerRequeue}, nil
	}
	if err := m.Nodes.Untaint(ctx, node); err != nil && !errors.Is(err, ErrNodeGone) {
		return m.nodeError(err)
	}
	m.event(ctx, corev1.EventTypeNormal, EventOutOfServiceTaintRemoved,
		"Removed the out-of-service taint from Node %s: the remediation is deleted", node.Name)
	return true, ctrl.Result{}, nil
}

func taintString() string {
	return fmt.Sprintf("%s=%s:%s", OutOfServiceTaint.Key, OutOfServiceTaint.Value, OutOfServiceTaint.Effect)
}
