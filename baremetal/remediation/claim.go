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

package remediation

import (
	"context"
	"fmt"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// In HostClaim mode the remediation acts on the machine's HostClaim: the
// pool's binder mirrors the claim's reboot annotations on the host (BMO
// powers it off while one is there) and reports its power in the claim's
// status.poweredOn.

// findClaim returns the HostClaim of m3m as the remediation's host.
func findClaim(ctx context.Context, access hostaccess.HostAccess, m3m *infrav1.Metal3Machine) (Host, error) {
	ref := m3m.Annotations[infrav1.HostClaimAnnotation]
	namespace, name, ok := strings.Cut(ref, "/")
	if !ok {
		return nil, &TargetError{Reason: infrav1.HostNotFoundReason,
			Message: fmt.Sprintf("Metal3Machine %s/%s: annotation %s=%q is not namespace/name", m3m.Namespace, m3m.Name, infrav1.HostClaimAnnotation, ref)}
	}
	claim := &bmov1alpha1.HostClaim{}
	if err := access.Client().Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &TargetError{Reason: infrav1.HostNotFoundReason,
				Message: fmt.Sprintf("HostClaim %s of Metal3Machine %s/%s is not found through identity %s", ref, m3m.Namespace, m3m.Name, access.Key())}
		}
		return nil, fmt.Errorf("get HostClaim %s through identity %s: %w", ref, access.Key(), err)
	}
	if !claimedBy(claim, m3m) {
		return nil, &TargetError{Reason: infrav1.HostNotFoundReason,
			Message: fmt.Sprintf("HostClaim %s does not belong to Metal3Machine %s/%s", ref, m3m.Namespace, m3m.Name)}
	}
	return &claimHost{client: access.Client(), claim: claim, rebootAnnotation: RebootAnnotation(m3m)}, nil
}

func claimedBy(claim *bmov1alpha1.HostClaim, m3m *infrav1.Metal3Machine) bool {
	ref := claim.Spec.ConsumerRef
	return ref != nil && ref.Kind == "Metal3Machine" && ref.Name == m3m.Name && ref.Namespace == m3m.Namespace &&
		ref.UID == infrav1.ConsumerID(m3m)
}

// claimHost is a machine's HostClaim seen as the host to remediate.
type claimHost struct {
	client           client.Client
	claim            *bmov1alpha1.HostClaim
	rebootAnnotation string
}

var _ Host = &claimHost{}

func (h *claimHost) String() string  { return "claim " + h.claim.Namespace + "/" + h.claim.Name }
func (h *claimHost) UID() types.UID  { return h.claim.UID }
func (h *claimHost) PoweredOn() bool { return h.claim.Status.PoweredOn }

func (h *claimHost) RebootRequested() bool {
	_, ok := h.claim.Annotations[h.rebootAnnotation]
	return ok
}

func (h *claimHost) RequestReboot(ctx context.Context) error {
	return h.annotate(ctx, h.rebootAnnotation, rebootValue, true)
}

func (h *claimHost) ReleaseReboot(ctx context.Context) error {
	return h.annotate(ctx, h.rebootAnnotation, "", false)
}

// MarkUnhealthy marks the claim, where the tenant sees it. The binder
// carries the mark to the host, which keeps it when the machine's deletion
// releases the claim: the pool binds it to no claim until its admin
// clears it (hostclaim.UnhealthyAnnotation).
func (h *claimHost) MarkUnhealthy(ctx context.Context) error {
	return h.annotate(ctx, pool.UnhealthyAnnotation, "", true)
}

// annotate sets (or removes) annotation on the claim. Only the provider
// writes a claim's metadata, so a plain merge patch is enough.
func (h *claimHost) annotate(ctx context.Context, annotation, value string, set bool) error {
	before := h.claim.DeepCopy()
	if !setAnnotation(h.claim, annotation, value, set) {
		return nil
	}
	if err := h.client.Patch(ctx, h.claim, client.MergeFrom(before)); err != nil {
		h.claim = before
		return fmt.Errorf("annotate %s on %s: %w", annotation, h, err)
	}
	return nil
}
