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
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Image formats and checksum algorithms, as BareMetalHost understands them.
const (
	liveISOFormat  = "live-iso"
	checksumMD5    = "md5"
	checksumSHA256 = "sha256"
	checksumSHA512 = "sha512"
)

// hexDigestLengths maps a checksum algorithm to the length of its hex digest.
var hexDigestLengths = map[string]int{checksumMD5: 32, checksumSHA256: 64, checksumSHA512: 128}

// Metal3Machine defaults and validates Metal3Machines.
type Metal3Machine struct{}

// +kubebuilder:webhook:verbs=create;update,path=/mutate-infrastructure-cluster-x-k8s-io-v1beta2-metal3machine,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=metal3machines,versions=v1beta2,name=default.metal3machine.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1beta2-metal3machine,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=metal3machines,versions=v1beta2,name=validation.metal3machine.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// SetupWebhookWithManager registers the webhook with the manager's webhook server.
func (w *Metal3Machine) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.Metal3Machine{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
}

// Default fills in what can be derived from what the user wrote.
func (*Metal3Machine) Default(_ context.Context, m *infrav1.Metal3Machine) error {
	defaultMetal3MachineSpec(&m.Spec)
	return nil
}

// defaultMetal3MachineSpec derives image.checksumType from a literal hex
// digest (its length says which algorithm made it), so the host does not have
// to guess, and identityRef's kind.
func defaultMetal3MachineSpec(spec *infrav1.Metal3MachineSpec) {
	// Upstream CAPM3 matches operators case-insensitively ("In" as "in"):
	// manifests written for it keep working.
	if spec.HostSelector != nil {
		for i := range spec.HostSelector.MatchExpressions {
			req := &spec.HostSelector.MatchExpressions[i]
			req.Operator = selection.Operator(strings.ToLower(string(req.Operator)))
		}
	}
	image := &spec.Image
	if checksum := ptr.Deref(image.Checksum, ""); image.ChecksumType == "" && isHex(checksum) {
		for algorithm, length := range hexDigestLengths {
			if len(checksum) == length {
				image.ChecksumType = algorithm
			}
		}
	}
	defaultIdentityRef(spec.IdentityRef)
}

// ValidateCreate validates a new Metal3Machine.
func (*Metal3Machine) ValidateCreate(_ context.Context, m *infrav1.Metal3Machine) (admission.Warnings, error) {
	errs := validateMetal3MachineSpec(&m.Spec, m.Namespace, field.NewPath("spec"))
	return nil, toAPIError(groupKind("Metal3Machine"), m.Name, errs)
}

// ValidateUpdate validates a change. The records of the machine's consumer
// ID and of its host or claim never change once set (validatePoolRecords),
// but for a host annotation the old object does not confirm yet
// (HostRecordConfirmed): the provider writes it before the claim and points
// it at another host when that one went to someone else. It is only a
// preference among the hosts the machine may take, whoever writes it.
// Once a host is associated, identityRef is frozen, its kind as much as its name and context (an unset kind and
// Secret are the same): a different identity could not find the host again
// (invariant: a machine never silently loses or changes its host). The
// Metal3Cluster's identityRef stays mutable, which is how machines follow a
// moved pool.
func (*Metal3Machine) ValidateUpdate(_ context.Context, oldMachine, newMachine *infrav1.Metal3Machine) (admission.Warnings, error) {
	path := field.NewPath("spec")
	errs := validateMetal3MachineSpec(&newMachine.Spec, newMachine.Namespace, path)
	intents := map[string]bool{infrav1.HostAnnotation: !infrav1.HostRecordConfirmed(oldMachine)}
	errs = append(errs, validatePoolRecords(oldMachine, newMachine, intents, infrav1.HostAnnotation, infrav1.HostClaimAnnotation)...)
	host := oldMachine.Annotations[infrav1.HostAnnotation]
	if claim := oldMachine.Annotations[infrav1.HostClaimAnnotation]; host == "" && claim != "" {
		host = "claim " + claim
	}
	if host != "" && !sameIdentityRef(oldMachine.Spec.IdentityRef, newMachine.Spec.IdentityRef) {
		errs = append(errs, field.Forbidden(path.Child("identityRef"),
			fmt.Sprintf("cannot change while the machine is associated with host %s", host)))
	}
	if host != "" && oldMachine.Spec.HostMode != newMachine.Spec.HostMode {
		errs = append(errs, field.Forbidden(path.Child("hostMode"),
			fmt.Sprintf("cannot change while the machine is associated with host %s", host)))
	}
	return nil, toAPIError(groupKind("Metal3Machine"), newMachine.Name, errs)
}

