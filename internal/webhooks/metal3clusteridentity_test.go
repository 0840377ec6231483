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
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

func validMetal3ClusterIdentity() *infrav1.Metal3ClusterIdentity {
	return &infrav1.Metal3ClusterIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: "pool-east"},
		Spec: infrav1.Metal3ClusterIdentitySpec{
			SecretRef: infrav1.KubeconfigSecretReference{Name: "pool-east-kubeconfig", Namespace: "capm3-system", Context: "pool-east"},
			AllowedNamespaces: &infrav1.AllowedNamespaces{
				List:     []string{"tenant-a", "tenant-b"},
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"metal3.io/pool": "east"}},
			},
		},
	}
}

// identitySpecCases are the validation rules of a Metal3ClusterIdentity's
// spec; wantFields are relative to it.
var identitySpecCases = []struct {
	name       string
	mutate     func(*infrav1.Metal3ClusterIdentitySpec)
	wantFields []string
}{
	{name: "valid", mutate: func(*infrav1.Metal3ClusterIdentitySpec) {}},
	{
		name:   "valid Secret in the provider's namespace, current context",
		mutate: func(s *infrav1.Metal3ClusterIdentitySpec) { s.SecretRef.Namespace, s.SecretRef.Context = "", "" },
	},
	{
		name:   "valid list only",
		mutate: func(s *infrav1.Metal3ClusterIdentitySpec) { s.AllowedNamespaces.Selector = nil },
	},
	{
		name:   "valid selector only",
		mutate: func(s *infrav1.Metal3ClusterIdentitySpec) { s.AllowedNamespaces.List = nil },
	},
	{
		name: "valid empty selector, every namespace",
		mutate: func(s *infrav1.Metal3ClusterIdentitySpec) {
			s.AllowedNamespaces = &infrav1.AllowedNamespaces{Selector: &metav1.LabelSelector{}}
		},
	},
	{
		name: "valid selector with expressions",
		mutate: func(s *infrav1.Metal3ClusterIdentitySpec) {
			s.AllowedNamespaces.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "metal3.io/pool", Operator: metav1.LabelSelectorOpIn, Values: []string{"east", "central"}},
				{Key: "metal3.io/suspended", Operator: metav1.LabelSelectorOpDoesNotExist},
			}}
		},
	},
	{
		name:   "valid closed identity, no allowedNamespaces",
		mutate: func(s *infrav1.Metal3ClusterIdentitySpec) { s.AllowedNamespaces = nil },
	},
	{
		name:       "secretRef name missing",
		mutate:     func(s *infrav1.Metal3ClusterIdentitySpec) { s.SecretRef.Name = "" },
		wantFields: []string{"secretRef.name"},
	},
	{
		name:       "secretRef name not a Secret name",
		mutate:     func(s *infrav1.Metal3ClusterIdentitySpec) { s.SecretRef.Name = "Pool_East" },
		wantFields: []string{"secretRef.name"},
	},
	{
		name:       "secretRef namespace not a namespace name",
		mutate:     func(s *infrav1.Metal3ClusterIdentitySpec) { s.SecretRef.Namespace = "capm3.system" },
		wantFields: []string{"secretRef.namespace"},
	},
	{
		name:       "secretRef context too long",
		mutate:     func(s *infrav1.Metal3ClusterIdentitySpec) { s.SecretRef.Context = strings.Repeat("c", 254) },
		wantFields: []string{"secretRef.context"},
	},
	{
		name:   "secretRef context of the longest length",
		mutate: func(s *infrav1.Metal3ClusterIdentitySpec) { s.SecretRef.Context = strings.Repeat("c", 253) },
	},
	{
		name: "list entry not a namespace name",
		mutate: func(s *infrav1.Metal3ClusterIdentitySpec) {
			s.AllowedNamespaces.List = []string{"tenant-a", "Tenant_B"}
		},
		wantFields: []string{"allowedNamespaces.list[1]"},
	},
	{
		name:       "list entry empty",
		mutate:     func(s *infrav1.Metal3ClusterIdentitySpec) { s.AllowedNamespaces.List = []string{""} },
		wantFields: []string{"allowedNamespaces.list[0]"},
	},
	{
		name: "list entry named twice",
		mutate: func(s *infrav1.Metal3ClusterIdentitySpec) {
			s.AllowedNamespaces.List = []string{"tenant-a", "tenant-b", "tenant-a"}
		},
		wantFields: []string{"allowedNamespaces.list[2]"},
	},
	{
		name: "selector with an unknown operator",
		mutate: func(s *infrav1.Metal3ClusterIdentitySpec) {
			s.AllowedNamespaces.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "metal3.io/pool", Operator: "Near", Values: []string{"east"}},
			}}
		},
		wantFields: []string{"allowedNamespaces.selector.matchExpressions[0].operator"},
	},
	{
		name: "selector In without values",
		mutate: func(s *infrav1.Metal3ClusterIdentitySpec) {
			s.AllowedNamespaces.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "metal3.io/pool", Operator: metav1.LabelSelectorOpIn},
			}}
		},
		wantFields: []string{"allowedNamespaces.selector.matchExpressions[0].values"},
	},
	{
		name: "selector matchLabels value not a label value",
		mutate: func(s *infrav1.Metal3ClusterIdentitySpec) {
			s.AllowedNamespaces.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"metal3.io/pool": "east and west"}}
		},
		wantFields: []string{"allowedNamespaces.selector.matchLabels"},
	},
	{
		name: "selector key not a label key",
		mutate: func(s *infrav1.Metal3ClusterIdentitySpec) {
			s.AllowedNamespaces.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "metal3 pool", Operator: metav1.LabelSelectorOpExists},
			}}
		},
		wantFields: []string{"allowedNamespaces.selector.matchExpressions[0].key"},
	},
}

