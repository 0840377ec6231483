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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Metal3ClusterIdentity validates Metal3ClusterIdentities. It has no
// defaulter: no field has a default to write (an empty secretRef.namespace
// and unset allowedNamespaces mean what they say), and a mutating webhook
// that changes nothing would only be one more thing that can fail.
type Metal3ClusterIdentity struct{}

// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1beta2-metal3clusteridentity,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=metal3clusteridentities,versions=v1beta2,name=validation.metal3clusteridentity.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// SetupWebhookWithManager registers the webhook with the manager's webhook server.
func (w *Metal3ClusterIdentity) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.Metal3ClusterIdentity{}).
		WithValidator(w).
		Complete()
}

var _ admission.Validator[*infrav1.Metal3ClusterIdentity] = &Metal3ClusterIdentity{}

// ValidateCreate validates a new Metal3ClusterIdentity.
func (*Metal3ClusterIdentity) ValidateCreate(_ context.Context, i *infrav1.Metal3ClusterIdentity) (admission.Warnings, error) {
	errs := validateMetal3ClusterIdentitySpec(&i.Spec, field.NewPath("spec"))
	return closedIdentityWarnings(&i.Spec), toAPIError(groupKind("Metal3ClusterIdentity"), i.Name, errs)
}

// ValidateUpdate validates a change. Every field may change: pointing the
// identity at another Secret is how its admin rotates or moves a pool, and
// narrowing allowedNamespaces is how access is withdrawn; the controllers
// report on the clusters what such a change does to them.
func (*Metal3ClusterIdentity) ValidateUpdate(_ context.Context, _, i *infrav1.Metal3ClusterIdentity) (admission.Warnings, error) {
	errs := validateMetal3ClusterIdentitySpec(&i.Spec, field.NewPath("spec"))
	return closedIdentityWarnings(&i.Spec), toAPIError(groupKind("Metal3ClusterIdentity"), i.Name, errs)
}

// ValidateDelete allows every deletion.
func (*Metal3ClusterIdentity) ValidateDelete(context.Context, *infrav1.Metal3ClusterIdentity) (admission.Warnings, error) {
	return nil, nil
}

func validateMetal3ClusterIdentitySpec(spec *infrav1.Metal3ClusterIdentitySpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	secretRef := path.Child("secretRef")
	if spec.SecretRef.Name == "" {
		errs = append(errs, field.Required(secretRef.Child("name"), "name of the kubeconfig Secret is required"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(spec.SecretRef.Name) {
			errs = append(errs, field.Invalid(secretRef.Child("name"), spec.SecretRef.Name, "must be a valid Secret name: "+msg))
		}
	}
	if ns := spec.SecretRef.Namespace; ns != "" {
		for _, msg := range validation.IsDNS1123Label(ns) {
			errs = append(errs, field.Invalid(secretRef.Child("namespace"), ns, "must be a valid namespace name: "+msg))
		}
	}
	if len(spec.SecretRef.Context) > maxContextNameLength {
		errs = append(errs, field.TooLong(secretRef.Child("context"), spec.SecretRef.Context, maxContextNameLength))
	}
	errs = append(errs, validateAllowedNamespaces(spec.AllowedNamespaces, path.Child("allowedNamespaces"))...)
	return errs
}

// validateAllowedNamespaces checks that the list holds namespace names, each
// once, and that the selector is one the controllers can evaluate: a
// selector that does not parse would leave the identity unusable everywhere.
func validateAllowedNamespaces(allowed *infrav1.AllowedNamespaces, path *field.Path) field.ErrorList {
	if allowed == nil {
		return nil
	}
	var errs field.ErrorList
	listed := make(map[string]bool, len(allowed.List))
	for i, name := range allowed.List {
		p := path.Child("list").Index(i)
		if listed[name] {
			errs = append(errs, field.Duplicate(p, name))
			continue
		}
		listed[name] = true
		for _, msg := range validation.IsDNS1123Label(name) {
			errs = append(errs, field.Invalid(p, name, "must be a namespace name: "+msg))
		}
	}
	if allowed.Selector != nil {
		p := path.Child("selector")
		selectorErrs := metav1validation.ValidateLabelSelector(allowed.Selector, metav1validation.LabelSelectorValidationOptions{}, p)
		errs = append(errs, selectorErrs...)
		if len(selectorErrs) == 0 {
			// What the controllers will run; it must agree.
			if _, err := metav1.LabelSelectorAsSelector(allowed.Selector); err != nil {
				errs = append(errs, field.Invalid(p, allowed.Selector.String(), err.Error()))
			}
		}
	}
	return errs
}

// closedIdentityWarnings warns of an identity no namespace may use: valid,
// since an admin may create it before deciding who uses it, but more
// often a forgotten allowedNamespaces.
func closedIdentityWarnings(spec *infrav1.Metal3ClusterIdentitySpec) admission.Warnings {
	allowed := spec.AllowedNamespaces
	if allowed != nil && (len(allowed.List) > 0 || allowed.Selector != nil) {
		return nil
	}
	return admission.Warnings{"spec.allowedNamespaces admits no namespace: no Metal3Cluster can use this identity " +
		"until it lists namespaces or sets a selector ({} admits every namespace)"}
}