// ValidateDelete allows every deletion; the finalizer takes care of the host.
func (*Metal3Machine) ValidateDelete(context.Context, *infrav1.Metal3Machine) (admission.Warnings, error) {
	return nil, nil
}

// validateMetal3MachineSpec checks a Metal3Machine spec, standalone or in a template.
func validateMetal3MachineSpec(spec *infrav1.Metal3MachineSpec, namespace string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	hasImage := !spec.Image.IsZero()
	// customDeploy is a value: it is set when it names a method.
	hasCustomDeploy := spec.CustomDeploy.Method != ""
	switch {
	case hasImage && hasCustomDeploy:
		errs = append(errs, field.Forbidden(path.Child("customDeploy"), "image and customDeploy are mutually exclusive; set one"))
	case !hasImage && !hasCustomDeploy:
		errs = append(errs, field.Required(path.Child("image"), "either image or customDeploy is required"))
	}
	if hasImage {
		errs = append(errs, validateImage(&spec.Image, path.Child("image"))...)
	}
	if hasCustomDeploy && strings.TrimSpace(spec.CustomDeploy.Method) == "" {
		errs = append(errs, field.Required(path.Child("customDeploy", "method"), "the custom deploy method is required"))
	}
	if spec.UserData != nil {
		errs = append(errs, validateLocalSecretName(spec.UserData.Name, spec.UserData.Namespace, namespace, path.Child("userData"))...)
	}
	if spec.MetaData != nil {
		errs = append(errs, validateLocalSecretName(spec.MetaData.Name, spec.MetaData.Namespace, namespace, path.Child("metaData"))...)
	}
	if spec.NetworkData != nil {
		errs = append(errs, validateLocalSecretName(spec.NetworkData.Name, spec.NetworkData.Namespace, namespace, path.Child("networkData"))...)
	}
	if ref := spec.DataTemplate; ref != nil {
		p := path.Child("dataTemplate")
		if ref.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "name of the Metal3DataTemplate is required"))
		}
		if ref.Namespace != "" && namespace != "" && ref.Namespace != namespace {
			errs = append(errs, field.Forbidden(p.Child("namespace"),
				fmt.Sprintf("must be empty or %q: the data template must be in the machine's namespace", namespace)))
		}
	}
	if spec.DataTemplate != nil && (spec.MetaData != nil || spec.NetworkData != nil) {
		// Upstream renders the template and ignores the plain Secrets; say so
		// instead of letting one silently win.
		errs = append(errs, field.Forbidden(path.Child("dataTemplate"),
			"dataTemplate and metaData/networkData are mutually exclusive"))
	}
	if spec.HostSelector != nil {
		errs = append(errs, validateHostSelector(spec.HostSelector, path.Child("hostSelector"))...)
	}
	if spec.FailureDomain != "" {
		for _, msg := range validation.IsValidLabelValue(spec.FailureDomain) {
			errs = append(errs, field.Invalid(path.Child("failureDomain"), spec.FailureDomain, msg))
		}
	}
	errs = append(errs, validateIdentityRef(spec.IdentityRef, path.Child("identityRef"))...)
	return errs
}

