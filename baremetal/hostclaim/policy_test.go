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

package hostclaim

import (
	"slices"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func policy(namespace string, ns *bmov1alpha1.HostClaimNamespaces) bmov1alpha1.HostDeployPolicy {
	return bmov1alpha1.HostDeployPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "policy"},
		Spec:       bmov1alpha1.HostDeployPolicySpec{HostClaimNamespaces: ns},
	}
}

func TestPolicyAdmits(t *testing.T) {
	labels := map[string]string{"tenant": "yes", "tier": "gold"}
	tests := []struct {
		name     string
		criteria *bmov1alpha1.HostClaimNamespaces
		ns       string
		want     bool
		wantErr  bool
	}{
		{name: "no hostClaimNamespaces admits none", criteria: nil, ns: "team-a"},
		{name: "empty criteria admit every namespace", criteria: &bmov1alpha1.HostClaimNamespaces{}, ns: "team-a", want: true},
		{name: "names: listed", criteria: &bmov1alpha1.HostClaimNamespaces{Names: []string{"team-b", "team-a"}}, ns: "team-a", want: true},
		{name: "names: not listed", criteria: &bmov1alpha1.HostClaimNamespaces{Names: []string{"team-b"}}, ns: "team-a"},
		{name: "names: [] lists none, so admits none", criteria: &bmov1alpha1.HostClaimNamespaces{Names: []string{}}, ns: "team-a"},
		{name: "nameMatches: full match", criteria: &bmov1alpha1.HostClaimNamespaces{NameMatches: "team-[a-z]"}, ns: "team-a", want: true},
		{name: "nameMatches is anchored at the end", criteria: &bmov1alpha1.HostClaimNamespaces{NameMatches: "team-[a-z]"}, ns: "team-a-evil"},
		{name: "nameMatches is anchored at the start", criteria: &bmov1alpha1.HostClaimNamespaces{NameMatches: "team-a"}, ns: "not-team-a"},
		{name: "nameMatches alternatives are anchored as a whole", criteria: &bmov1alpha1.HostClaimNamespaces{NameMatches: "x|team-a"}, ns: "team-a-evil"},
		{name: "nameMatches invalid admits none", criteria: &bmov1alpha1.HostClaimNamespaces{NameMatches: "team-["}, ns: "team-a", wantErr: true},
		{name: "hasLabels: present, any value", criteria: &bmov1alpha1.HostClaimNamespaces{HasLabels: []bmov1alpha1.NameValuePair{{Name: "tenant"}}}, ns: "team-a", want: true},
		{name: "hasLabels: value equal", criteria: &bmov1alpha1.HostClaimNamespaces{HasLabels: []bmov1alpha1.NameValuePair{{Name: "tier", Value: "gold"}}}, ns: "team-a", want: true},
		{name: "hasLabels: value differs", criteria: &bmov1alpha1.HostClaimNamespaces{HasLabels: []bmov1alpha1.NameValuePair{{Name: "tier", Value: "silver"}}}, ns: "team-a"},
		{name: "hasLabels: every label needed", criteria: &bmov1alpha1.HostClaimNamespaces{HasLabels: []bmov1alpha1.NameValuePair{{Name: "tenant"}, {Name: "missing"}}}, ns: "team-a"},
		{name: "all criteria hold", criteria: &bmov1alpha1.HostClaimNamespaces{
			Names: []string{"team-a"}, NameMatches: "team-.*", HasLabels: []bmov1alpha1.NameValuePair{{Name: "tenant", Value: "yes"}},
		}, ns: "team-a", want: true},
		{name: "one criterion fails", criteria: &bmov1alpha1.HostClaimNamespaces{
			Names: []string{"team-a"}, NameMatches: "other-.*",
		}, ns: "team-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy("pool", tt.criteria)
			got, err := PolicyAdmits(&p, tt.ns, labels)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("PolicyAdmits = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAdmittedNamespaces(t *testing.T) {
	policies := []bmov1alpha1.HostDeployPolicy{
		policy("pool-b", &bmov1alpha1.HostClaimNamespaces{Names: []string{"team-a"}}),
		policy("pool-a", &bmov1alpha1.HostClaimNamespaces{NameMatches: "team-.*"}),
		policy("pool-a", &bmov1alpha1.HostClaimNamespaces{}), // a second one admitting pool-a: listed once
		policy("pool-c", nil),
		policy("pool-d", &bmov1alpha1.HostClaimNamespaces{NameMatches: "("}),
		policy("pool-e", &bmov1alpha1.HostClaimNamespaces{Names: []string{"team-b"}}),
	}
	admitted, problems := AdmittedNamespaces(policies, "team-a", nil)
	if want := []string{"pool-a", "pool-b"}; !slices.Equal(admitted, want) {
		t.Errorf("admitted = %v, want %v", admitted, want)
	}
	if len(problems) != 1 {
		t.Errorf("problems = %v, want the one bad nameMatches", problems)
	}
	if admitted, _ := AdmittedNamespaces(nil, "team-a", nil); len(admitted) != 0 {
		t.Errorf("no policy admitted %v", admitted)
	}
}
