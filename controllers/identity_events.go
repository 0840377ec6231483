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

package controllers

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// maxEventNoteBytes is the API server's limit on an Event's note.
const maxEventNoteBytes = 1024

// recordIdentityTransition emits an Event when an object's IdentityReady
// condition changes state, and when it first fails: a tenant's identity
// breaking or recovering is what `kubectl describe` and event-based alerts
// must show. Its note is the condition's message, which never carries what
// a server answered.
func recordIdentityTransition(ctx context.Context, recorder events.EventRecorder, obj client.Object, previous *metav1.Condition, current metav1.Condition) {
	if current.Reason == infrav1.IdentityInClusterReason {
		return
	}
	recordTransition(ctx, recorder, obj, previous, current, "Identity", "ConnectIdentity")
}

// recordWorkloadTransition does the same for the WorkloadClusterReachable
// condition: a workload kubeconfig refused, or a workload cluster lost or
// found again.
func recordWorkloadTransition(ctx context.Context, recorder events.EventRecorder, obj client.Object, previous *metav1.Condition, current metav1.Condition) {
	recordTransition(ctx, recorder, obj, previous, current, "WorkloadCluster", "ConnectWorkloadCluster")
}

// recordTransition logs and records, as an Event of reason
// <what><condition reason>, a condition changing state or first failing.
func recordTransition(ctx context.Context, recorder events.EventRecorder, obj client.Object, previous *metav1.Condition, current metav1.Condition,
	what, action string,
) {
	if previous == nil && current.Status == metav1.ConditionTrue {
		return
	}
	if previous != nil && previous.Status == current.Status && previous.Reason == current.Reason {
		return
	}
	// The log line carries the object and the reason (Forbidden,
	// Unreachable, ServerNotAllowed…) as keys, so operators can filter on them.
	ctrl.LoggerFrom(ctx).Info(what+" state changed", "object", klog.KObj(obj), "condition", current.Type,
		"status", current.Status, "reason", current.Reason, "message", current.Message)
	if recorder == nil {
		return
	}
	eventType := corev1.EventTypeNormal
	if current.Status != metav1.ConditionTrue {
		eventType = corev1.EventTypeWarning
	}
	note := current.Message
	if len(note) > maxEventNoteBytes {
		note = strings.ToValidUTF8(note[:maxEventNoteBytes-len("…")], "") + "…"
	}
	recorder.Eventf(obj, nil, eventType, what+current.Reason, action, "%s", note)
}
