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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

func templateRef(name, namespace string) *infrav1.Metal3ObjectRef {
	return &infrav1.Metal3ObjectRef{Name: name, Namespace: namespace}
}

func validDataClaim() *infrav1.Metal3DataClaim {
	return &infrav1.Metal3DataClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "workload-1-md-0-5xq9z-hf7wk", Namespace: testNamespace},
		Spec:       infrav1.Metal3DataClaimSpec{Template: templateRef("workload-1-workers-template-v2", testNamespace)},
	}
}

func validData() *infrav1.Metal3Data {
	return &infrav1.Metal3Data{
		ObjectMeta: metav1.ObjectMeta{Name: "workload-1-workers-template-3", Namespace: testNamespace},
		Spec: infrav1.Metal3DataSpec{
			Index:             ptr.To[int32](3),
			TemplateReference: "workload-1-workers-template",
			Claim:             &infrav1.Metal3ObjectRef{Name: "workload-1-md-0-5xq9z-hf7wk", Namespace: testNamespace},
			Template:          templateRef("workload-1-workers-template-v2", testNamespace),
		},
	}
}

func TestMetal3DataClaimValidateCreate(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(*infrav1.Metal3DataClaim)
		wantFields []string
	}{
		{name: "valid", mutate: func(*infrav1.Metal3DataClaim) {}},
		{
			name:   "valid without template namespace",
			mutate: func(c *infrav1.Metal3DataClaim) { c.Spec.Template.Namespace = "" },
		},
		{
			name:       "template in another namespace",
			mutate:     func(c *infrav1.Metal3DataClaim) { c.Spec.Template.Namespace = "tenant-b" },
			wantFields: []string{"spec.template.namespace"},
		},
		{
			name:       "template without name",
			mutate:     func(c *infrav1.Metal3DataClaim) { c.Spec.Template.Name = "" },
			wantFields: []string{"spec.template.name"},
		},
		{
			name:       "no template",
			mutate:     func(c *infrav1.Metal3DataClaim) { c.Spec.Template = nil },
			wantFields: []string{"spec.template.name"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validDataClaim()
			tc.mutate(c)
			_, err := (&Metal3DataClaim{}).ValidateCreate(context.Background(), c)
			expectFieldErrors(t, err, tc.wantFields...)
		})
	}
}

func TestMetal3DataClaimValidateUpdate(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(*infrav1.Metal3DataClaim)
		wantFields []string
	}{
		{name: "unchanged", mutate: func(*infrav1.Metal3DataClaim) {}},
		{
			name: "labels changed",
			mutate: func(c *infrav1.Metal3DataClaim) {
				c.Labels = map[string]string{"cluster.x-k8s.io/cluster-name": "workload-1"}
			},
		},
		{
			name: "status changed",
			mutate: func(c *infrav1.Metal3DataClaim) {
				c.Status.RenderedData = &infrav1.Metal3ObjectRef{Name: "workload-1-workers-template-3"}
			},
		},
		{
			name:       "template name changed",
			mutate:     func(c *infrav1.Metal3DataClaim) { c.Spec.Template.Name = "workload-1-workers-template-v3" },
			wantFields: []string{"spec.template"},
		},
		{
			name:       "template namespace changed",
			mutate:     func(c *infrav1.Metal3DataClaim) { c.Spec.Template.Namespace = "tenant-b" },
			wantFields: []string{"spec.template"},
		},
		{
			name:       "template removed",
			mutate:     func(c *infrav1.Metal3DataClaim) { c.Spec.Template = nil },
			wantFields: []string{"spec.template"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldC, newC := validDataClaim(), validDataClaim()
			tc.mutate(newC)
			_, err := (&Metal3DataClaim{}).ValidateUpdate(context.Background(), oldC, newC)
			expectFieldErrors(t, err, tc.wantFields...)
		})
	}
}

