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

// Package readiness sums an object's conditions up into its Ready condition
// with CAPI's summary (sigs.k8s.io/cluster-api/util/conditions), keeping
// what the v1beta1 API promises of Ready: it is True or False, never
// Unknown, and when False its reason is the one of the condition that holds
// the object back, so `kubectl get` says why without reading the message.
package readiness

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Summary says which conditions make an object Ready.
type Summary struct {
	// Conditions are summed up in this order of relevance: the first unmet
	// one gives Ready its reason.
	Conditions []string
	// Optional are those of Conditions that count only once reported; the
	// others are not ready until they are.
	Optional []string
	// Deleting gives a not-ready object the Deleting reason.
	Deleting bool
}

// Set sets obj's Ready condition from its conditions.
func Set(obj conditions.Setter, s Summary) error {
	return conditions.SetSummaryCondition(obj, obj, infrav1.ReadyCondition,
		conditions.ForConditionTypes(s.Conditions),
		conditions.IgnoreTypesIfMissing(s.Optional),
		conditions.CustomMergeStrategy{MergeStrategy: mergeStrategy{deleting: s.Deleting}},
	)
}

// mergeStrategy is CAPI's default strategy (issues first, then unknown, in
// the order given) with Ready's True/False promise and reasons.
type mergeStrategy struct {
	deleting bool
}

func (s mergeStrategy) Merge(operation conditions.MergeOperation, conds []conditions.ConditionWithOwnerInfo, types []string) (metav1.ConditionStatus, string, string, error) {
	status, reason, message, err := conditions.DefaultMergeStrategy(conditions.ComputeReasonFunc(firstUnmetReason)).
		Merge(operation, conds, types)
	if err != nil {
		return "", "", "", err
	}
	if status == metav1.ConditionTrue {
		return status, infrav1.ReadyReason, message, nil
	}
	// A condition not reported yet (Unknown) means not ready yet.
	if s.deleting {
		reason = infrav1.DeletingReason
	}
	return metav1.ConditionFalse, reason, message, nil
}

// firstUnmetReason is the reason of the most relevant condition holding the
// object back: the first False one, else the first Unknown one.
func firstUnmetReason(issues, unknown, _ []conditions.ConditionWithOwnerInfo) string {
	switch {
	case len(issues) > 0:
		return issues[0].Reason
	case len(unknown) > 0 && unknown[0].Reason != conditions.NotYetReportedReason:
		return unknown[0].Reason
	case len(unknown) > 0:
		return infrav1.NotReadyReason
	default:
		return infrav1.ReadyReason
	}
}
