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

// Metal3MachineTemplate defaults and validates Metal3MachineTemplates.
type Metal3MachineTemplate struct{}

// +kubebuilder:webhook:verbs=create;update,path=/mutate-infrastructure-cluster-x-k8s-io-v1beta2-metal3machinetemplate,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=metal3machinetemplates,versions=v1beta2,name=default.metal3machinetemplate.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1beta2-metal3machinetemplate,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=metal3machinetemplates,versions=v1beta2,name=validation.metal3machinetemplate.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// SetupWebhookWithManager registers the webhook with the manager's webhook server.
func (w *Metal3MachineTemplate) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.Metal3MachineTemplate{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
}

// Default applies the Metal3Machine defaults to the template's spec, so
// machines stamped from it match the template exactly.
func (*Metal3MachineTemplate) Default(_ context.Context, t *infrav1.Metal3MachineTemplate) error {
	defaultMetal3MachineSpec(&t.Spec.Template.Spec)
	return nil
}

// ValidateCreate validates a new template like a Metal3Machine.
func (*Metal3MachineTemplate) ValidateCreate(_ context.Context, t *infrav1.Metal3MachineTemplate) (admission.Warnings, error) {
	errs := validateMetal3MachineSpec(&t.Spec.Template.Spec, t.Namespace, field.NewPath("spec", "template", "spec"))
	return nil, toAPIError(groupKind("Metal3MachineTemplate"), t.Name, errs)
}

// ValidateUpdate keeps spec.template.spec immutable, as CAPI expects of
// InfraMachineTemplates (a change is a new template and a rollout), except
// for the topology controller's server-side-apply dry runs. nodeReuse and
// automatedCleaningMode may change: neither needs a new host, and the
// controller propagates automatedCleaningMode to the existing machines.
func (*Metal3MachineTemplate) ValidateUpdate(ctx context.Context, oldTemplate, newTemplate *infrav1.Metal3MachineTemplate) (admission.Warnings, error) {
	path := field.NewPath("spec", "template", "spec")
	errs := validateMetal3MachineSpec(&newTemplate.Spec.Template.Spec, newTemplate.Namespace, path)
	oldSpec, newSpec := oldTemplate.Spec.Template.Spec.DeepCopy(), newTemplate.Spec.Template.Spec.DeepCopy()
	oldSpec.AutomatedCleaningMode, newSpec.AutomatedCleaningMode = "", ""
	// A template stored before identityRef had a kind means a Secret.
	defaultIdentityRef(oldSpec.IdentityRef)
	defaultIdentityRef(newSpec.IdentityRef)
	if !isTopologyDryRun(ctx, newTemplate) && !equality.Semantic.DeepEqual(oldSpec, newSpec) {
		errs = append(errs, field.Forbidden(path, "Metal3MachineTemplate spec.template.spec is immutable except automatedCleaningMode; create a new template and roll out"))
	}
	return nil, toAPIError(groupKind("Metal3MachineTemplate"), newTemplate.Name, errs)
}

// ValidateDelete allows every deletion.
func (*Metal3MachineTemplate) ValidateDelete(context.Context, *infrav1.Metal3MachineTemplate) (admission.Warnings, error) {
	return nil, nil
}