// validateImage checks that the host will be able to download and verify the image.
func validateImage(image *infrav1.Image, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if image.URL == "" {
		errs = append(errs, field.Required(path.Child("url"), "the image URL is required"))
	} else if u, err := url.Parse(image.URL); err != nil || u.Scheme == "" || u.Host == "" && u.Scheme != "file" {
		errs = append(errs, field.Invalid(path.Child("url"), image.URL, "must be an absolute URL such as http://host/image.qcow2"))
	}
	// The Bare Metal Operator verifies every image against a checksum but
	// live ISOs (booted, not written) and OCI images (pulled by digest or
	// tag from a registry, which verifies them itself).
	liveISO := image.DiskFormat == liveISOFormat
	oci := strings.HasPrefix(strings.ToLower(image.URL), "oci://")
	// An unset checksum and an empty one both mean none.
	checksum := ptr.Deref(image.Checksum, "")
	switch {
	case checksum == "" && !liveISO && !oci:
		errs = append(errs, field.Required(path.Child("checksum"), "a checksum is required unless format is live-iso or the URL is oci://"))
	case checksum == "" && image.ChecksumType != "":
		errs = append(errs, field.Required(path.Child("checksum"), "checksumType is set but checksum is empty"))
	case checksum != "" && image.ChecksumType != "" && isHex(checksum):
		if want, ok := hexDigestLengths[image.ChecksumType]; ok && len(checksum) != want {
			errs = append(errs, field.Invalid(path.Child("checksum"), checksum,
				fmt.Sprintf("a %s digest has %d hex digits, this one has %d", image.ChecksumType, want, len(checksum))))
		}
	case checksum != "" && !isHex(checksum):
		if u, err := url.Parse(checksum); err != nil || u.Scheme == "" {
			errs = append(errs, field.Invalid(path.Child("checksum"), checksum,
				"must be a hex digest or the URL of a checksum file"))
		}
	}
	return errs
}

// validateHostSelector checks the requirements are ones labels.Selector can evaluate.
func validateHostSelector(selector *infrav1.HostSelector, path *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(selector.MatchLabels, path.Child("matchLabels"))
	for i, req := range selector.MatchExpressions {
		p := path.Child("matchExpressions").Index(i)
		for _, msg := range validation.IsQualifiedName(req.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), req.Key, msg))
		}
		switch req.Operator {
		case selection.In, selection.NotIn, selection.Equals, selection.DoubleEquals, selection.NotEquals:
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(p.Child("values"), fmt.Sprintf("operator %q needs at least one value", req.Operator)))
			}
			if (req.Operator == selection.Equals || req.Operator == selection.DoubleEquals || req.Operator == selection.NotEquals) && len(req.Values) > 1 {
				errs = append(errs, field.Invalid(p.Child("values"), req.Values, fmt.Sprintf("operator %q takes exactly one value", req.Operator)))
			}
		case selection.Exists, selection.DoesNotExist:
			if len(req.Values) != 0 {
				errs = append(errs, field.Invalid(p.Child("values"), req.Values, fmt.Sprintf("operator %q takes no values", req.Operator)))
			}
		case selection.GreaterThan, selection.LessThan:
			if len(req.Values) != 1 {
				errs = append(errs, field.Invalid(p.Child("values"), req.Values, fmt.Sprintf("operator %q takes exactly one integer", req.Operator)))
			} else if _, err := strconv.ParseInt(req.Values[0], 10, 64); err != nil {
				errs = append(errs, field.Invalid(p.Child("values").Index(0), req.Values[0], "must be an integer"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), string(req.Operator),
				[]string{"in", "notin", "exists", "!", "=", "==", "!=", "gt", "lt"}))
		}
		for j, v := range req.Values {
			if req.Operator == selection.GreaterThan || req.Operator == selection.LessThan {
				continue
			}
			for _, msg := range validation.IsValidLabelValue(v) {
				errs = append(errs, field.Invalid(p.Child("values").Index(j), v, msg))
			}
		}
	}
	return errs
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && s != ""
}
