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
	"errors"
	"fmt"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// In HostClaim mode the remediation acts on the machine's HostClaim: the
// pool's binder mirrors the claim's reboot annotations on the host (BMO
// powers it off while one is there) and reports its power in the claim's
// status.poweredOn.

// findClaim returns the HostClaim of m3m as the remediation's host, found
// as the machine's binding finds it (hostbinding.ConsumedClaim).
func findClaim(ctx context.Context, access hostaccess.HostAccess, m3m *infrav1.Metal3Machine) (Host, error) {
	claim, err := hostbinding.ConsumedClaim(ctx, access, m3m, access.Client())
	switch {
	case errors.Is(err, hostbinding.ErrHostNotFound) || err == nil && claim == nil:
		return nil, &TargetError{Reason: infrav1.HostNotFoundReason,
			Message: fmt.Sprintf("No HostClaim in namespace %s of identity %s names Metal3Machine %s/%s as its consumer (the machine records claim %s)",
				access.Namespace(), access.Key(), m3m.Namespace, m3m.Name, m3m.Annotations[infrav1.HostClaimAnnotation])}
	case err != nil:
		return nil, fmt.Errorf("find the HostClaim of Metal3Machine %s/%s through identity %s: %w", m3m.Namespace, m3m.Name, access.Key(), err)
	}
	return &claimHost{client: access.Client(), claim: claim, rebootAnnotation: RebootAnnotation(m3m)}, nil
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

// MarkUnhealthy marks the claim, where the tenant sees it, under the name
// the host gets. The binder carries the mark to the host, which keeps it
// when the machine's deletion releases the claim: the pool binds it to no
// claim until its admin clears it (hostclaim.UnhealthyAnnotation).
func (h *claimHost) MarkUnhealthy(ctx context.Context) error {
	return h.annotate(ctx, pool.UnhealthyAnnotation, pool.UnhealthyValue, true)
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
