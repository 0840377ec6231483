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

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

func validMetal3ClusterSpec() infrav1.Metal3ClusterSpec {
	return infrav1.Metal3ClusterSpec{
		ControlPlaneEndpoint: infrav1.APIEndpoint{Host: "192.168.111.249", Port: 6443},
		CloudProviderEnabled: ptr.To(false),
		FailureDomains: []clusterv1.FailureDomain{
			{Name: "rack-a", ControlPlane: ptr.To(true), Attributes: map[string]string{"rack": "a"}},
		},
	}
}

func validMetal3Cluster() *infrav1.Metal3Cluster {
	return &infrav1.Metal3Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "workload-1", Namespace: testNamespace},
		Spec:       validMetal3ClusterSpec(),
	}
}

func validMetal3ClusterTemplate() *infrav1.Metal3ClusterTemplate {
	return &infrav1.Metal3ClusterTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "baremetal-cluster-v1", Namespace: testNamespace},
		Spec: infrav1.Metal3ClusterTemplateSpec{
			Template: infrav1.Metal3ClusterTemplateResource{Spec: validMetal3ClusterSpec()},
		},
	}
}

// clusterSpecDefaultCases apply to a Metal3Cluster and a Metal3ClusterTemplate alike.
var clusterSpecDefaultCases = []struct {
	name   string
	spec   infrav1.Metal3ClusterSpec
	expect infrav1.Metal3ClusterSpec
}{
	{
		name:   "port 6443 when host is set without port",
		spec:   infrav1.Metal3ClusterSpec{ControlPlaneEndpoint: infrav1.APIEndpoint{Host: "192.168.111.249"}},
		expect: infrav1.Metal3ClusterSpec{ControlPlaneEndpoint: infrav1.APIEndpoint{Host: "192.168.111.249", Port: 6443}},
	},
	{
		name:   "explicit port kept",
		spec:   infrav1.Metal3ClusterSpec{ControlPlaneEndpoint: infrav1.APIEndpoint{Host: "192.168.111.249", Port: 7443}},
		expect: infrav1.Metal3ClusterSpec{ControlPlaneEndpoint: infrav1.APIEndpoint{Host: "192.168.111.249", Port: 7443}},
	},
	{
		name:   "no port without a host",
		spec:   infrav1.Metal3ClusterSpec{},
		expect: infrav1.Metal3ClusterSpec{},
	},
	{
		name:   "cloudProviderEnabled=false kept",
		spec:   infrav1.Metal3ClusterSpec{CloudProviderEnabled: ptr.To(false)},
		expect: infrav1.Metal3ClusterSpec{CloudProviderEnabled: ptr.To(false)},
	},
	{
		name:   "cloudProviderEnabled=true kept",
		spec:   infrav1.Metal3ClusterSpec{CloudProviderEnabled: ptr.To(true)},
		expect: infrav1.Metal3ClusterSpec{CloudProviderEnabled: ptr.To(true)},
	},
	{
		name:   "cloudProviderEnabled left unset",
		spec:   infrav1.Metal3ClusterSpec{},
		expect: infrav1.Metal3ClusterSpec{},
	},
	{
		name: "identityRef kind Secret when unset",
		spec: infrav1.Metal3ClusterSpec{IdentityRef: &infrav1.IdentityRef{Name: "pool-east-kubeconfig", Context: "pool-east"}},
		expect: infrav1.Metal3ClusterSpec{IdentityRef: &infrav1.IdentityRef{
			Kind: infrav1.IdentityKindSecret, Name: "pool-east-kubeconfig", Context: "pool-east",
		}},
	},
	{
		name: "identityRef kind Metal3ClusterIdentity kept",
		spec: infrav1.Metal3ClusterSpec{IdentityRef: &infrav1.IdentityRef{
			Kind: infrav1.IdentityKindMetal3ClusterIdentity, Name: "pool-east",
		}},
		expect: infrav1.Metal3ClusterSpec{IdentityRef: &infrav1.IdentityRef{
			Kind: infrav1.IdentityKindMetal3ClusterIdentity, Name: "pool-east",
		}},
	},
	{
		name:   "no identityRef added",
		spec:   infrav1.Metal3ClusterSpec{},
		expect: infrav1.Metal3ClusterSpec{},
	},
}

