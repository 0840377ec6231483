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

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Metal3ClusterTemplate defaults and validates Metal3ClusterTemplates.
type Metal3ClusterTemplate struct{}

// +kubebuilder:webhook:verbs=create;update,path=/mutate-infrastructure-cluster-x-k8s-io-v1beta2-metal3clustertemplate,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=metal3clustertemplates,versions=v1beta2,name=default.metal3clustertemplate.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1beta2-metal3clustertemplate,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=metal3clustertemplates,versions=v1beta2,name=validation.metal3clustertemplate.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// SetupWebhookWithManager registers the webhook with the manager's webhook server.
func (w *Metal3ClusterTemplate) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.Metal3ClusterTemplate{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
}

// Default applies the Metal3Cluster defaults to the template's spec.
func (*Metal3ClusterTemplate) Default(_ context.Context, t *infrav1.Metal3ClusterTemplate) error {
	defaultMetal3ClusterSpec(&t.Spec.Template.Spec)
	return nil
}

// ValidateCreate validates a new template; its endpoint may be left to the ClusterClass.
func (*Metal3ClusterTemplate) ValidateCreate(_ context.Context, t *infrav1.Metal3ClusterTemplate) (admission.Warnings, error) {
	errs := validateMetal3ClusterSpec(&t.Spec.Template.Spec, field.NewPath("spec", "template", "spec"), false)
	return nil, toAPIError(groupKind("Metal3ClusterTemplate"), t.Name, errs)
}

// ValidateUpdate keeps the template's spec immutable, as CAPI expects of
// ClusterClass templates: a change is a new template, rolled out by the topology.
func (*Metal3ClusterTemplate) ValidateUpdate(ctx context.Context, oldTemplate, newTemplate *infrav1.Metal3ClusterTemplate) (admission.Warnings, error) {
	path := field.NewPath("spec", "template", "spec")
	errs := validateMetal3ClusterSpec(&newTemplate.Spec.Template.Spec, path, false)
	oldSpec, newSpec := oldTemplate.Spec.Template.Spec.DeepCopy(), newTemplate.Spec.Template.Spec.DeepCopy()
	// A template stored before identityRef had a kind means a Secret.
	defaultIdentityRef(oldSpec.IdentityRef)
	defaultIdentityRef(newSpec.IdentityRef)
	if !isTopologyDryRun(ctx, newTemplate) && !equality.Semantic.DeepEqual(oldSpec, newSpec) {
		errs = append(errs, field.Forbidden(path, "Metal3ClusterTemplate spec.template.spec is immutable; create a new template"))
	}
	return nil, toAPIError(groupKind("Metal3ClusterTemplate"), newTemplate.Name, errs)
}

// ValidateDelete allows every deletion.
func (*Metal3ClusterTemplate) ValidateDelete(context.Context, *infrav1.Metal3ClusterTemplate) (admission.Warnings, error) {
	return nil, nil
}