func TestMetal3DataValidateCreate(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(*infrav1.Metal3Data)
		wantFields []string
	}{
		{name: "valid", mutate: func(*infrav1.Metal3Data) {}},
		{name: "valid index 0", mutate: func(d *infrav1.Metal3Data) { d.Spec.Index = ptr.To[int32](0) }},
		{name: "valid without index", mutate: func(d *infrav1.Metal3Data) { d.Spec.Index = nil }},
		{
			name: "valid with Secret names",
			mutate: func(d *infrav1.Metal3Data) {
				d.Spec.MetaData = &corev1.SecretReference{Name: "workload-1-workers-template-3-metadata"}
				d.Spec.NetworkData = &corev1.SecretReference{Name: "workload-1-workers-template-3-networkdata"}
			},
		},
		{
			name:       "negative index",
			mutate:     func(d *infrav1.Metal3Data) { d.Spec.Index = ptr.To[int32](-1) },
			wantFields: []string{"spec.index"},
		},
		{
			name:       "claim without name",
			mutate:     func(d *infrav1.Metal3Data) { d.Spec.Claim.Name = "" },
			wantFields: []string{"spec.claim.name"},
		},
		{
			name:       "no claim",
			mutate:     func(d *infrav1.Metal3Data) { d.Spec.Claim = nil },
			wantFields: []string{"spec.claim.name"},
		},
		{
			name:       "template without name",
			mutate:     func(d *infrav1.Metal3Data) { d.Spec.Template.Name = "" },
			wantFields: []string{"spec.template.name"},
		},
		{
			name:       "no template",
			mutate:     func(d *infrav1.Metal3Data) { d.Spec.Template = nil },
			wantFields: []string{"spec.template.name"},
		},
		{
			name:       "template in another namespace",
			mutate:     func(d *infrav1.Metal3Data) { d.Spec.Template.Namespace = "tenant-b" },
			wantFields: []string{"spec.template.namespace"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := validData()
			tc.mutate(d)
			_, err := (&Metal3Data{}).ValidateCreate(context.Background(), d)
			expectFieldErrors(t, err, tc.wantFields...)
		})
	}
}

func TestMetal3DataValidateUpdate(t *testing.T) {
	consumerID := func(id string) func(*infrav1.Metal3Data) {
		return func(d *infrav1.Metal3Data) {
			d.Annotations = map[string]string{infrav1.ConsumerIDAnnotation: id}
		}
	}
	tests := []struct {
		name       string
		old        func(*infrav1.Metal3Data)
		mutate     func(*infrav1.Metal3Data)
		wantFields []string
	}{
		{name: "unchanged", mutate: func(*infrav1.Metal3Data) {}},
		{name: "consumer ID set for the first time", mutate: consumerID("6f1c")},
		{name: "consumer ID kept", old: consumerID("6f1c"), mutate: consumerID("6f1c")},
		{
			name: "consumer ID first set to another object's", mutate: consumerID("9a2e"),
			wantFields: []string{"metadata.annotations[" + infrav1.ConsumerIDAnnotation + "]"},
		},
		{
			name: "consumer ID changed", old: consumerID("6f1c"), mutate: consumerID("9a2e"),
			wantFields: []string{"metadata.annotations[" + infrav1.ConsumerIDAnnotation + "]"},
		},
		{
			name: "consumer ID removed", old: consumerID("6f1c"), mutate: func(d *infrav1.Metal3Data) { d.Annotations = nil },
			wantFields: []string{"metadata.annotations[" + infrav1.ConsumerIDAnnotation + "]"},
		},
		{
			// clusterctl move's JSON patch before it deletes the source.
			name: "annotations replaced by clusterctl move's delete-for-move", old: consumerID("6f1c"),
			mutate: func(d *infrav1.Metal3Data) {
				d.Annotations = map[string]string{clusterctlv1.DeleteForMoveAnnotation: ""}
			},
		},
		{
			name:   "templateReference changed",
			mutate: func(d *infrav1.Metal3Data) { d.Spec.TemplateReference = "workload-1-workers" },
		},
		{
			name:   "status changed",
			mutate: func(d *infrav1.Metal3Data) { d.Status.Ready = ptr.To(true) },
		},
		{
			name:       "index changed",
			mutate:     func(d *infrav1.Metal3Data) { d.Spec.Index = ptr.To[int32](4) },
			wantFields: []string{"spec.index"},
		},
		{
			name:       "index removed",
			mutate:     func(d *infrav1.Metal3Data) { d.Spec.Index = nil },
			wantFields: []string{"spec.index"},
		},
		{
			// An unset index is index 0.
			name:   "index 0 written where it was unset",
			old:    func(d *infrav1.Metal3Data) { d.Spec.Index = nil },
			mutate: func(d *infrav1.Metal3Data) { d.Spec.Index = ptr.To[int32](0) },
		},
		{
			name:       "claim changed",
			mutate:     func(d *infrav1.Metal3Data) { d.Spec.Claim.Name = "workload-1-md-0-5xq9z-abcde" },
			wantFields: []string{"spec.claim"},
		},
		{
			name:       "template changed",
			mutate:     func(d *infrav1.Metal3Data) { d.Spec.Template.Name = "workload-1-workers-template-v3" },
			wantFields: []string{"spec.template"},
		},
		{
			name:       "claim removed",
			mutate:     func(d *infrav1.Metal3Data) { d.Spec.Claim = nil },
			wantFields: []string{"spec.claim"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldD, newD := validData(), validData()
			oldD.UID, newD.UID = "6f1c", "6f1c"
			if tc.old != nil {
				tc.old(oldD)
				tc.old(newD)
			}
			tc.mutate(newD)
			_, err := (&Metal3Data{}).ValidateUpdate(context.Background(), oldD, newD)
			expectFieldErrors(t, err, tc.wantFields...)
		})
	}
}
