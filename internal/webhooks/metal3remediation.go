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
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Metal3Remediation defaults and validates Metal3Remediations.
type Metal3Remediation struct{}

// +kubebuilder:webhook:verbs=create;update,path=/mutate-infrastructure-cluster-x-k8s-io-v1beta2-metal3remediation,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=metal3remediations,versions=v1beta2,name=default.metal3remediation.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1beta2-metal3remediation,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=metal3remediations,versions=v1beta2,name=validation.metal3remediation.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// SetupWebhookWithManager registers the webhook with the manager's webhook server.
func (w *Metal3Remediation) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.Metal3Remediation{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
}

// Default fills in a reboot strategy with one try and a ten-minute timeout.
func (*Metal3Remediation) Default(_ context.Context, r *infrav1.Metal3Remediation) error {
	r.Spec.Strategy = defaultRemediationStrategy(r.Spec.Strategy)
	return nil
}

func defaultRemediationStrategy(s *infrav1.RemediationStrategy) *infrav1.RemediationStrategy {
	if s == nil {
		s = &infrav1.RemediationStrategy{}
	}
	if s.Type == "" {
		s.Type = infrav1.RebootRemediationStrategy
	}
	if s.RetryLimit == 0 {
		s.RetryLimit = infrav1.DefaultRemediationRetryLimit
	}
	if s.TimeoutSeconds == 0 {
		s.TimeoutSeconds = infrav1.DefaultRemediationTimeoutSeconds
	}
	return s
}

// ValidateCreate validates a new remediation.
func (*Metal3Remediation) ValidateCreate(_ context.Context, r *infrav1.Metal3Remediation) (admission.Warnings, error) {
	errs := validateRemediationStrategy(r.Spec.Strategy, field.NewPath("spec", "strategy"))
	return nil, toAPIError(groupKind("Metal3Remediation"), r.Name, errs)
}

// ValidateUpdate validates a change.
func (*Metal3Remediation) ValidateUpdate(_ context.Context, _, r *infrav1.Metal3Remediation) (admission.Warnings, error) {
	errs := validateRemediationStrategy(r.Spec.Strategy, field.NewPath("spec", "strategy"))
	return nil, toAPIError(groupKind("Metal3Remediation"), r.Name, errs)
}

// ValidateDelete allows every deletion.
func (*Metal3Remediation) ValidateDelete(context.Context, *infrav1.Metal3Remediation) (admission.Warnings, error) {
	return nil, nil
}

func validateRemediationStrategy(s *infrav1.RemediationStrategy, path *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if s.Type != "" && s.Type != infrav1.RebootRemediationStrategy {
		errs = append(errs, field.NotSupported(path.Child("type"), string(s.Type), []string{string(infrav1.RebootRemediationStrategy)}))
	}
	// At least one try, and no upper bound: upstream CAPM3 caps it in neither
	// version, so a template written for it is accepted here. 0 is unset:
	// the default applies.
	if s.RetryLimit < 0 {
		errs = append(errs, field.Invalid(path.Child("retryLimit"), s.RetryLimit,
			fmt.Sprintf("must be at least 1 (0 means the default, %d)", infrav1.DefaultRemediationRetryLimit)))
	}
	// 0 is unset: the default applies.
	if s.TimeoutSeconds != 0 && s.TimeoutSeconds < infrav1.MinRemediationTimeoutSeconds {
		errs = append(errs, field.Invalid(path.Child("timeoutSeconds"), s.TimeoutSeconds,
			fmt.Sprintf("must be at least %d seconds: a host needs minutes to power-cycle and boot", infrav1.MinRemediationTimeoutSeconds)))
	}
	return errs
}

// Metal3RemediationTemplate defaults and validates Metal3RemediationTemplates.
type Metal3RemediationTemplate struct{}

// +kubebuilder:webhook:verbs=create;update,path=/mutate-infrastructure-cluster-x-k8s-io-v1beta2-metal3remediationtemplate,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=metal3remediationtemplates,versions=v1beta2,name=default.metal3remediationtemplate.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1beta2-metal3remediationtemplate,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=metal3remediationtemplates,versions=v1beta2,name=validation.metal3remediationtemplate.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// SetupWebhookWithManager registers the webhook with the manager's webhook server.
func (w *Metal3RemediationTemplate) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.Metal3RemediationTemplate{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
}

// Default applies the remediation defaults to the template.
func (*Metal3RemediationTemplate) Default(_ context.Context, t *infrav1.Metal3RemediationTemplate) error {
	t.Spec.Template.Spec.Strategy = defaultRemediationStrategy(t.Spec.Template.Spec.Strategy)
	return nil
}

// ValidateCreate validates a new template.
func (*Metal3RemediationTemplate) ValidateCreate(_ context.Context, t *infrav1.Metal3RemediationTemplate) (admission.Warnings, error) {
	errs := validateRemediationStrategy(t.Spec.Template.Spec.Strategy, field.NewPath("spec", "template", "spec", "strategy"))
	return nil, toAPIError(groupKind("Metal3RemediationTemplate"), t.Name, errs)
}

// ValidateUpdate validates a change.
func (*Metal3RemediationTemplate) ValidateUpdate(_ context.Context, _, t *infrav1.Metal3RemediationTemplate) (admission.Warnings, error) {
	errs := validateRemediationStrategy(t.Spec.Template.Spec.Strategy, field.NewPath("spec", "template", "spec", "strategy"))
	return nil, toAPIError(groupKind("Metal3RemediationTemplate"), t.Name, errs)
}

// ValidateDelete allows every deletion.
func (*Metal3RemediationTemplate) ValidateDelete(context.Context, *infrav1.Metal3RemediationTemplate) (admission.Warnings, error) {
	return nil, nil
}