func TestMetal3ClusterIdentityValidateCreate(t *testing.T) {
	for _, tc := range identitySpecCases {
		t.Run(tc.name, func(t *testing.T) {
			identity := validMetal3ClusterIdentity()
			tc.mutate(&identity.Spec)
			_, err := (&Metal3ClusterIdentity{}).ValidateCreate(context.Background(), identity)
			expectFieldErrors(t, err, prefixed("spec.", tc.wantFields)...)
		})
	}
}

func TestMetal3ClusterIdentityValidateUpdate(t *testing.T) {
	// Every change that leaves a valid spec is allowed; an invalid one is
	// rejected as on creation.
	for _, tc := range identitySpecCases {
		t.Run(tc.name, func(t *testing.T) {
			oldIdentity, newIdentity := validMetal3ClusterIdentity(), validMetal3ClusterIdentity()
			tc.mutate(&newIdentity.Spec)
			_, err := (&Metal3ClusterIdentity{}).ValidateUpdate(context.Background(), oldIdentity, newIdentity)
			expectFieldErrors(t, err, prefixed("spec.", tc.wantFields)...)
		})
	}
}

func TestMetal3ClusterIdentityClosedWarning(t *testing.T) {
	tests := []struct {
		name     string
		allowed  *infrav1.AllowedNamespaces
		wantWarn bool
	}{
		{name: "unset", allowed: nil, wantWarn: true},
		{name: "neither list nor selector", allowed: &infrav1.AllowedNamespaces{}, wantWarn: true},
		{name: "empty list", allowed: &infrav1.AllowedNamespaces{List: []string{}}, wantWarn: true},
		{name: "a list", allowed: &infrav1.AllowedNamespaces{List: []string{"tenant-a"}}},
		{name: "empty selector", allowed: &infrav1.AllowedNamespaces{Selector: &metav1.LabelSelector{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			identity := validMetal3ClusterIdentity()
			identity.Spec.AllowedNamespaces = tc.allowed
			w := &Metal3ClusterIdentity{}
			for what, validate := range map[string]func() ([]string, error){
				"create": func() ([]string, error) { return w.ValidateCreate(context.Background(), identity) },
				"update": func() ([]string, error) {
					return w.ValidateUpdate(context.Background(), validMetal3ClusterIdentity(), identity)
				},
			} {
				warnings, err := validate()
				expectFieldErrors(t, err)
				warned := len(warnings) == 1 && strings.Contains(warnings[0], "spec.allowedNamespaces admits no namespace")
				if warned != tc.wantWarn || len(warnings) > 1 {
					t.Errorf("%s: warnings = %q, want the closed-identity warning: %v", what, warnings, tc.wantWarn)
				}
			}
		})
	}
}
