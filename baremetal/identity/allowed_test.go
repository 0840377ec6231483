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

package identity

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

func TestAdmitsNamespace(t *testing.T) {
	// The namespaces as the API server shows them: every one carries its
	// name in kubernetes.io/metadata.name.
	namespace := func(name string, extraLabels map[string]string) *corev1.Namespace {
		nsLabels := map[string]string{corev1.LabelMetadataName: name}
		for k, v := range extraLabels {
			nsLabels[k] = v
		}
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: nsLabels}}
	}
	tenantA := namespace("tenant-a", map[string]string{"metal3.io/pool": "east"})
	tenantB := namespace("tenant-b", map[string]string{"metal3.io/pool": "west"})
	unlabelled := namespace("scratch", nil)

	poolEast := &metav1.LabelSelector{MatchLabels: map[string]string{"metal3.io/pool": "east"}}

	tests := []struct {
		name      string
		allowed   *infrav1.AllowedNamespaces
		namespace *corev1.Namespace
		want      bool
		wantErr   bool
	}{
		{name: "unset admits none", allowed: nil, namespace: tenantA},
		{name: "neither list nor selector admits none", allowed: &infrav1.AllowedNamespaces{}, namespace: tenantA},
		{name: "empty list admits none", allowed: &infrav1.AllowedNamespaces{List: []string{}}, namespace: tenantA},
		{
			name:      "listed",
			allowed:   &infrav1.AllowedNamespaces{List: []string{"tenant-b", "tenant-a"}},
			namespace: tenantA,
			want:      true,
		},
		{
			name:      "not listed",
			allowed:   &infrav1.AllowedNamespaces{List: []string{"tenant-b"}},
			namespace: tenantA,
		},
		{
			name:      "selector matches",
			allowed:   &infrav1.AllowedNamespaces{Selector: poolEast},
			namespace: tenantA,
			want:      true,
		},
		{
			name:      "selector does not match",
			allowed:   &infrav1.AllowedNamespaces{Selector: poolEast},
			namespace: tenantB,
		},
		{
			name:      "selector on the namespace name label",
			allowed:   &infrav1.AllowedNamespaces{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "scratch"}}},
			namespace: unlabelled,
			want:      true,
		},
		{
			name:      "empty selector admits every namespace",
			allowed:   &infrav1.AllowedNamespaces{Selector: &metav1.LabelSelector{}},
			namespace: unlabelled,
			want:      true,
		},
		{
			name:      "both: admitted by the list alone",
			allowed:   &infrav1.AllowedNamespaces{List: []string{"tenant-b"}, Selector: poolEast},
			namespace: tenantB,
			want:      true,
		},
		{
			name:      "both: admitted by the selector alone",
			allowed:   &infrav1.AllowedNamespaces{List: []string{"tenant-b"}, Selector: poolEast},
			namespace: tenantA,
			want:      true,
		},
		{
			name:      "both: admitted by neither",
			allowed:   &infrav1.AllowedNamespaces{List: []string{"tenant-b"}, Selector: poolEast},
			namespace: unlabelled,
		},
		{
			name: "invalid selector is an error",
			allowed: &infrav1.AllowedNamespaces{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "metal3.io/pool", Operator: "Near", Values: []string{"east"}},
			}}},
			namespace: tenantA,
			wantErr:   true,
		},
		{
			name: "invalid selector is an error even for a listed namespace",
			allowed: &infrav1.AllowedNamespaces{List: []string{"tenant-a"}, Selector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"metal3.io/pool": "not a label value"},
			}},
			namespace: tenantA,
			wantErr:   true,
		},
		{name: "no namespace is not admitted", allowed: &infrav1.AllowedNamespaces{Selector: &metav1.LabelSelector{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AdmitsNamespace(tt.allowed, tt.namespace)
			if (err != nil) != tt.wantErr {
				t.Fatalf("AdmitsNamespace error = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("AdmitsNamespace = %v, want %v", got, tt.want)
			}
		})
	}
}
