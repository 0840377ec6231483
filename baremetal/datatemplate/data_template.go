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

package datatemplate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/internal/readiness"
)

// DataTemplateManager allocates the indexes of one Metal3DataTemplate: each
// claim gets a Metal3Data "<template>-<index>" with the lowest free index.
// All claims of a template, whichever clusters their machines belong to,
// are handled in one reconcile of the template, so no two claims can be
// given the same index, however many arrive at once.
type DataTemplateManager struct {
	Client client.Client
	// Reader lists Metal3Data from the API server, not the cache: a
	// Metal3Data created by the previous reconcile must be seen, or its
	// claim would be given a second index.
	Reader   client.Reader
	Template *infrav1.Metal3DataTemplate
}

// indexSpace says whether data belongs to the template's index space: the
// templateReference shared by revisions of a template, else the template.
// A new revision thus keeps the indexes its predecessor gave.
func (m *DataTemplateManager) inIndexSpace(data *infrav1.Metal3Data) bool {
	if ref := m.Template.Spec.TemplateReference; ref != "" {
		return data.Spec.TemplateReference == ref
	}
	return refName(data.Spec.Template) == m.Template.Name
}

// refName is the name ref points at, "" when there is none.
func refName(ref *infrav1.Metal3ObjectRef) string {
	if ref == nil {
		return ""
	}
	return ref.Name
}

// dataIndex is data's index in its template; an unset index is 0, as it was
// when the field was not a pointer.
func dataIndex(data *infrav1.Metal3Data) int32 {
	return ptr.Deref(data.Spec.Index, 0)
}

// A template is not bound to a Cluster (spec.clusterName is deprecated and
// unused, as upstream CAPM3 v1.14 has it): the machines of several clusters
// may claim data from it, in one index space, and each Metal3Data belongs to
// its claim's cluster (the claim's cluster-name label, from its machine's
// Cluster, which the data carries on). So the template is never owned by a
// Cluster nor deleted with one; clusterctl move takes it by its CRD's
// clusterctl.cluster.x-k8s.io/move label. A Cluster's pause therefore holds
// the claims of that cluster, not the template: while it is paused (e.g.
// during clusterctl move, which pauses it in the source and creates it
// paused in the target) nothing of its claims is written and no index is
// given them, so the move never meets a Metal3Data it did not copy.

// Allocation is what a pass over the template's claims found.
type Allocation struct {
	// Claims counts the claims naming the template, live or deleting.
	Claims int
	// Releasing counts deleting claims whose Metal3Data is still going.
	Releasing int
	// Held names the claims waiting for their paused Cluster for an index.
	Held []string
	// Data counts the Metal3Data rendered from the template.
	Data int
}

// pauses tells, once per pass, whether a claim's cluster is paused.
type pauses struct {
	client   client.Reader
	clusters map[string]bool
}

// paused reports whether obj (a claim, or a Metal3Data which carries its
// claim's labels) is paused: by its own annotation or by its Cluster. An
// object naming no Cluster, or one that does not exist, is not.
func (p *pauses) paused(ctx context.Context, obj client.Object) (bool, error) {
	if annotations.HasPaused(obj) {
		return true, nil
	}
	name := obj.GetLabels()[clusterv1.ClusterNameLabel]
	if name == "" {
		return false, nil
	}
	if paused, ok := p.clusters[name]; ok {
		return paused, nil
	}
	cluster := &clusterv1.Cluster{}
	paused := false
	switch err := p.client.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}, cluster); {
	case err == nil:
		paused = ptr.Deref(cluster.Spec.Paused, false)
	case !apierrors.IsNotFound(err):
		return false, fmt.Errorf("get Cluster %s/%s: %w", obj.GetNamespace(), name, err)
	}
	p.clusters[name] = paused
	return paused, nil
}

