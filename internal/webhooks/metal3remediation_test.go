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

package webhooks

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

func strategy(typ infrav1.RemediationType, retryLimit, timeoutSeconds int32) *infrav1.RemediationStrategy {
	return &infrav1.RemediationStrategy{Type: typ, RetryLimit: retryLimit, TimeoutSeconds: timeoutSeconds}
}

var remediationDefaultCases = []struct {
	name   string
	in     *infrav1.RemediationStrategy
	expect *infrav1.RemediationStrategy
}{
	{name: "no strategy", in: nil, expect: strategy("Reboot", 1, 600)},
	{name: "empty strategy", in: &infrav1.RemediationStrategy{}, expect: strategy("Reboot", 1, 600)},
	{name: "full strategy kept", in: strategy("Reboot", 2, 300), expect: strategy("Reboot", 2, 300)},
	{name: "only retryLimit", in: strategy("", 3, 0), expect: strategy("Reboot", 3, 600)},
	{name: "only timeout", in: strategy("", 0, 900), expect: strategy("Reboot", 1, 900)},
	{name: "unknown type kept for validation to reject", in: strategy("PowerOff", 0, 0), expect: strategy("PowerOff", 1, 600)},
}

func TestMetal3RemediationDefault(t *testing.T) {
	for _, tc := range remediationDefaultCases {
		t.Run(tc.name, func(t *testing.T) {
			r := &infrav1.Metal3Remediation{Spec: infrav1.Metal3RemediationSpec{Strategy: tc.in.DeepCopy()}}
			if err := (&Metal3Remediation{}).Default(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(r.Spec.Strategy, tc.expect) {
				t.Errorf("strategy = %+v, want %+v", r.Spec.Strategy, tc.expect)
			}
		})
	}
}

func TestMetal3RemediationTemplateDefault(t *testing.T) {
	for _, tc := range remediationDefaultCases {
		t.Run(tc.name, func(t *testing.T) {
			r := &infrav1.Metal3RemediationTemplate{}
			r.Spec.Template.Spec.Strategy = tc.in.DeepCopy()
			if err := (&Metal3RemediationTemplate{}).Default(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(r.Spec.Template.Spec.Strategy, tc.expect) {
				t.Errorf("strategy = %+v, want %+v", r.Spec.Template.Spec.Strategy, tc.expect)
			}
		})
	}
}

// remediationCases are shared by Metal3Remediation and
// Metal3RemediationTemplate; wantFields are relative to the strategy.
var remediationCases = []struct {
	name       string
	strategy   *infrav1.RemediationStrategy
	wantFields []string
}{
	{name: "valid", strategy: strategy("Reboot", 2, 300)},
	{name: "valid without strategy", strategy: nil},
	{name: "valid empty strategy", strategy: &infrav1.RemediationStrategy{}},
	{name: "valid retryLimit 10", strategy: strategy("Reboot", 10, 600)},
	{name: "valid retryLimit 50: no upper bound, as upstream", strategy: strategy("Reboot", 50, 600)},
	{name: "valid timeout 100s", strategy: strategy("Reboot", 1, 100)},
	{name: "unknown type", strategy: strategy("PowerOff", 1, 600), wantFields: []string{"type"}},
	{name: "lower-case type", strategy: strategy("reboot", 1, 600), wantFields: []string{"type"}},
	{name: "negative retryLimit", strategy: strategy("Reboot", -1, 600), wantFields: []string{"retryLimit"}},
	{name: "valid unset timeout (the default applies)", strategy: strategy("Reboot", 1, 0)},
	{name: "timeout below 100s", strategy: strategy("Reboot", 1, 99), wantFields: []string{"timeoutSeconds"}},
	{name: "negative timeout", strategy: strategy("Reboot", 1, -1), wantFields: []string{"timeoutSeconds"}},
	{
		name:       "everything wrong",
		strategy:   strategy("PowerOff", -1, 10),
		wantFields: []string{"type", "retryLimit", "timeoutSeconds"},
	},
}

func TestMetal3RemediationValidate(t *testing.T) {
	for _, tc := range remediationCases {
		t.Run(tc.name, func(t *testing.T) {
			newR := func() *infrav1.Metal3Remediation {
				return &infrav1.Metal3Remediation{
					ObjectMeta: metav1.ObjectMeta{Name: "workload-1-md-0-5xq9z-hf7wk", Namespace: testNamespace},
					Spec:       infrav1.Metal3RemediationSpec{Strategy: tc.strategy.DeepCopy()},
				}
			}
			want := prefixed("spec.strategy.", tc.wantFields)
			t.Run("create", func(t *testing.T) {
				_, err := (&Metal3Remediation{}).ValidateCreate(context.Background(), newR())
				expectFieldErrors(t, err, want...)
			})
			t.Run("update", func(t *testing.T) {
				old := &infrav1.Metal3Remediation{Spec: infrav1.Metal3RemediationSpec{Strategy: strategy("Reboot", 1, 600)}}
				_, err := (&Metal3Remediation{}).ValidateUpdate(context.Background(), old, newR())
				expectFieldErrors(t, err, want...)
			})
		})
	}
}

func TestMetal3RemediationTemplateValidate(t *testing.T) {
	for _, tc := range remediationCases {
		t.Run(tc.name, func(t *testing.T) {
			newT := func() *infrav1.Metal3RemediationTemplate {
				r := &infrav1.Metal3RemediationTemplate{
					ObjectMeta: metav1.ObjectMeta{Name: "workload-1-workers-remediation", Namespace: testNamespace},
				}
				r.Spec.Template.Spec.Strategy = tc.strategy.DeepCopy()
				return r
			}
			want := prefixed("spec.template.spec.strategy.", tc.wantFields)
			t.Run("create", func(t *testing.T) {
				_, err := (&Metal3RemediationTemplate{}).ValidateCreate(context.Background(), newT())
				expectFieldErrors(t, err, want...)
			})
			t.Run("update", func(t *testing.T) {
				old := &infrav1.Metal3RemediationTemplate{}
				old.Spec.Template.Spec.Strategy = strategy("Reboot", 1, 600)
				_, err := (&Metal3RemediationTemplate{}).ValidateUpdate(context.Background(), old, newT())
				expectFieldErrors(t, err, want...)
			})
		})
	}
}
