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
	"fmt"
	"regexp"
	"slices"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
)

// PolicyAdmits reports whether policy lets claims of the namespace named
// claimNamespace, labelled namespaceLabels, bind the hosts of the policy's
// namespace.
//
// A policy without hostClaimNamespaces admits nobody: a pool admin opens a
// host namespace explicitly, never by accident. Every criterion given must
// hold; an empty hostClaimNamespaces ({}) gives none, so it admits every
// namespace, as the BMO API's reference implementation does. An empty list
// of names (names: []) is a criterion no namespace meets.
//
// nameMatches must match the whole namespace name (it is anchored as
// ^(?:re)$). The API leaves this open; a partial match would let "team-a"
// admit "team-a-evil" or "not-team-a", which a pool admin writing a
// namespace pattern does not expect. An invalid expression admits nobody
// and is returned as an error so it can be reported.
func PolicyAdmits(policy *bmov1alpha1.HostDeployPolicy, claimNamespace string, namespaceLabels map[string]string) (bool, error) {
	constraints := policy.Spec.HostClaimNamespaces
	if constraints == nil {
		return false, nil
	}
	// names: [] lists no namespace, so it admits none, as an empty
	// allowedNamespaces list does; only an absent list leaves names free.
	if constraints.Names != nil && !slices.Contains(constraints.Names, claimNamespace) {
		return false, nil
	}
	if constraints.NameMatches != "" {
		re, err := regexp.Compile(`^(?:` + constraints.NameMatches + `)$`)
		if err != nil {
			return false, fmt.Errorf("HostDeployPolicy %s/%s: nameMatches %q is not a regular expression: %w",
				policy.Namespace, policy.Name, constraints.NameMatches, err)
		}
		if !re.MatchString(claimNamespace) {
			return false, nil
		}
	}
	for _, want := range constraints.HasLabels {
		value, has := namespaceLabels[want.Name]
		if !has || (want.Value != "" && value != want.Value) {
			return false, nil
		}
	}
	return true, nil
}

// AdmittedNamespaces are the host namespaces whose hosts a claim of
// claimNamespace may bind: those with at least one policy admitting it,
// sorted. Policies that cannot be evaluated (a bad nameMatches) admit
// nothing and come back in problems, so one broken policy does not stop
// the others from admitting.
func AdmittedNamespaces(policies []bmov1alpha1.HostDeployPolicy, claimNamespace string, namespaceLabels map[string]string) (admitted []string, problems []error) {
	for i := range policies {
		policy := &policies[i]
		if slices.Contains(admitted, policy.Namespace) {
			continue
		}
		ok, err := PolicyAdmits(policy, claimNamespace, namespaceLabels)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		if ok {
			admitted = append(admitted, policy.Namespace)
		}
	}
	slices.Sort(admitted)
	return admitted, problems
}