// AllocateIndexes gives every claim of the template its Metal3Data,
// releases the data of deleted claims, and records the indexes in status.
// Claims of a paused Cluster are left as they are (see above).
func (m *DataTemplateManager) AllocateIndexes(ctx context.Context) (Allocation, error) {
	var out Allocation
	ns := m.Template.Namespace
	claims := &infrav1.Metal3DataClaimList{}
	if err := m.Client.List(ctx, claims, client.InNamespace(ns)); err != nil {
		return out, fmt.Errorf("list Metal3DataClaims: %w", err)
	}
	datas := &infrav1.Metal3DataList{}
	if err := m.Reader.List(ctx, datas, client.InNamespace(ns)); err != nil {
		return out, fmt.Errorf("list Metal3Data: %w", err)
	}

	// Oldest claims first, so indexes follow the order machines came in,
	// whatever order the cache lists them in.
	slices.SortStableFunc(claims.Items, func(a, b infrav1.Metal3DataClaim) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	used := map[int32]bool{}
	byClaim := map[string]*infrav1.Metal3Data{}
	for i := range datas.Items {
		data := &datas.Items[i]
		if m.inIndexSpace(data) {
			used[dataIndex(data)] = true
			byClaim[refName(data.Spec.Claim)] = data
		}
		if refName(data.Spec.Template) == m.Template.Name {
			out.Data++
		}
	}
	held := &pauses{client: m.Client, clusters: map[string]bool{}}
	live := map[string]bool{}
	var indexes []infrav1.IndexEntry
	var nextFree int32
	for i := range claims.Items {
		claim := &claims.Items[i]
		if refName(claim.Spec.Template) != m.Template.Name {
			continue
		}
		out.Claims++
		data := byClaim[claim.Name]
		paused, err := held.paused(ctx, claim)
		if err != nil {
			return out, err
		}
		if paused {
			// Its data, if any, keeps its index and is not an orphan;
			// a deleting claim is released once its cluster resumes.
			live[claim.Name] = true
			switch {
			case !claim.DeletionTimestamp.IsZero():
			case data == nil:
				out.Held = append(out.Held, claim.Name)
			default:
				indexes = append(indexes, infrav1.IndexEntry{Name: claim.Name, Index: ptr.To(dataIndex(data))})
			}
			continue
		}
		if !claim.DeletionTimestamp.IsZero() {
			released, err := m.release(ctx, claim, data)
			if err != nil {
				return out, err
			}
			if !released {
				out.Releasing++
			}
			continue
		}
		live[claim.Name] = true
		if err := m.ensureClaimFinalizer(ctx, claim); err != nil {
			return out, err
		}
		if data == nil {
			for used[nextFree] {
				nextFree++
			}
			created, err := m.createData(ctx, claim, nextFree)
			if err != nil {
				return out, err
			}
			used[nextFree] = true
			data = created
			out.Data++
		}
		indexes = append(indexes, infrav1.IndexEntry{Name: claim.Name, Index: ptr.To(dataIndex(data))})
		if err := m.reportToClaim(ctx, claim, data); err != nil {
			return out, err
		}
	}
	// Data whose claim vanished without its finalizer (e.g. force-removed)
	// must not keep its index forever; data of a paused cluster is left
	// alone like its claim.
	for name, data := range byClaim {
		if live[name] || refName(data.Spec.Template) != m.Template.Name || !data.DeletionTimestamp.IsZero() {
			continue
		}
		paused, err := held.paused(ctx, data)
		if err != nil {
			return out, err
		}
		if paused {
			continue
		}
		if err := m.Client.Delete(ctx, data); client.IgnoreNotFound(err) != nil {
			return out, fmt.Errorf("delete orphaned Metal3Data %s: %w", data.Name, err)
		}
	}
	// By claim name, the order the map of v1beta1 was written in.
	slices.SortFunc(indexes, func(a, b infrav1.IndexEntry) int { return strings.Compare(a.Name, b.Name) })
	m.Template.Status.Indexes = indexes
	now := metav1.Now()
	m.Template.Status.LastUpdated = &now
	return out, nil
}

func (m *DataTemplateManager) createData(ctx context.Context, claim *infrav1.Metal3DataClaim, index int32) (*infrav1.Metal3Data, error) {
	data := &infrav1.Metal3Data{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: m.Template.Namespace,
			Name:      fmt.Sprintf("%s-%d", m.Template.Name, index),
			Labels:    claim.Labels,
		},
		Spec: infrav1.Metal3DataSpec{
			Index:             ptr.To(index),
			TemplateReference: m.Template.Spec.TemplateReference,
			Template:          &infrav1.Metal3ObjectRef{Namespace: m.Template.Namespace, Name: m.Template.Name},
			Claim:             &infrav1.Metal3ObjectRef{Namespace: claim.Namespace, Name: claim.Name},
		},
	}
	for _, owner := range []client.Object{m.Template, claim} {
		if err := controllerutil.SetOwnerReference(owner, data, m.Client.Scheme()); err != nil {
			return nil, err
		}
	}
	if err := m.Client.Create(ctx, data); err != nil {
		return nil, fmt.Errorf("create Metal3Data %s for claim %s: %w", data.Name, claim.Name, err)
	}
	return data, nil
}