func TestMetal3ClusterDefault(t *testing.T) {
	for _, tc := range clusterSpecDefaultCases {
		t.Run(tc.name, func(t *testing.T) {
			c := &infrav1.Metal3Cluster{Spec: *tc.spec.DeepCopy()}
			if err := (&Metal3Cluster{}).Default(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(c.Spec, tc.expect) {
				t.Errorf("defaulted spec = %+v, want %+v", c.Spec, tc.expect)
			}
		})
	}
}

func TestMetal3ClusterTemplateDefault(t *testing.T) {
	for _, tc := range clusterSpecDefaultCases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := &infrav1.Metal3ClusterTemplate{}
			tmpl.Spec.Template.Spec = *tc.spec.DeepCopy()
			if err := (&Metal3ClusterTemplate{}).Default(context.Background(), tmpl); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(tmpl.Spec.Template.Spec, tc.expect) {
				t.Errorf("defaulted spec = %+v, want %+v", tmpl.Spec.Template.Spec, tc.expect)
			}
		})
	}
}

// clusterSpecCase mutates a valid Metal3ClusterSpec; wantFields are relative
// to the spec (the test prefixes spec. or spec.template.spec.).
type clusterSpecCase struct {
	name       string
	mutate     func(*infrav1.Metal3ClusterSpec)
	wantFields []string
}

// clusterSpecCases are the validation rules shared by Metal3Cluster and
// Metal3ClusterTemplate.
var clusterSpecCases = []clusterSpecCase{
	{name: "valid", mutate: func(*infrav1.Metal3ClusterSpec) {}},
	{
		name: "valid identityRef with context",
		mutate: func(s *infrav1.Metal3ClusterSpec) {
			s.IdentityRef = &infrav1.IdentityRef{Name: "pool-east-kubeconfig", Context: "pool-east"}
		},
	},
	{
		name:   "valid DNS name as host",
		mutate: func(s *infrav1.Metal3ClusterSpec) { s.ControlPlaneEndpoint.Host = "api.workload-1.example.com" },
	},
	{
		name:   "valid IPv6 host",
		mutate: func(s *infrav1.Metal3ClusterSpec) { s.ControlPlaneEndpoint.Host = "fd00:1::249" },
	},
	{
		name:   "valid without failure domains",
		mutate: func(s *infrav1.Metal3ClusterSpec) { s.FailureDomains = nil },
	},
	{
		name:       "empty identityRef name",
		mutate:     func(s *infrav1.Metal3ClusterSpec) { s.IdentityRef = &infrav1.IdentityRef{Context: "pool-east"} },
		wantFields: []string{"identityRef.name"},
	},
	{
		name:       "identityRef name not a Secret name",
		mutate:     func(s *infrav1.Metal3ClusterSpec) { s.IdentityRef = &infrav1.IdentityRef{Name: "Bad_Name"} },
		wantFields: []string{"identityRef.name"},
	},
	{
		name: "identityRef context too long",
		mutate: func(s *infrav1.Metal3ClusterSpec) {
			s.IdentityRef = &infrav1.IdentityRef{Name: "pool-east-kubeconfig", Context: strings.Repeat("c", 254)}
		},
		wantFields: []string{"identityRef.context"},
	},
	{
		name: "valid identityRef of kind Secret",
		mutate: func(s *infrav1.Metal3ClusterSpec) {
			s.IdentityRef = &infrav1.IdentityRef{Kind: infrav1.IdentityKindSecret, Name: "pool-east-kubeconfig", Context: "pool-east"}
		},
	},
	{
		name: "valid identityRef of kind Metal3ClusterIdentity",
		mutate: func(s *infrav1.Metal3ClusterSpec) {
			s.IdentityRef = &infrav1.IdentityRef{Kind: infrav1.IdentityKindMetal3ClusterIdentity, Name: "pool-east"}
		},
	},
	{
		name: "identityRef of an unknown kind",
		mutate: func(s *infrav1.Metal3ClusterSpec) {
			s.IdentityRef = &infrav1.IdentityRef{Kind: "ConfigMap", Name: "pool-east-kubeconfig"}
		},
		wantFields: []string{"identityRef.kind"},
	},
	{
		name: "identityRef of kind Metal3ClusterIdentity with a context",
		mutate: func(s *infrav1.Metal3ClusterSpec) {
			s.IdentityRef = &infrav1.IdentityRef{Kind: infrav1.IdentityKindMetal3ClusterIdentity, Name: "pool-east", Context: "pool-east"}
		},
		wantFields: []string{"identityRef.context"},
	},
	{
		name: "identityRef of kind Metal3ClusterIdentity without a name",
		mutate: func(s *infrav1.Metal3ClusterSpec) {
			s.IdentityRef = &infrav1.IdentityRef{Kind: infrav1.IdentityKindMetal3ClusterIdentity}
		},
		wantFields: []string{"identityRef.name"},
	},
	{
		name: "identityRef of kind Metal3ClusterIdentity with an invalid name",
		mutate: func(s *infrav1.Metal3ClusterSpec) {
			s.IdentityRef = &infrav1.IdentityRef{Kind: infrav1.IdentityKindMetal3ClusterIdentity, Name: "Pool_East"}
		},
		wantFields: []string{"identityRef.name"},
	},
	{
		name:       "port out of range",
		mutate:     func(s *infrav1.Metal3ClusterSpec) { s.ControlPlaneEndpoint.Port = 70000 },
		wantFields: []string{"controlPlaneEndpoint.port"},
	},
	{
		name:       "negative port",
		mutate:     func(s *infrav1.Metal3ClusterSpec) { s.ControlPlaneEndpoint.Port = -1 },
		wantFields: []string{"controlPlaneEndpoint.port"},
	},
	{
		name:       "port without host",
		mutate:     func(s *infrav1.Metal3ClusterSpec) { s.ControlPlaneEndpoint.Host = "" },
		wantFields: []string{"controlPlaneEndpoint.host"},
	},
	{
		name:       "host neither IP nor DNS name",
		mutate:     func(s *infrav1.Metal3ClusterSpec) { s.ControlPlaneEndpoint.Host = "api server!" },
		wantFields: []string{"controlPlaneEndpoint.host"},
	},
	{
		name: "valid several failure domains",
		mutate: func(s *infrav1.Metal3ClusterSpec) {
			s.FailureDomains = append(s.FailureDomains, clusterv1.FailureDomain{Name: "rack-b"})
		},
	},
	{
		name: "failure domain name not a label value",
		mutate: func(s *infrav1.Metal3ClusterSpec) {
			s.FailureDomains = []clusterv1.FailureDomain{{Name: "rack a/1", ControlPlane: ptr.To(true)}}
		},
		wantFields: []string{"failureDomains[0].name"},
	},
	{
		name: "failure domain named twice",
		mutate: func(s *infrav1.Metal3ClusterSpec) {
			s.FailureDomains = append(s.FailureDomains, clusterv1.FailureDomain{Name: "rack-a", ControlPlane: ptr.To(false)})
		},
		wantFields: []string{"failureDomains[1].name"},
	},
}

