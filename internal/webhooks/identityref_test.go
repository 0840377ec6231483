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

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// The identityRef rules of Metal3Machines and Metal3MachineTemplates; those
// of Metal3Clusters and their templates are in metal3cluster_test.go.

// secretRef and clusterIdentityRef build identityRefs of either kind.
func secretRef(name, context string) *infrav1.IdentityRef {
	return &infrav1.IdentityRef{Kind: infrav1.IdentityKindSecret, Name: name, Context: context}
}

func clusterIdentityRef(name string) *infrav1.IdentityRef {
	return &infrav1.IdentityRef{Kind: infrav1.IdentityKindMetal3ClusterIdentity, Name: name}
}

func TestMachineIdentityRefDefault(t *testing.T) {
	tests := []struct {
		name string
		ref  *infrav1.IdentityRef
		want *infrav1.IdentityRef
	}{
		{name: "no identityRef", ref: nil, want: nil},
		{
			name: "kind Secret when unset",
			ref:  &infrav1.IdentityRef{Name: "pool-east-kubeconfig", Context: "pool-east"},
			want: secretRef("pool-east-kubeconfig", "pool-east"),
		},
		{name: "kind Secret kept", ref: secretRef("pool-east-kubeconfig", ""), want: secretRef("pool-east-kubeconfig", "")},
		{name: "kind Metal3ClusterIdentity kept", ref: clusterIdentityRef("pool-east"), want: clusterIdentityRef("pool-east")},
		{
			// Left for validation to reject, not silently replaced.
			name: "unknown kind kept",
			ref:  &infrav1.IdentityRef{Kind: "ConfigMap", Name: "pool-east"},
			want: &infrav1.IdentityRef{Kind: "ConfigMap", Name: "pool-east"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := validMetal3Machine()
			m.Spec.IdentityRef = tc.ref.DeepCopy()
			if err := (&Metal3Machine{}).Default(context.Background(), m); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(m.Spec.IdentityRef, tc.want) {
				t.Errorf("Metal3Machine identityRef = %+v, want %+v", m.Spec.IdentityRef, tc.want)
			}

			tmpl := validMetal3MachineTemplate()
			tmpl.Spec.Template.Spec.IdentityRef = tc.ref.DeepCopy()
			if err := (&Metal3MachineTemplate{}).Default(context.Background(), tmpl); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(tmpl.Spec.Template.Spec.IdentityRef, tc.want) {
				t.Errorf("Metal3MachineTemplate identityRef = %+v, want %+v", tmpl.Spec.Template.Spec.IdentityRef, tc.want)
			}
		})
	}
}

func TestMachineIdentityRefValidate(t *testing.T) {
	tests := []struct {
		name       string
		ref        *infrav1.IdentityRef
		wantFields []string // relative to the spec
	}{
		{name: "kind unset", ref: &infrav1.IdentityRef{Name: "pool-east-kubeconfig", Context: "pool-east"}},
		{name: "kind Secret with a context", ref: secretRef("pool-east-kubeconfig", "pool-east")},
		{name: "kind Metal3ClusterIdentity", ref: clusterIdentityRef("pool-east")},
		{
			name:       "unknown kind",
			ref:        &infrav1.IdentityRef{Kind: "ConfigMap", Name: "pool-east"},
			wantFields: []string{"identityRef.kind"},
		},
		{
			name:       "kind Metal3ClusterIdentity with a context",
			ref:        &infrav1.IdentityRef{Kind: infrav1.IdentityKindMetal3ClusterIdentity, Name: "pool-east", Context: "pool-east"},
			wantFields: []string{"identityRef.context"},
		},
		{
			name:       "kind Metal3ClusterIdentity without a name",
			ref:        clusterIdentityRef(""),
			wantFields: []string{"identityRef.name"},
		},
		{
			name:       "unknown kind without a name",
			ref:        &infrav1.IdentityRef{Kind: "secret"},
			wantFields: []string{"identityRef.kind", "identityRef.name"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := validMetal3Machine()
			m.Spec.IdentityRef = tc.ref.DeepCopy()
			_, err := (&Metal3Machine{}).ValidateCreate(context.Background(), m)
			expectFieldErrors(t, err, prefixed("spec.", tc.wantFields)...)

			tmpl := validMetal3MachineTemplate()
			tmpl.Spec.Template.Spec.IdentityRef = tc.ref.DeepCopy()
			_, err = (&Metal3MachineTemplate{}).ValidateCreate(context.Background(), tmpl)
			expectFieldErrors(t, err, prefixed("spec.template.spec.", tc.wantFields)...)
		})
	}
}