// release deletes the claim's data, and lets the claim go once it is gone.
func (m *DataTemplateManager) release(ctx context.Context, claim *infrav1.Metal3DataClaim, data *infrav1.Metal3Data) (bool, error) {
	if data != nil {
		if data.DeletionTimestamp.IsZero() {
			if err := m.Client.Delete(ctx, data); client.IgnoreNotFound(err) != nil {
				return false, fmt.Errorf("delete Metal3Data %s of claim %s: %w", data.Name, claim.Name, err)
			}
		}
		// Upstream CAPM3's template controller gives every Metal3Data it
		// creates the claim's finalizer and removes it itself before the
		// deletion; this provider never sets it. A Metal3Data upstream
		// created would otherwise never go, nor its claim, machine and
		// Machine.
		if controllerutil.ContainsFinalizer(data, infrav1.DataClaimFinalizer) {
			patch := client.MergeFrom(data.DeepCopy())
			controllerutil.RemoveFinalizer(data, infrav1.DataClaimFinalizer)
			if err := m.Client.Patch(ctx, data, patch); client.IgnoreNotFound(err) != nil {
				return false, fmt.Errorf("remove upstream CAPM3's finalizer from Metal3Data %s: %w", data.Name, err)
			}
		}
		return false, nil
	}
	if !controllerutil.ContainsFinalizer(claim, infrav1.DataClaimFinalizer) {
		return true, nil
	}
	patch := client.MergeFrom(claim.DeepCopy())
	controllerutil.RemoveFinalizer(claim, infrav1.DataClaimFinalizer)
	if err := m.Client.Patch(ctx, claim, patch); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("release Metal3DataClaim %s: %w", claim.Name, err)
	}
	return true, nil
}

func (m *DataTemplateManager) ensureClaimFinalizer(ctx context.Context, claim *infrav1.Metal3DataClaim) error {
	if controllerutil.ContainsFinalizer(claim, infrav1.DataClaimFinalizer) {
		return nil
	}
	patch := client.MergeFrom(claim.DeepCopy())
	controllerutil.AddFinalizer(claim, infrav1.DataClaimFinalizer)
	if err := m.Client.Patch(ctx, claim, patch); err != nil {
		return fmt.Errorf("add finalizer to Metal3DataClaim %s: %w", claim.Name, err)
	}
	return nil
}

// reportToClaim records on claim its Metal3Data and that data's progress
// (errorMessage, and the DataReady and Ready conditions), which the claim's
// Metal3Machine reads. The claim's status has this one writer.
func (m *DataTemplateManager) reportToClaim(ctx context.Context, claim *infrav1.Metal3DataClaim, data *infrav1.Metal3Data) error {
	updated := claim.DeepCopy()
	updated.Status.RenderedData = &infrav1.Metal3ObjectRef{Namespace: data.Namespace, Name: data.Name}
	updated.Status.ErrorMessage = data.Status.ErrorMessage
	if err := setClaimConditions(updated, data); err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(claim.Status, updated.Status) {
		return nil
	}
	if err := m.Client.Status().Patch(ctx, updated, client.MergeFrom(claim)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("report Metal3Data %s on claim %s: %w", data.Name, claim.Name, err)
	}
	*claim = *updated
	return nil
}

// setClaimConditions mirrors data's SecretsRendered condition onto claim as
// DataReady, which sums up into the claim's Ready.
func setClaimConditions(claim *infrav1.Metal3DataClaim, data *infrav1.Metal3Data) error {
	rendered := conditions.Get(data, infrav1.Metal3DataSecretsRenderedCondition)
	dataReady := metav1.Condition{Type: infrav1.Metal3DataClaimDataReadyCondition, ObservedGeneration: claim.Generation}
	switch {
	case rendered != nil && rendered.Status == metav1.ConditionTrue:
		dataReady.Status, dataReady.Reason = metav1.ConditionTrue, infrav1.Metal3DataClaimDataReadyReason
		dataReady.Message = fmt.Sprintf("Metal3Data %s: %s", data.Name, rendered.Message)
	default:
		dataReady.Status, dataReady.Reason = metav1.ConditionFalse, infrav1.Metal3DataClaimWaitingForDataReason
		message := "not rendered yet"
		if rendered != nil {
			message = rendered.Message
		}
		if data.Status.ErrorMessage != "" {
			dataReady.Reason = infrav1.Metal3DataClaimDataFailedReason
		}
		dataReady.Message = fmt.Sprintf("Metal3Data %s: %s", data.Name, message)
	}
	conditions.Set(claim, dataReady)
	claim.Status.ObservedGeneration = claim.Generation
	return readiness.Set(claim, readiness.Summary{
		Conditions: []string{infrav1.Metal3DataClaimDataReadyCondition},
		Deleting:   !claim.DeletionTimestamp.IsZero(),
	})
}