func prefixed(prefix string, fields []string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = prefix + f
	}
	return out
}

func TestMetal3ClusterValidateCreate(t *testing.T) {
	cases := append([]clusterSpecCase{
		{
			name:       "missing controlPlaneEndpoint",
			mutate:     func(s *infrav1.Metal3ClusterSpec) { s.ControlPlaneEndpoint = infrav1.APIEndpoint{} },
			wantFields: []string{"controlPlaneEndpoint.host"},
		},
	}, clusterSpecCases...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validMetal3Cluster()
			tc.mutate(&c.Spec)
			_, err := (&Metal3Cluster{}).ValidateCreate(context.Background(), c)
			expectFieldErrors(t, err, prefixed("spec.", tc.wantFields)...)
		})
	}
}

func TestMetal3ClusterValidateUpdate(t *testing.T) {
	tests := []struct {
		name       string
		old        func(*infrav1.Metal3Cluster)
		new        func(*infrav1.Metal3Cluster)
		wantFields []string
	}{
		{name: "unchanged", old: func(*infrav1.Metal3Cluster) {}, new: func(*infrav1.Metal3Cluster) {}},
		{
			name: "identityRef changed",
			old: func(c *infrav1.Metal3Cluster) {
				c.Spec.IdentityRef = &infrav1.IdentityRef{Name: "pool-east-kubeconfig", Context: "pool-east"}
			},
			new: func(c *infrav1.Metal3Cluster) {
				c.Spec.IdentityRef = &infrav1.IdentityRef{Name: "pool-west-kubeconfig", Context: "pool-west"}
			},
		},
		{
			name: "identityRef added",
			old:  func(*infrav1.Metal3Cluster) {},
			new: func(c *infrav1.Metal3Cluster) {
				c.Spec.IdentityRef = &infrav1.IdentityRef{Name: "pool-east-kubeconfig"}
			},
		},
		{
			name: "identityRef removed",
			old: func(c *infrav1.Metal3Cluster) {
				c.Spec.IdentityRef = &infrav1.IdentityRef{Name: "pool-east-kubeconfig"}
			},
			new: func(*infrav1.Metal3Cluster) {},
		},
		{
			// As its name, the Metal3Cluster's identityRef kind may change:
			// a tenant's own Secret is replaced by its admin's identity.
			name: "identityRef kind changed",
			old: func(c *infrav1.Metal3Cluster) {
				c.Spec.IdentityRef = &infrav1.IdentityRef{Kind: infrav1.IdentityKindSecret, Name: "pool-east"}
			},
			new: func(c *infrav1.Metal3Cluster) {
				c.Spec.IdentityRef = &infrav1.IdentityRef{Kind: infrav1.IdentityKindMetal3ClusterIdentity, Name: "pool-east"}
			},
		},
		{
			name: "identityRef changed to a Metal3ClusterIdentity with a context",
			old: func(c *infrav1.Metal3Cluster) {
				c.Spec.IdentityRef = &infrav1.IdentityRef{Name: "pool-east-kubeconfig", Context: "pool-east"}
			},
			new: func(c *infrav1.Metal3Cluster) {
				c.Spec.IdentityRef = &infrav1.IdentityRef{
					Kind: infrav1.IdentityKindMetal3ClusterIdentity, Name: "pool-east", Context: "pool-east",
				}
			},
			wantFields: []string{"spec.identityRef.context"},
		},
		{
			name: "failure domains changed",
			old:  func(*infrav1.Metal3Cluster) {},
			new: func(c *infrav1.Metal3Cluster) {
				c.Spec.FailureDomains = append(c.Spec.FailureDomains, clusterv1.FailureDomain{Name: "rack-b", ControlPlane: ptr.To(true)})
			},
		},
		{
			name: "controlPlaneEndpoint set when it was empty",
			old:  func(c *infrav1.Metal3Cluster) { c.Spec.ControlPlaneEndpoint = infrav1.APIEndpoint{} },
			new:  func(*infrav1.Metal3Cluster) {},
		},
		{
			name:       "controlPlaneEndpoint host changed",
			old:        func(*infrav1.Metal3Cluster) {},
			new:        func(c *infrav1.Metal3Cluster) { c.Spec.ControlPlaneEndpoint.Host = "192.168.111.250" },
			wantFields: []string{"spec.controlPlaneEndpoint"},
		},
		{
			name:       "controlPlaneEndpoint port changed",
			old:        func(*infrav1.Metal3Cluster) {},
			new:        func(c *infrav1.Metal3Cluster) { c.Spec.ControlPlaneEndpoint.Port = 7443 },
			wantFields: []string{"spec.controlPlaneEndpoint"},
		},
		{
			name:       "controlPlaneEndpoint removed",
			old:        func(*infrav1.Metal3Cluster) {},
			new:        func(c *infrav1.Metal3Cluster) { c.Spec.ControlPlaneEndpoint = infrav1.APIEndpoint{} },
			wantFields: []string{"spec.controlPlaneEndpoint", "spec.controlPlaneEndpoint.host"},
		},
		{
			name:       "new spec invalid",
			old:        func(*infrav1.Metal3Cluster) {},
			new:        func(c *infrav1.Metal3Cluster) { c.Spec.IdentityRef = &infrav1.IdentityRef{Name: "Bad_Name"} },
			wantFields: []string{"spec.identityRef.name"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldC, newC := validMetal3Cluster(), validMetal3Cluster()
			tc.old(oldC)
			tc.new(newC)
			_, err := (&Metal3Cluster{}).ValidateUpdate(context.Background(), oldC, newC)
			expectFieldErrors(t, err, tc.wantFields...)
		})
	}
}

