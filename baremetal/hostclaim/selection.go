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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// ReuseID is what a host kept for claim's node reuse key is kept for
// ("<namespace>/<key>", the value of KeptForAnnotation), or "" for a claim
// without a key. The namespace scopes keys: tenants cannot name each
// other's.
func ReuseID(claim *bmov1alpha1.HostClaim) string {
	key := claim.Annotations[NodeReuseKeyAnnotation]
	if key == "" {
		return ""
	}
	return claim.Namespace + "/" + key
}

// Keeper reads the claims' node reuse mark (KeptForAnnotation) for
// claim: a host kept for its key is its, one kept for another key is not.
func Keeper(claim *bmov1alpha1.HostClaim) pool.Keeper {
	reuseID := ReuseID(claim)
	return func(host *bmov1alpha1.BareMetalHost) pool.Kept {
		switch host.Annotations[KeptForAnnotation] {
		case "":
			return pool.NotKept
		case reuseID:
			return pool.KeptForConsumer
		}
		return pool.KeptForOther
	}
}

// Selector is claim's hostSelector as a label selector.
func Selector(sel bmov1alpha1.HostSelector) (labels.Selector, error) {
	requirements := make([]pool.Requirement, 0, len(sel.MatchExpressions))
	for _, expr := range sel.MatchExpressions {
		requirements = append(requirements, pool.Requirement{Key: expr.Key, Operator: string(expr.Operator), Values: expr.Values})
	}
	return pool.Selector(sel.MatchLabels, requirements)
}

// Select is the binder's question to the pool for claim: the hosts of
// hosts it may bind, among those of the admitted namespaces (others are
// ignored; hostSelector.inNamespace narrows them to one). The binder
// serialises its claims, so equal hosts come in name order.
func Select(claim *bmov1alpha1.HostClaim, hosts []bmov1alpha1.BareMetalHost, admitted []string) (*pool.Selection, error) {
	selector, err := Selector(claim.Spec.HostSelector)
	if err != nil {
		return nil, err
	}
	namespaces := append([]string{}, admitted...) // none admitted: none, not all
	if in := claim.Spec.HostSelector.InNamespace; in != "" {
		namespaces = []string{}
		if slices.Contains(admitted, in) {
			namespaces = []string{in}
		}
	}
	return pool.Choose(hosts, pool.Request{
		Selector:      selector,
		Namespaces:    namespaces,
		FailureDomain: claim.Spec.FailureDomain,
		Keeper:        Keeper(claim),
	}), nil
}
