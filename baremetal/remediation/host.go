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
	"slices"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// rebootValue asks the Bare Metal Operator for a hard power-off: the
// machine is unhealthy, a soft shutdown may never finish.
const rebootValue = `{"mode":"hard"}`

// RebootAnnotation is the reboot annotation the remediation of m3m sets on
// its host. Its key is the machine's consumer ID: stable across clusterctl
// move and unique across the management clusters sharing a pool, so a
// remediation never removes another's, and finds its own after a move.
func RebootAnnotation(m3m *infrav1.Metal3Machine) string {
	return infrav1.RemediationRebootAnnotationPrefix + string(infrav1.ConsumerID(m3m))
}

// FindHost returns the host of m3m through access: the BareMetalHost (or
// HostClaim) that names m3m as its consumer, found as the machine's binding
// finds it (hostbinding.ConsumedHost). A missing host is a *TargetError.
func FindHost(ctx context.Context, access hostaccess.HostAccess, m3m *infrav1.Metal3Machine) (Host, error) {
	if m3m.Annotations[infrav1.HostClaimAnnotation] != "" {
		return findClaim(ctx, access, m3m)
	}
	ref := m3m.Annotations[infrav1.HostAnnotation]
	if ref == "" {
		return nil, &TargetError{Reason: infrav1.RemediationHostNotAssociatedReason,
			Message: fmt.Sprintf("Metal3Machine %s/%s has no host", m3m.Namespace, m3m.Name)}
	}
	host, err := hostbinding.ConsumedHost(ctx, access, m3m, access.Client())
	switch {
	case errors.Is(err, hostbinding.ErrHostNotFound) || err == nil && host == nil:
		// The pool's record, the host's consumerRef, says which is the
		// machine's, wherever the hosts moved (docs/move.md).
		return nil, &TargetError{Reason: infrav1.HostNotFoundReason,
			Message: fmt.Sprintf("No host in namespace %s of identity %s names Metal3Machine %s/%s as its consumer (the machine records host %s)",
				access.Namespace(), access.Key(), m3m.Namespace, m3m.Name, ref)}
	case err != nil:
		return nil, fmt.Errorf("find the host of Metal3Machine %s/%s through identity %s: %w", m3m.Namespace, m3m.Name, access.Key(), err)
	}
	return &bmhHost{client: access.Client(), reader: access.Reader(), host: host, m3m: m3m, rebootAnnotation: RebootAnnotation(m3m)}, nil
}

// bmhHost is a BareMetalHost read through the machine's identity. Every
// write is guarded by the resourceVersion read, so it never lands on a host
// whose consumer changed since it was checked.
type bmhHost struct {
	client client.Client
	// reader reads the host live after a conflict.
	reader           client.Reader
	host             *bmov1alpha1.BareMetalHost
	m3m              *infrav1.Metal3Machine
	rebootAnnotation string
}

var _ Host = &bmhHost{}

func (h *bmhHost) String() string  { return h.host.Namespace + "/" + h.host.Name }
func (h *bmhHost) UID() types.UID  { return h.host.UID }
func (h *bmhHost) PoweredOn() bool { return h.host.Status.PoweredOn }

// RebootRequested: this provider's reboot annotation, or upstream
// CAPM3's, which a remediation in flight when upstream was replaced left
// (its Metal3Remediation is this one: the host still names the machine).
func (h *bmhHost) RebootRequested() bool {
	return len(h.rebootAnnotations()) > 0
}

// rebootAnnotations are the reboot annotations of the machine's
// remediations on the host: this provider's and upstream CAPM3's.
func (h *bmhHost) rebootAnnotations() []string {
	var keys []string
	for key := range h.host.Annotations {
		if key == h.rebootAnnotation || strings.HasPrefix(key, infrav1.UpstreamRemediationRebootAnnotationPrefix) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys
}

func (h *bmhHost) RequestReboot(ctx context.Context) error {
	return h.annotate(ctx, h.rebootAnnotation, rebootValue, true)
}

func (h *bmhHost) ReleaseReboot(ctx context.Context) error {
	for _, key := range h.rebootAnnotations() {
		if err := h.annotate(ctx, key, "", false); err != nil {
			return err
		}
	}
	return nil
}

// MarkUnhealthy sets the annotation host selection skips, under the name
// and with the value upstream CAPM3 v1.13+ writes when its retries run
// out: the host stays in the pool for an operator to look at. A mark under
// the deprecated name is left as it is: it is not the remediation's.
func (h *bmhHost) MarkUnhealthy(ctx context.Context) error {
	return h.annotate(ctx, pool.UnhealthyAnnotation, pool.UnhealthyValue, true)
}

// annotate sets (or removes) annotation on the host, if not already so.
// A conflict (the cached host was stale: the Bare Metal Operator writes it
// often) is retried once on the live host, if it is still the machine's.
func (h *bmhHost) annotate(ctx context.Context, annotation, value string, set bool) error {
	err := h.patchAnnotation(ctx, annotation, value, set)
	if apierrors.IsConflict(err) {
		live := &bmov1alpha1.BareMetalHost{}
		if getErr := h.reader.Get(ctx, client.ObjectKeyFromObject(h.host), live); getErr != nil {
			return fmt.Errorf("read host %s after a conflict: %w", h, getErr)
		}
		if !hostbinding.Consumes(live, h.m3m) {
			return fmt.Errorf("host %s no longer names Metal3Machine %s/%s as its consumer", h, h.m3m.Namespace, h.m3m.Name)
		}
		h.host = live
		err = h.patchAnnotation(ctx, annotation, value, set)
	}
	return err
}

func (h *bmhHost) patchAnnotation(ctx context.Context, annotation, value string, set bool) error {
	before := h.host.DeepCopy()
	if !setAnnotation(h.host, annotation, value, set) {
		return nil
	}
	if err := h.client.Patch(ctx, h.host, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		h.host = before
		verb := "set"
		if !set {
			verb = "remove"
		}
		return fmt.Errorf("%s annotation %s on host %s: %w", verb, annotation, h, err)
	}
	return nil
}

// setAnnotation sets annotation to value on obj, or removes it (set false),
// and reports whether that changed anything.
func setAnnotation(obj metav1.Object, annotation, value string, set bool) bool {
	annotations := obj.GetAnnotations()
	current, present := annotations[annotation]
	if set == present && (!set || current == value) {
		return false
	}
	if !set {
		delete(annotations, annotation)
		obj.SetAnnotations(annotations)
		return true
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[annotation] = value
	obj.SetAnnotations(annotations)
	return true
}
