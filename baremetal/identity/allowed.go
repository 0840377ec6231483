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
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// AdmitsNamespace reports whether a Metal3ClusterIdentity with these
// allowedNamespaces may be used by objects in namespace: when the namespace
// is listed by name, or its labels match the selector. Unset
// allowedNamespaces, or ones with neither a list nor a selector, admit no
// namespace, so that an identity is closed until its admin opens it; an
// empty selector admits every namespace.
//
// A selector that does not parse is an error whatever the list says: the
// identity is then broken for every namespace alike, rather than working for
// some, which would hide the mistake. The webhook rejects such selectors,
// so this only happens when it was bypassed.
func AdmitsNamespace(allowed *infrav1.AllowedNamespaces, namespace *corev1.Namespace) (bool, error) {
	if allowed == nil || namespace == nil {
		return false, nil
	}
	selector := labels.Nothing()
	if allowed.Selector != nil {
		var err error
		selector, err = metav1.LabelSelectorAsSelector(allowed.Selector)
		if err != nil {
			return false, fmt.Errorf("allowedNamespaces.selector: %w", err)
		}
	}
	if slices.Contains(allowed.List, namespace.Name) {
		return true, nil
	}
	return selector.Matches(labels.Set(namespace.Labels)), nil
}