func TestMetal3MachineIdentityKindUpdate(t *testing.T) {
	const host = "tenant-a/worker-3"
	tests := []struct {
		name       string
		associated bool
		old, new   *infrav1.IdentityRef
		wantFields []string
	}{
		{
			name:       "kind Secret written where it was unset, while associated",
			associated: true,
			old:        &infrav1.IdentityRef{Name: "pool-east-kubeconfig"},
			new:        secretRef("pool-east-kubeconfig", ""),
		},
		{
			name:       "kind changed while associated",
			associated: true,
			old:        secretRef("pool-east", ""),
			new:        clusterIdentityRef("pool-east"),
			wantFields: []string{"spec.identityRef"},
		},
		{
			name:       "unset kind changed to Metal3ClusterIdentity while associated",
			associated: true,
			old:        &infrav1.IdentityRef{Name: "pool-east"},
			new:        clusterIdentityRef("pool-east"),
			wantFields: []string{"spec.identityRef"},
		},
		{
			name:       "cluster identity changed while associated",
			associated: true,
			old:        clusterIdentityRef("pool-east"),
			new:        clusterIdentityRef("pool-west"),
			wantFields: []string{"spec.identityRef"},
		},
		{
			name:       "cluster identity unchanged while associated",
			associated: true,
			old:        clusterIdentityRef("pool-east"),
			new:        clusterIdentityRef("pool-east"),
		},
		{
			name: "kind changed while not associated",
			old:  secretRef("pool-east", ""),
			new:  clusterIdentityRef("pool-east"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldM, newM := validMetal3Machine(), validMetal3Machine()
			oldM.Spec.IdentityRef, newM.Spec.IdentityRef = tc.old, tc.new
			if tc.associated {
				oldM.Annotations = map[string]string{infrav1.HostAnnotation: host}
				newM.Annotations = map[string]string{infrav1.HostAnnotation: host}
			}
			_, err := (&Metal3Machine{}).ValidateUpdate(context.Background(), oldM, newM)
			expectFieldErrors(t, err, tc.wantFields...)
		})
	}
}

func TestMetal3MachineTemplateIdentityKindUpdate(t *testing.T) {
	tests := []struct {
		name       string
		old, new   *infrav1.IdentityRef
		wantFields []string
	}{
		{
			// A template stored before kind existed is not changed by the
			// defaulted kind.
			name: "kind Secret written where it was unset",
			old:  &infrav1.IdentityRef{Name: "pool-east-kubeconfig"},
			new:  secretRef("pool-east-kubeconfig", ""),
		},
		{
			name:       "kind changed",
			old:        secretRef("pool-east", ""),
			new:        clusterIdentityRef("pool-east"),
			wantFields: []string{"spec.template.spec"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldT, newT := validMetal3MachineTemplate(), validMetal3MachineTemplate()
			oldT.Spec.Template.Spec.IdentityRef, newT.Spec.Template.Spec.IdentityRef = tc.old, tc.new
			_, err := (&Metal3MachineTemplate{}).ValidateUpdate(context.Background(), oldT, newT)
			expectFieldErrors(t, err, tc.wantFields...)
		})
	}
}
