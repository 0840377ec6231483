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

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Metal3DataClaim validates Metal3DataClaims.
type Metal3DataClaim struct{}

// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1beta2-metal3dataclaim,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=metal3dataclaims,versions=v1beta2,name=validation.metal3dataclaim.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// SetupWebhookWithManager registers the webhook with the manager's webhook server.
func (w *Metal3DataClaim) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.Metal3DataClaim{}).
		WithValidator(w).
		Complete()
}

// ValidateCreate requires a template in the claim's own namespace.
func (*Metal3DataClaim) ValidateCreate(_ context.Context, c *infrav1.Metal3DataClaim) (admission.Warnings, error) {
	errs := validateLocalTemplateRef(c.Spec.Template, c.Namespace, field.NewPath("spec", "template"))
	return nil, toAPIError(groupKind("Metal3DataClaim"), c.Name, errs)
}

// ValidateUpdate keeps the claim's template fixed: its index belongs to that template.
func (*Metal3DataClaim) ValidateUpdate(_ context.Context, oldClaim, newClaim *infrav1.Metal3DataClaim) (admission.Warnings, error) {
	var errs field.ErrorList
	if !sameObjectRef(oldClaim.Spec.Template, newClaim.Spec.Template) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "template"), "is immutable"))
	}
	return nil, toAPIError(groupKind("Metal3DataClaim"), newClaim.Name, errs)
}

// ValidateDelete allows every deletion.
func (*Metal3DataClaim) ValidateDelete(context.Context, *infrav1.Metal3DataClaim) (admission.Warnings, error) {
	return nil, nil
}

// Metal3Data validates Metal3Data.
type Metal3Data struct{}

// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1beta2-metal3data,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=metal3datas,versions=v1beta2,name=validation.metal3data.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// SetupWebhookWithManager registers the webhook with the manager's webhook server.
func (w *Metal3Data) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.Metal3Data{}).
		WithValidator(w).
		Complete()
}

// ValidateCreate requires the claim and template to be named, and the index
// to be non-negative.
func (*Metal3Data) ValidateCreate(_ context.Context, d *infrav1.Metal3Data) (admission.Warnings, error) {
	path := field.NewPath("spec")
	errs := validateLocalTemplateRef(d.Spec.Template, d.Namespace, path.Child("template"))
	if d.Spec.Claim == nil || d.Spec.Claim.Name == "" {
		errs = append(errs, field.Required(path.Child("claim", "name"), "the Metal3DataClaim this data is rendered for is required"))
	}
	if d.Spec.Index != nil && *d.Spec.Index < 0 {
		errs = append(errs, field.Invalid(path.Child("index"), *d.Spec.Index, "must not be negative"))
	}
	return nil, toAPIError(groupKind("Metal3Data"), d.Name, errs)
}

// ValidateUpdate keeps index, claim and template fixed: they identify what
// was rendered and which index is taken.
func (*Metal3Data) ValidateUpdate(_ context.Context, oldData, newData *infrav1.Metal3Data) (admission.Warnings, error) {
	path := field.NewPath("spec")
	errs := validatePoolRecords(oldData, newData, nil)
	// An unset index is index 0, as v1beta1's integer without a value was.
	if ptr.Deref(oldData.Spec.Index, 0) != ptr.Deref(newData.Spec.Index, 0) {
		errs = append(errs, field.Forbidden(path.Child("index"), "is immutable"))
	}
	if !sameObjectRef(oldData.Spec.Claim, newData.Spec.Claim) {
		errs = append(errs, field.Forbidden(path.Child("claim"), "is immutable"))
	}
	if !sameObjectRef(oldData.Spec.Template, newData.Spec.Template) {
		errs = append(errs, field.Forbidden(path.Child("template"), "is immutable"))
	}
	return nil, toAPIError(groupKind("Metal3Data"), newData.Name, errs)
}

// ValidateDelete allows every deletion.
func (*Metal3Data) ValidateDelete(context.Context, *infrav1.Metal3Data) (admission.Warnings, error) {
	return nil, nil
}

// sameObjectRef reports whether a and b name the same object; an unset
// reference is the same as one with empty fields.
func sameObjectRef(a, b *infrav1.Metal3ObjectRef) bool {
	return ptr.Deref(a, infrav1.Metal3ObjectRef{}) == ptr.Deref(b, infrav1.Metal3ObjectRef{})
}

// validateLocalTemplateRef requires a Metal3DataTemplate in the object's own
// namespace: a claim must not allocate from another tenant's template.
func validateLocalTemplateRef(ref *infrav1.Metal3ObjectRef, ownNamespace string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	r := ptr.Deref(ref, infrav1.Metal3ObjectRef{})
	if r.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "name of the Metal3DataTemplate is required"))
	}
	if r.Namespace != "" && ownNamespace != "" && r.Namespace != ownNamespace {
		errs = append(errs, field.Forbidden(path.Child("namespace"), "must be empty or the object's own namespace"))
	}
	return errs
}