func TestMetal3ClusterTemplateValidateCreate(t *testing.T) {
	cases := append([]clusterSpecCase{
		{
			name:   "valid without controlPlaneEndpoint",
			mutate: func(s *infrav1.Metal3ClusterSpec) { s.ControlPlaneEndpoint = infrav1.APIEndpoint{} },
		},
	}, clusterSpecCases...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := validMetal3ClusterTemplate()
			tc.mutate(&tmpl.Spec.Template.Spec)
			_, err := (&Metal3ClusterTemplate{}).ValidateCreate(context.Background(), tmpl)
			expectFieldErrors(t, err, prefixed("spec.template.spec.", tc.wantFields)...)
		})
	}
}

func TestMetal3ClusterTemplateValidateUpdate(t *testing.T) {
	tests := []struct {
		name string
		// old, when set, changes the template as stored before the update.
		old        func(*infrav1.Metal3ClusterTemplate)
		new        func(*infrav1.Metal3ClusterTemplate)
		wantFields []string
	}{
		{name: "unchanged", new: func(*infrav1.Metal3ClusterTemplate) {}},
		{
			name: "object labels changed",
			new:  func(t *infrav1.Metal3ClusterTemplate) { t.Labels = map[string]string{"team": "infra"} },
		},
		{
			name: "template metadata changed",
			new: func(t *infrav1.Metal3ClusterTemplate) {
				t.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "infra"}
			},
		},
		{
			name: "identityRef changed",
			new: func(t *infrav1.Metal3ClusterTemplate) {
				t.Spec.Template.Spec.IdentityRef = &infrav1.IdentityRef{Name: "pool-west-kubeconfig"}
			},
			wantFields: []string{"spec.template.spec"},
		},
		{
			name: "identityRef kind changed",
			old: func(t *infrav1.Metal3ClusterTemplate) {
				t.Spec.Template.Spec.IdentityRef = &infrav1.IdentityRef{Name: "pool-east"}
			},
			new: func(t *infrav1.Metal3ClusterTemplate) {
				t.Spec.Template.Spec.IdentityRef = &infrav1.IdentityRef{Kind: infrav1.IdentityKindMetal3ClusterIdentity, Name: "pool-east"}
			},
			wantFields: []string{"spec.template.spec"},
		},
		{
			// A template stored before kind existed is not changed by the
			// defaulted kind.
			name: "identityRef kind Secret written where it was unset",
			old: func(t *infrav1.Metal3ClusterTemplate) {
				t.Spec.Template.Spec.IdentityRef = &infrav1.IdentityRef{Name: "pool-east-kubeconfig"}
			},
			new: func(t *infrav1.Metal3ClusterTemplate) {
				t.Spec.Template.Spec.IdentityRef = &infrav1.IdentityRef{Kind: infrav1.IdentityKindSecret, Name: "pool-east-kubeconfig"}
			},
		},
		{
			name:       "controlPlaneEndpoint changed",
			new:        func(t *infrav1.Metal3ClusterTemplate) { t.Spec.Template.Spec.ControlPlaneEndpoint.Port = 7443 },
			wantFields: []string{"spec.template.spec"},
		},
		{
			name: "failure domain added",
			new: func(t *infrav1.Metal3ClusterTemplate) {
				t.Spec.Template.Spec.FailureDomains = append(t.Spec.Template.Spec.FailureDomains, clusterv1.FailureDomain{Name: "rack-b"})
			},
			wantFields: []string{"spec.template.spec"},
		},
		{
			name: "change to an invalid spec",
			new: func(t *infrav1.Metal3ClusterTemplate) {
				t.Spec.Template.Spec.IdentityRef = &infrav1.IdentityRef{Name: ""}
			},
			wantFields: []string{"spec.template.spec", "spec.template.spec.identityRef.name"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldT, newT := validMetal3ClusterTemplate(), validMetal3ClusterTemplate()
			if tc.old != nil {
				tc.old(oldT)
				tc.old(newT)
			}
			tc.new(newT)
			_, err := (&Metal3ClusterTemplate{}).ValidateUpdate(context.Background(), oldT, newT)
			expectFieldErrors(t, err, tc.wantFields...)
		})
	}
}
