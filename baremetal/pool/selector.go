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

package pool

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Requirement is one set-based requirement of a hostSelector, whichever
// API it was written in (a Metal3Machine's, a HostClaim's).
type Requirement struct {
	Key      string
	Operator string
	Values   []string
}

// NormalizeOperator is op as labels.NewRequirement takes it. Operators are
// case-insensitive, as upstream CAPM3 reads them: objects stored before its
// webhook lowercased them ("In", "NotIn") are still in etcd, and copies of
// them (a machine's selector on its HostClaim) must mean the same.
func NormalizeOperator(op string) selection.Operator {
	return selection.Operator(strings.ToLower(op))
}

// Selector turns a hostSelector into a label selector. Errors name the
// field at fault, the same one every time (labels in key order).
func Selector(matchLabels map[string]string, matchExpressions []Requirement) (labels.Selector, error) {
	selector := labels.NewSelector()
	for _, key := range slices.Sorted(maps.Keys(matchLabels)) {
		req, err := labels.NewRequirement(key, selection.Equals, []string{matchLabels[key]})
		if err != nil {
			return nil, fmt.Errorf("hostSelector.matchLabels[%s]: %w", key, err)
		}
		selector = selector.Add(*req)
	}
	for i, expr := range matchExpressions {
		req, err := labels.NewRequirement(expr.Key, NormalizeOperator(expr.Operator), expr.Values)
		if err != nil {
			return nil, fmt.Errorf("hostSelector.matchExpressions[%d]: %w", i, err)
		}
		selector = selector.Add(*req)
	}
	return selector, nil
}
