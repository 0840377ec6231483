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

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// defaultAPIServerPort is the port kubeadm's API servers listen on; a
// controlPlaneEndpoint without a port means this one.
const defaultAPIServerPort = 6443

// Metal3Cluster defaults and validates Metal3Clusters.
type Metal3Cluster struct{}

// +kubebuilder:webhook:verbs=create;update,path=/mutate-infrastructure-cluster-x-k8s-io-v1beta2-metal3cluster,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=metal3clusters,versions=v1beta2,name=default.metal3cluster.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1beta2-metal3cluster,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=metal3clusters,versions=v1beta2,name=validation.metal3cluster.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// SetupWebhookWithManager registers the webhook with the manager's webhook server.
func (w *Metal3Cluster) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.Metal3Cluster{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
}

var (
	_ admission.Defaulter[*infrav1.Metal3Cluster] = &Metal3Cluster{}
	_ admission.Validator[*infrav1.Metal3Cluster] = &Metal3Cluster{}
)

// Default fills in the API server port and identityRef's kind. (v1beta1's
// deprecated noCloudProvider becomes cloudProviderEnabled in conversion.)
func (*Metal3Cluster) Default(_ context.Context, c *infrav1.Metal3Cluster) error {
	defaultMetal3ClusterSpec(&c.Spec)
	return nil
}

func defaultMetal3ClusterSpec(spec *infrav1.Metal3ClusterSpec) {
	if spec.ControlPlaneEndpoint.Host != "" && spec.ControlPlaneEndpoint.Port == 0 {
		spec.ControlPlaneEndpoint.Port = defaultAPIServerPort
	}
	defaultIdentityRef(spec.IdentityRef)
}

// ValidateCreate validates a new Metal3Cluster.
func (*Metal3Cluster) ValidateCreate(_ context.Context, c *infrav1.Metal3Cluster) (admission.Warnings, error) {
	errs := validateMetal3ClusterSpec(&c.Spec, field.NewPath("spec"), true)
	return nil, toAPIError(groupKind("Metal3Cluster"), c.Name, errs)
}

// ValidateUpdate validates a change. The control plane endpoint cannot move
// once set (CAPI copies it into the Cluster, where it is immutable), but
// identityRef may change: that is how a pool is re-pointed after a pivot.
func (*Metal3Cluster) ValidateUpdate(_ context.Context, oldCluster, newCluster *infrav1.Metal3Cluster) (admission.Warnings, error) {
	path := field.NewPath("spec")
	errs := validateMetal3ClusterSpec(&newCluster.Spec, path, true)
	oldEndpoint := oldCluster.Spec.ControlPlaneEndpoint
	if !oldEndpoint.IsZero() && oldEndpoint != newCluster.Spec.ControlPlaneEndpoint {
		errs = append(errs, field.Forbidden(path.Child("controlPlaneEndpoint"),
			fmt.Sprintf("is immutable once set (was %s:%d)", oldEndpoint.Host, oldEndpoint.Port)))
	}
	return nil, toAPIError(groupKind("Metal3Cluster"), newCluster.Name, errs)
}

// ValidateDelete allows every deletion; the controller's finalizer keeps the
// object until its machines are gone.
func (*Metal3Cluster) ValidateDelete(context.Context, *infrav1.Metal3Cluster) (admission.Warnings, error) {
	return nil, nil
}

// validateMetal3ClusterSpec checks a spec. requireEndpoint is false for
// templates, whose endpoint may be filled in per cluster by a ClusterClass.
func validateMetal3ClusterSpec(spec *infrav1.Metal3ClusterSpec, path *field.Path, requireEndpoint bool) field.ErrorList {
	var errs field.ErrorList
	endpoint := path.Child("controlPlaneEndpoint")
	switch {
	case spec.ControlPlaneEndpoint.IsZero() && requireEndpoint:
		errs = append(errs, field.Required(endpoint.Child("host"), "the control plane endpoint is required"))
	case !spec.ControlPlaneEndpoint.IsZero():
		if spec.ControlPlaneEndpoint.Host == "" {
			errs = append(errs, field.Required(endpoint.Child("host"), "a port without a host is no endpoint"))
		} else {
			errs = append(errs, validateHostOrIP(spec.ControlPlaneEndpoint.Host, endpoint.Child("host"))...)
		}
		errs = append(errs, validatePort(spec.ControlPlaneEndpoint.Port, endpoint.Child("port"))...)
	}
	names := make(map[string]bool, len(spec.FailureDomains))
	for i, fd := range spec.FailureDomains {
		p := path.Child("failureDomains").Index(i).Child("name")
		// The list is keyed by name: a second entry of a name would leave
		// which attributes the domain has to chance.
		if names[fd.Name] {
			errs = append(errs, field.Duplicate(p, fd.Name))
			continue
		}
		names[fd.Name] = true
		// Failure domain names are matched against a host label value.
		for _, msg := range validation.IsValidLabelValue(fd.Name) {
			errs = append(errs, field.Invalid(p, fd.Name, "must be usable as a label value: "+msg))
		}
	}
	errs = append(errs, validateIdentityRef(spec.IdentityRef, path.Child("identityRef"))...)
	return errs
}
