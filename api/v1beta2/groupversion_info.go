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

// Package v1beta2 is the infrastructure.cluster.x-k8s.io/v1beta2 API of the
// Metal3 provider: upstream CAPM3 v1.13's v1beta2 schema, field for field,
// plus this provider's multi-tenancy additions (identityRef, hostMode, the
// identity status, Metal3ClusterIdentity). It is the storage version and the
// conversion hub; v1beta1 is served by converting to and from it.
//
// +kubebuilder:object:generate=true
// +groupName=infrastructure.cluster.x-k8s.io
package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2"}

	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme registers every kind of this package with a scheme.
	AddToScheme = schemeBuilder.AddToScheme

	// objectTypes lists the kinds; each types file appends its kind and list
	// in an init function.
	objectTypes = []runtime.Object{}
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, objectTypes...)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
