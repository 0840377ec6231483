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
	"net"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/util/topology"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// maxContextNameLength bounds identityRef.context; kubeconfig context names
// are free-form but a kilobyte of name is a mistake, not a context.
const maxContextNameLength = 253

// identityKinds are the kinds an identityRef may name, as the CRD's enum
// lists them.
var identityKinds = []infrav1.IdentityKind{infrav1.IdentityKindSecret, infrav1.IdentityKindMetal3ClusterIdentity}

// validateIdentityRef checks that ref can name a Secret or a
// Metal3ClusterIdentity: what it names is looked up at reconcile time and
// reported through the IdentityReady condition.
func validateIdentityRef(ref *infrav1.IdentityRef, path *field.Path) field.ErrorList {
	if ref == nil {
		return nil
	}
	var errs field.ErrorList
	kind := ref.KindOrDefault()
	what := "kubeconfig Secret"
	switch kind {
	case infrav1.IdentityKindSecret:
	case infrav1.IdentityKindMetal3ClusterIdentity:
		what = "Metal3ClusterIdentity"
	default:
		errs = append(errs, field.NotSupported(path.Child("kind"), kind, identityKinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "name of the "+what+" is required"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Name) {
			errs = append(errs, field.Invalid(path.Child("name"), ref.Name, "must be a valid "+what+" name: "+msg))
		}
	}
	if len(ref.Context) > maxContextNameLength {
		errs = append(errs, field.TooLong(path.Child("context"), ref.Context, maxContextNameLength))
	}
	if kind == infrav1.IdentityKindMetal3ClusterIdentity && ref.Context != "" {
		errs = append(errs, field.Forbidden(path.Child("context"),
			"must be empty when kind is Metal3ClusterIdentity: the identity's spec.secretRef.context chooses the context"))
	}
	return errs
}

// defaultIdentityRef writes the kind an identityRef without one has always
// meant, Secret, so that readers of the object need not know the default.
func defaultIdentityRef(ref *infrav1.IdentityRef) {
	if ref != nil && ref.Kind == "" {
		ref.Kind = infrav1.IdentityKindSecret
	}
}

// sameIdentityRef reports whether a and b name the same credentials. An
// unset kind and Secret are the same: an object stored before kind existed
// must not count as changed when the defaulted kind is written.
func sameIdentityRef(a, b *infrav1.IdentityRef) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.KindOrDefault() == b.KindOrDefault() && a.Name == b.Name && a.Context == b.Context
}

// validatePoolRecords keeps the annotations by which the pool knows an
// object as the provider wrote them: the consumer ID (hosts, claims and
// Secrets in the pool carry it) and, for a machine, records, the host or
// claim it is associated with. They are on the tenant's own object, so the
// tenant could otherwise change which pool objects its object stands for:
// take another consumer's host by its consumer ID, or point its record at a
// host that does not exist so that deleting the machine leaves its real host
// provisioned. The provider finds hosts by their consumerRef anyway; this
// keeps the records honest too.
//
// Once set, none of them may change or go, but in the one shape clusterctl
// move writes on a source object it is about to delete: all annotations
// replaced by its delete-for-move annotation (the copy in the target keeps
// the records). An object carrying delete-for-move is on its way out: its
// records may not come back. A consumer ID may only be first set to the
// object's own UID, as the provider does. A record in intents is not one
// yet (a machine's host before its claim is confirmed): it may change or go.
func validatePoolRecords(oldObj, newObj metav1.Object, intents map[string]bool, records ...string) field.ErrorList {
	oldAnnotations, newAnnotations := oldObj.GetAnnotations(), newObj.GetAnnotations()
	if isMoveDeletion(newAnnotations) {
		return nil
	}
	path := field.NewPath("metadata", "annotations")
	_, leaving := oldAnnotations[clusterctlv1.DeleteForMoveAnnotation]
	var errs field.ErrorList
	for _, key := range append([]string{infrav1.ConsumerIDAnnotation}, records...) {
		before, after := oldAnnotations[key], newAnnotations[key]
		switch {
		case before == after:
		case before != "" && intents[key] && !leaving:
		case before != "":
			errs = append(errs, field.Forbidden(path.Key(key), "cannot be changed or removed once set: the pool knows the object by it"))
		case leaving:
			errs = append(errs, field.Forbidden(path.Key(key),
				fmt.Sprintf("cannot be set on an object clusterctl move is deleting (%s)", clusterctlv1.DeleteForMoveAnnotation)))
		case key == infrav1.ConsumerIDAnnotation && after != string(newObj.GetUID()):
			errs = append(errs, field.Forbidden(path.Key(key), "can only be set to the object's own UID"))
		}
	}
	return errs
}

// isMoveDeletion reports whether annotations are exactly what clusterctl
// move leaves on a source object before deleting it.
func isMoveDeletion(annotations map[string]string) bool {
	_, ok := annotations[clusterctlv1.DeleteForMoveAnnotation]
	return ok && len(annotations) == 1
}

// validateLocalSecretName checks a Secret reference that the provider reads
// with its own credentials. Such a Secret must be in the referring object's
// namespace: otherwise a tenant could make the provider copy another
// namespace's Secret next to a host it controls.
func validateLocalSecretName(name, namespace, ownNamespace string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(path.Child("name"), "name of the Secret is required"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(path.Child("name"), name, "must be a valid Secret name: "+msg))
		}
	}
	if namespace != "" && ownNamespace != "" && namespace != ownNamespace {
		errs = append(errs, field.Forbidden(path.Child("namespace"),
			fmt.Sprintf("must be empty or %q: Secrets are only read from the object's own namespace", ownNamespace)))
	}
	return errs
}

// validateHostOrIP accepts an IP address or a DNS name.
func validateHostOrIP(host string, path *field.Path) field.ErrorList {
	if net.ParseIP(host) != nil {
		return nil
	}
	if msgs := validation.IsDNS1123Subdomain(strings.ToLower(host)); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(path, host, "must be an IP address or a DNS name")}
	}
	return nil
}

// validatePort accepts a TCP port number.
func validatePort(port int32, path *field.Path) field.ErrorList {
	if port < 1 || port > 65535 {
		return field.ErrorList{field.Invalid(path, port, "must be a port between 1 and 65535")}
	}
	return nil
}

// toAPIError turns field errors into the Invalid error the API server returns
// to the client, listing every field at once.
func toAPIError(gk schema.GroupKind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(gk, name, errs)
}

// isTopologyDryRun reports whether the request is a server-side-apply dry run
// by CAPI's topology controller, which must be allowed to compute changes to
// templates that are otherwise immutable (CAPI InfraMachineTemplate contract).
func isTopologyDryRun(ctx context.Context, obj client.Object) bool {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return false
	}
	return topology.IsDryRunRequest(req, obj)
}

func groupKind(kind string) schema.GroupKind {
	return schema.GroupKind{Group: infrav1.GroupVersion.Group, Kind: kind}
}
