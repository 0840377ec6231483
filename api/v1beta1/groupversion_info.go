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

// Package v1beta1 is the infrastructure.cluster.x-k8s.io/v1beta1 API of the
// Metal3 provider: upstream CAPM3's spec shapes, the CAPI v1beta2 status
// contract, and identityRef for multi-tenancy. It is served by converting to
// and from v1beta2, the hub (conversion.go; the fields both versions share
// are converted by zz_generated.conversion.go, see doc.go).
//
// +kubebuilder:object:generate=true
// +groupName=infrastructure.cluster.x-k8s.io
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1"}

	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme registers every kind of this package with a scheme.
	AddToScheme = schemeBuilder.AddToScheme

	// localSchemeBuilder is where zz_generated.conversion.go registers the
	// conversions to and from v1beta2.
	localSchemeBuilder = &schemeBuilder

	// objectTypes lists the kinds; each types file appends its kind and list
	// in an init function.
	objectTypes = []runtime.Object{}
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, objectTypes...)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
