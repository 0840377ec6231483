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

// Package remediation remediates an unhealthy machine by power-cycling its
// host, as upstream CAPM3's reboot strategy does: a MachineHealthCheck
// creates a Metal3Remediation named after the unhealthy Machine; the host
// is powered off with the Bare Metal Operator's reboot annotation; while
// it is off, the workload Node is taken out of service so that its
// workloads move; the host is powered on and the Node put back. How the
// Node is taken out of service depends on the workload cluster's
// Kubernetes version, read once per remediation (outofservice.go): from
// 1.28 on, it is tainted node.kubernetes.io/out-of-service, the
// remediation waits for its terminating pods and its volume attachments
// to be gone before powering the host on, and removes the taint once the
// host is on, the Node keeping its identity; before 1.28, or when the
// version cannot be read, the Node is deleted (its labels and annotations
// saved on the remediation) and the Node that registers again gets them
// back. A machine still unhealthy after the timeout is tried again, up to
// the retry limit; then its host is marked unhealthy and the Machine's
// owner is asked to replace it. A remediation the MachineHealthCheck
// deleted without the machine being healed leaves its count for the next
// one (History).
//
// The Manager holds the steps; what it acts on are small interfaces (Host,
// Nodes, Machine) so that it is tested with fakes. Every step is recorded
// in the remediation's status before the next one acts, and every action
// is idempotent, so a provider killed at any point carries on: the choice
// of out-of-service taint or deletion is written on the remediation before
// the Node is touched; the taint is state of the Node itself, found there
// again (with the time it was added) and added only if missing; waiting
// for pods and volume attachments only reads; the Waiting phase is saved
// before the host is powered on; and removing the taint is done only if it
// is there.
package remediation

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
)

// Host is the remediated machine's host, reached through the machine's
// identity and still consumed by it.
type Host interface {
	// String names the host for messages (namespace/name).
	String() string
	// UID of the host, which the node's image puts in the Node's
	// metal3.io/uuid label.
	UID() types.UID
	// PoweredOn is the host's power as the Bare Metal Operator last saw it.
	PoweredOn() bool
	// RebootRequested reports whether the remediation's reboot annotation
	// is on the host.
	RebootRequested() bool
	// RequestReboot sets the reboot annotation: the host powers off and
	// stays off while it is there.
	RequestReboot(ctx context.Context) error
	// ReleaseReboot removes the reboot annotation: the host powers on.
	ReleaseReboot(ctx context.Context) error
	// MarkUnhealthy marks the host so that no machine takes it again.
	MarkUnhealthy(ctx context.Context) error
}

// ErrWorkloadUnreachable wraps the errors of Nodes when the workload
// cluster cannot be reached.
var ErrWorkloadUnreachable = errors.New("workload cluster unreachable")

// Nodes are the workload cluster's Nodes of the remediated machine.
type Nodes interface {
	// Find returns the machine's Node, nil if none is registered.
	Find(ctx context.Context) (*corev1.Node, error)
	// Delete deletes node.
	Delete(ctx context.Context, node *corev1.Node) error
	// Restore adds to node the labels and annotations of backup it lacks;
	// what the new Node already carries wins.
	Restore(ctx context.Context, node *corev1.Node, backup NodeBackup) error
	// Version is the workload cluster's Kubernetes version; nil when its
	// API server answers but does not tell.
	Version(ctx context.Context) (*version.Info, error)
	// Taint adds the out-of-service taint to node, unless it has it.
	Taint(ctx context.Context, node *corev1.Node) error
	// Untaint removes the out-of-service taint from node, if it has it.
	Untaint(ctx context.Context, node *corev1.Node) error
	// Drain is what keeps node's host from being powered on while the
	// Node is out of service: its terminating pods and volume attachments.
	Drain(ctx context.Context, node *corev1.Node) (Drain, error)
}

// Machine is the remediated Cluster API Machine.
type Machine interface {
	// Unhealthy reports whether the MachineHealthCheck still finds the
	// machine unhealthy.
	Unhealthy() bool
	// Deleting reports whether the Machine is being deleted.
	Deleting() bool
	// Replaceable reports whether an owner (a MachineSet, a control plane)
	// would replace the machine when asked to.
	Replaceable() bool
	// RequestReplacement asks the Machine's owner to remediate it by
	// deleting it (the OwnerRemediated condition, False).
	RequestReplacement(ctx context.Context, message string) error
	// PreviousRemediation is what the machine's last remediation recorded
	// when it was deleted, if any.
	PreviousRemediation() (History, bool)
	// RecordRemediation records h as the machine's last remediation.
	RecordRemediation(ctx context.Context, h History) error
}

// History is what a remediation leaves of itself on its machine when the
// MachineHealthCheck deletes it: the next remediation of a machine that
// fell unhealthy again soon after counts on from it, instead of rebooting
// a chronically failing machine forever.
type History struct {
	RetryCount     int32       `json:"retryCount"`
	LastRemediated metav1.Time `json:"lastRemediated"`
	// HealthyAt is when the MachineHealthCheck found the machine healthy
	// and deleted the remediation.
	HealthyAt metav1.Time `json:"healthyAt"`
}

// Event reasons, one per decision.
const (
	EventRebootRequested  = "RebootRequested"
	EventNodeDeleted      = "NodeDeleted"
	EventPowerOnRequested = "PowerOnRequested"
	EventNodeRestored     = "NodeRestored"
	EventRetrying         = "Retrying"
	EventRetriesExhausted = "RetriesExhausted"
	EventRemediationEnded = "RemediationEnded"
	EventUnsupported      = "UnsupportedStrategy"
	// The out-of-service flow (outofservice.go), and the fallback to the
	// Node's deletion.
	EventOutOfServiceTaintAdded   = "OutOfServiceTaintAdded"
	EventWaitingForDrain          = "WaitingForDrain"
	EventOutOfServiceTaintRemoved = "OutOfServiceTaintRemoved"
	EventOutOfServiceUnsupported  = "OutOfServiceUnsupported"
)
