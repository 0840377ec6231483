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

package hostclaimbinder

import (
	"context"
	"fmt"
	"sync"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// DefaultMaxUnhealthyHostsPerNamespace is how many hosts the claims of one
// namespace may have marked unhealthy at a time, until the pool admin
// looks at them.
const DefaultMaxUnhealthyHostsPerNamespace = 3

// hostMarkedByIndex indexes hosts by the claim namespace that had them
// marked unhealthy (hostclaim.UnhealthyMarkedByAnnotation).
const hostMarkedByIndex = "hostclaimbinder.unhealthyMarkedBy"

// markedBy is the index function of hostMarkedByIndex. A host counts
// against a namespace while it is still marked: once the pool admin has
// removed the unhealthy mark, the namespace has its allowance back, even
// if the marked-by annotation was left (the binder drops it when it next
// binds the host).
func markedBy(o client.Object) []string {
	annotations := o.GetAnnotations()
	if ns := annotations[hostclaim.UnhealthyMarkedByAnnotation]; ns != "" && pool.UnhealthyMark(annotations) != "" {
		return []string{ns}
	}
	return nil
}

// The unhealthy mark is the one thing a claim asks for that outlives it on
// its host: remediation gave up, so the host takes no claim until the pool
// admin has repaired it. A tenant can set it on its own claims at will, so
// a tenant could take every host it ever held out of the pool. The binder
// carries the marks of one namespace's claims to at most
// MaxUnhealthyHostsPerNamespace hosts at a time; beyond, the claim is told
// (an Event) and its host goes back to the pool when released, like any.

// unhealthyMarks remembers the claims told their mark was refused, so each
// is told once.
type unhealthyMarks struct {
	refused sync.Map // types.UID -> struct{}
}

// markUnhealthy carries claim's unhealthy mark, if it has one under
// either name (the provider writes hostclaim.UnhealthyAnnotation; a tenant
// or an older provider may write the deprecated name), to host (updated
// in place) as pool.UnhealthyAnnotation, within the namespace's limit. A
// host already marked, under either name, is left as it is: that mark is
// not the binder's, so it neither counts against the namespace nor is
// recorded as its. It reports whether host carries a mark.
func (r *Reconciler) markUnhealthy(ctx context.Context, claim *bmov1alpha1.HostClaim, host *bmov1alpha1.BareMetalHost) (bool, error) {
	if pool.UnhealthyMark(host.Annotations) != "" {
		return true, nil
	}
	if pool.UnhealthyMark(claim.Annotations) == "" {
		return false, nil
	}
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := r.Client.List(ctx, hosts, client.MatchingFields{hostMarkedByIndex: claim.Namespace}); err != nil {
		return false, fmt.Errorf("list hosts marked unhealthy by namespace %s: %w", claim.Namespace, err)
	}
	limit := r.Options.maxUnhealthy()
	if marked := len(hosts.Items); marked >= limit {
		if _, told := r.marks.refused.LoadOrStore(claim.UID, struct{}{}); !told {
			ctrl.LoggerFrom(ctx).Info("not marking the host unhealthy: the namespace has as many hosts marked as allowed",
				"namespace", claim.Namespace, "marked", marked, "limit", limit)
			r.Recorder.Eventf(claim, nil, corev1.EventTypeWarning, hostclaim.UnhealthyMarkRefusedReason, "MarkUnhealthy",
				"The host is not marked unhealthy: namespace %s already has %d hosts marked, the most the pool allows; it goes back to the pool when released",
				claim.Namespace, marked)
		}
		return false, nil
	}
	if host.Annotations == nil {
		host.Annotations = map[string]string{}
	}
	host.Annotations[pool.UnhealthyAnnotation] = pool.UnhealthyValue
	host.Annotations[hostclaim.UnhealthyMarkedByAnnotation] = claim.Namespace
	return true, nil
}

// forgetMark drops what is remembered of the claim with uid.
func (m *unhealthyMarks) forget(uid types.UID) { m.refused.Delete(uid) }
