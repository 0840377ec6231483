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
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// TargetError says why the remediation cannot reach what it remediates;
// Reason is the HostFound condition's.
type TargetError struct {
	Reason  string
	Message string
}

func (e *TargetError) Error() string { return e.Message }

// AsTargetError returns the TargetError in err's chain, if any.
func AsTargetError(err error) (*TargetError, bool) {
	var te *TargetError
	ok := errors.As(err, &te)
	return te, ok
}

// Target is the unhealthy Machine and its Metal3Machine.
type Target struct {
	Machine   *clusterv1.Machine
	M3Machine *infrav1.Metal3Machine
}

// FindTarget finds the Machine the remediation is named after (Cluster
// API's external remediation contract) and its Metal3Machine. A missing
// one is a *TargetError naming it.
func FindTarget(ctx context.Context, c client.Reader, r *infrav1.Metal3Remediation) (*Target, error) {
	machine := &clusterv1.Machine{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, machine); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &TargetError{Reason: infrav1.RemediationMachineNotFoundReason,
				Message: fmt.Sprintf("Machine %s/%s, which the remediation is named after, does not exist", r.Namespace, r.Name)}
		}
		return nil, fmt.Errorf("get Machine %s/%s: %w", r.Namespace, r.Name, err)
	}
	ref := machine.Spec.InfrastructureRef
	if ref.Kind != "Metal3Machine" || ref.APIGroup != infrav1.GroupVersion.Group || ref.Name == "" {
		return nil, &TargetError{Reason: infrav1.RemediationMetal3MachineNotFoundReason,
			Message: fmt.Sprintf("Machine %s/%s's infrastructure is %s %q, not a Metal3Machine", machine.Namespace, machine.Name, ref.Kind, ref.Name)}
	}
	m3m := &infrav1.Metal3Machine{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: machine.Namespace, Name: ref.Name}, m3m); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &TargetError{Reason: infrav1.RemediationMetal3MachineNotFoundReason,
				Message: fmt.Sprintf("Metal3Machine %s/%s of Machine %s does not exist", machine.Namespace, ref.Name, machine.Name)}
		}
		return nil, fmt.Errorf("get Metal3Machine %s/%s: %w", machine.Namespace, ref.Name, err)
	}
	return &Target{Machine: machine, M3Machine: m3m}, nil
}

// ReportTarget sets the HostFound condition: True with host, else False
// with the reason of err, a *TargetError.
func ReportTarget(r *infrav1.Metal3Remediation, host Host, err error) {
	if err == nil && host != nil {
		setCondition(r, infrav1.RemediationHostFoundCondition, metav1.ConditionTrue, infrav1.RemediationHostFoundReason,
			fmt.Sprintf("Host %s", host))
		return
	}
	reason, message := infrav1.HostNotFoundReason, "host not found"
	if te, ok := AsTargetError(err); ok {
		reason, message = te.Reason, te.Message
	} else if err != nil {
		message = err.Error()
	}
	setCondition(r, infrav1.RemediationHostFoundCondition, metav1.ConditionFalse, reason, message)
}

// CAPIMachine is the Machine interface over a Cluster API Machine and its
// Metal3Machine, which keeps the remediation history.
func CAPIMachine(c client.Client, target *Target) Machine {
	return &capiMachine{client: c, machine: target.Machine, m3m: target.M3Machine}
}

type capiMachine struct {
	client  client.Client
	machine *clusterv1.Machine
	m3m     *infrav1.Metal3Machine
}

// PreviousRemediation implements Machine. An unreadable record counts as
// none: it only ever shortens the reboots of a failing machine.
func (m *capiMachine) PreviousRemediation() (History, bool) {
	raw, ok := m.m3m.Annotations[infrav1.RemediationHistoryAnnotation]
	if !ok {
		return History{}, false
	}
	var h History
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		return History{}, false
	}
	return h, true
}

// RecordRemediation implements Machine, with a patch of that one
// annotation: the Metal3Machine controller owns the rest of the object.
func (m *capiMachine) RecordRemediation(ctx context.Context, h History) error {
	data, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if m.m3m.Annotations[infrav1.RemediationHistoryAnnotation] == string(data) {
		return nil
	}
	before := m.m3m.DeepCopy()
	if m.m3m.Annotations == nil {
		m.m3m.Annotations = map[string]string{}
	}
	m.m3m.Annotations[infrav1.RemediationHistoryAnnotation] = string(data)
	if err := m.client.Patch(ctx, m.m3m, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("record the remediation on Metal3Machine %s/%s: %w", m.m3m.Namespace, m.m3m.Name, err)
	}
	return nil
}

func (m *capiMachine) Unhealthy() bool {
	return conditions.IsFalse(m.machine, clusterv1.MachineHealthCheckSucceededCondition)
}

func (m *capiMachine) Deleting() bool { return !m.machine.DeletionTimestamp.IsZero() }

// Replaceable implements Machine: Cluster API's MachineSets and control
// planes remediate the Machines they control (collections.IsUnhealthyAndOwnerRemediated).
func (m *capiMachine) Replaceable() bool { return metav1.GetControllerOf(m.machine) != nil }

// RequestReplacement implements Machine: the OwnerRemediated condition
// False, with the reason the MachineHealthCheck uses when it remediates
// through the owner itself; the owner then deletes the Machine. A False
// condition is left as is: the owner may be reporting its progress in it.
func (m *capiMachine) RequestReplacement(ctx context.Context, message string) error {
	if conditions.IsFalse(m.machine, clusterv1.MachineOwnerRemediatedCondition) {
		return nil
	}
	helper, err := patch.NewHelper(m.machine, m.client)
	if err != nil {
		return err
	}
	conditions.Set(m.machine, metav1.Condition{
		Type: clusterv1.MachineOwnerRemediatedCondition, Status: metav1.ConditionFalse,
		Reason: clusterv1.MachineOwnerRemediatedWaitingForRemediationReason, Message: message,
	})
	if err := helper.Patch(ctx, m.machine, patch.WithOwnedConditions{Conditions: []string{clusterv1.MachineOwnerRemediatedCondition}}); err != nil {
		return fmt.Errorf("ask the owner of Machine %s/%s to replace it: %w", m.machine.Namespace, m.machine.Name, err)
	}
	return nil
}
