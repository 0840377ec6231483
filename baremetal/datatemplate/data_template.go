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
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/internal/readiness"
)

// DataTemplateManager allocates the indexes of one Metal3DataTemplate: each
// claim gets a Metal3Data "<template>-<index>" with the lowest free index.
// All claims of a template are handled in one reconcile of the template, so
// no two claims can be given the same index, however many arrive at once.
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

// SetClusterOwner makes cluster, the template's Cluster (spec.clusterName)
// as the reconcile read it, one of its owners and labels it with the
// cluster's name, as CAPI does for every object of a cluster: clusterctl
// move then carries the template with its cluster (it moves only what
// hangs from a Cluster), and deleting the cluster deletes the template.
// found is false while the Cluster does not exist (nil); the template is
// still served meanwhile.
func (m *DataTemplateManager) SetClusterOwner(cluster *clusterv1.Cluster) (found bool) {
	if cluster == nil {
		return false
	}
	labels := m.Template.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[clusterv1.ClusterNameLabel] = cluster.Name
	m.Template.SetLabels(labels)
	m.Template.OwnerReferences = util.EnsureOwnerRef(m.Template.OwnerReferences, metav1.OwnerReference{
		APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID,
	})
	return true
}

// AllocateIndexes gives every claim of the template its Metal3Data,
// releases the data of deleted claims, and records the indexes in status.
// It returns how many claims still wait for their data to go.
func (m *DataTemplateManager) AllocateIndexes(ctx context.Context) (int, error) {
	ns := m.Template.Namespace
	claims := &infrav1.Metal3DataClaimList{}
	if err := m.Client.List(ctx, claims, client.InNamespace(ns)); err != nil {
		return 0, fmt.Errorf("list Metal3DataClaims: %w", err)
	}
	datas := &infrav1.Metal3DataList{}
	if err := m.Reader.List(ctx, datas, client.InNamespace(ns)); err != nil {
		return 0, fmt.Errorf("list Metal3Data: %w", err)
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
	}
	live := map[string]bool{}
	var indexes []infrav1.IndexEntry
	releasing := 0
	var nextFree int32
	for i := range claims.Items {
		claim := &claims.Items[i]
		if refName(claim.Spec.Template) != m.Template.Name {
			continue
		}
		data := byClaim[claim.Name]
		if !claim.DeletionTimestamp.IsZero() {
			released, err := m.release(ctx, claim, data)
			if err != nil {
				return 0, err
			}
			if !released {
				releasing++
			}
			continue
		}
		live[claim.Name] = true
		if err := m.ensureClaimFinalizer(ctx, claim); err != nil {
			return 0, err
		}
		if data == nil {
			for used[nextFree] {
				nextFree++
			}
			created, err := m.createData(ctx, claim, nextFree)
			if err != nil {
				return 0, err
			}
			used[nextFree] = true
			data = created
		}
		indexes = append(indexes, infrav1.IndexEntry{Name: claim.Name, Index: ptr.To(dataIndex(data))})
		if err := m.reportToClaim(ctx, claim, data); err != nil {
			return 0, err
		}
	}
	// Data whose claim vanished without its finalizer (e.g. force-removed)
	// must not keep its index forever.
	for name, data := range byClaim {
		if !live[name] && refName(data.Spec.Template) == m.Template.Name && data.DeletionTimestamp.IsZero() {
			if err := m.Client.Delete(ctx, data); client.IgnoreNotFound(err) != nil {
				return 0, fmt.Errorf("delete orphaned Metal3Data %s: %w", data.Name, err)
			}
		}
	}
	// By claim name, the order the map of v1beta1 was written in.
	slices.SortFunc(indexes, func(a, b infrav1.IndexEntry) int { return strings.Compare(a.Name, b.Name) })
	m.Template.Status.Indexes = indexes
	now := metav1.Now()
	m.Template.Status.LastUpdated = &now
	return releasing, nil
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

// DataRemaining counts the Metal3Data rendered from the template: while any
// exist the template cannot go.
func (m *DataTemplateManager) DataRemaining(ctx context.Context) (int, error) {
	datas := &infrav1.Metal3DataList{}
	if err := m.Client.List(ctx, datas, client.InNamespace(m.Template.Namespace)); err != nil {
		return 0, fmt.Errorf("list Metal3Data: %w", err)
	}
	n := 0
	for _, data := range datas.Items {
		if refName(data.Spec.Template) == m.Template.Name {
			n++
		}
	}
	return n, nil
}
