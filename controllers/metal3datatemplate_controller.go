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

package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/datatemplate"
	"github.com/metal3-io/cluster-api-provider-metal3/internal/readiness"
)

// dataGoneRequeue is how often a deleting template or claim checks whether
// its Metal3Data are gone (their deletion also triggers a reconcile).
const dataGoneRequeue = 5 * time.Second

// Metal3DataTemplateReconciler allocates indexes of Metal3DataTemplates to
// their Metal3DataClaims, as Metal3Data.
type Metal3DataTemplateReconciler struct {
	Client client.Client
	// APIReader lists Metal3Data uncached (see DataTemplateManager.Reader).
	APIReader        client.Reader
	WatchFilterValue string
}

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3datatemplates,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3datatemplates/status;metal3datatemplates/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3dataclaims,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3dataclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3datas,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch

// SetupWithManager registers the controller.
func (r *Metal3DataTemplateReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	log := ctrl.LoggerFrom(ctx)
	return controllerFor(mgr, &infrav1.Metal3DataTemplate{}, options, log, r.WatchFilterValue).
		Watches(&infrav1.Metal3DataClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []ctrl.Request {
			claim, ok := obj.(*infrav1.Metal3DataClaim)
			if !ok || claim.Spec.Template.Name == "" {
				return nil
			}
			return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: claim.Namespace, Name: claim.Spec.Template.Name}}}
		})).
		Watches(&infrav1.Metal3Data{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []ctrl.Request {
			data, ok := obj.(*infrav1.Metal3Data)
			if !ok || data.Spec.Template.Name == "" {
				return nil
			}
			return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: data.Namespace, Name: data.Spec.Template.Name}}}
		})).
		// A Cluster's pause holds its claims (see datatemplate.Allocation);
		// its unpause lets the templates they use serve them.
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToTemplates),
			builder.WithPredicates(predicates.ClusterPausedTransitions(mgr.GetScheme(), log))).
		Complete(r)
}

// clusterToTemplates maps a Cluster to the Metal3DataTemplates its machines
// claim data from: the templates of the claims labelled with its name.
func (r *Metal3DataTemplateReconciler) clusterToTemplates(ctx context.Context, obj client.Object) []ctrl.Request {
	claims := &infrav1.Metal3DataClaimList{}
	if err := r.Client.List(ctx, claims, client.InNamespace(obj.GetNamespace()),
		client.MatchingLabels{clusterv1.ClusterNameLabel: obj.GetName()}); err != nil {
		return nil
	}
	var requests []ctrl.Request
	for _, claim := range claims.Items {
		request := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: claim.Namespace, Name: claim.Spec.Template.Name}}
		if claim.Spec.Template.Name != "" && !slices.Contains(requests, request) {
			requests = append(requests, request)
		}
	}
	return requests
}

// Reconcile allocates, releases and records the template's indexes.
func (r *Metal3DataTemplateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	template := &infrav1.Metal3DataTemplate{}
	if err := r.Client.Get(ctx, req.NamespacedName, template); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The template belongs to no Cluster (spec.clusterName is deprecated
	// and not read): only its own annotation pauses it.
	if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, r.Client, nil, template); err != nil || isPaused || requeue {
		return ctrl.Result{}, err
	}
	if added, err := persistFinalizer(ctx, r.Client, template, infrav1.DataTemplateFinalizer, false); err != nil || added {
		return ctrl.Result{}, err
	}
	patchHelper, err := patch.NewHelper(template, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		// The reconcile's own context may be out of time: the status
		// is written all the same.
		ctx, cancel := patchContext(ctx)
		defer cancel()
		if err := readiness.Set(template, readiness.Summary{
			Conditions: []string{infrav1.Metal3DataTemplateIndexesAllocatedCondition},
			Deleting:   !template.DeletionTimestamp.IsZero(),
		}); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
		if err := patchUnlessGone(ctx, patchHelper, template, patch.WithOwnedConditions{Conditions: []string{
			infrav1.ReadyCondition, infrav1.Metal3DataTemplateIndexesAllocatedCondition,
		}}, patch.WithStatusObservedGeneration{}); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	manager := &datatemplate.DataTemplateManager{Client: r.Client, Reader: r.APIReader, Template: template}
	// A deleting template still serves and releases its claims, as
	// upstream's does: machines of another cluster may still use it.
	allocation, err := manager.AllocateIndexes(ctx)
	if err != nil {
		setCondition(template, infrav1.Metal3DataTemplateIndexesAllocatedCondition, metav1.ConditionFalse,
			infrav1.Metal3DataTemplateAllocationFailedReason, err.Error())
		return ctrl.Result{}, err
	}
	if !template.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, template, allocation), nil
	}
	return r.reconcileNormal(ctx, template, allocation), nil
}

func (r *Metal3DataTemplateReconciler) reconcileNormal(ctx context.Context, template *infrav1.Metal3DataTemplate, allocation datatemplate.Allocation) ctrl.Result {
	if len(allocation.Held) > 0 {
		// The Cluster's unpause wakes the template (see SetupWithManager).
		ctrl.LoggerFrom(ctx).Info("Claims wait for their Cluster to be unpaused for an index", "claims", allocation.Held)
		setCondition(template, infrav1.Metal3DataTemplateIndexesAllocatedCondition, metav1.ConditionFalse,
			infrav1.Metal3DataTemplateAllocationPendingReason,
			fmt.Sprintf("%d indexes allocated; %d Metal3DataClaims wait for their paused Cluster: %s",
				len(template.Status.Indexes), len(allocation.Held), someNames(allocation.Held)))
	} else {
		setCondition(template, infrav1.Metal3DataTemplateIndexesAllocatedCondition, metav1.ConditionTrue,
			infrav1.Metal3DataTemplateIndexesAllocatedReason, fmt.Sprintf("%d indexes allocated", len(template.Status.Indexes)))
	}
	if allocation.Releasing > 0 {
		return ctrl.Result{RequeueAfter: dataGoneRequeue}
	}
	return ctrl.Result{}
}

// reconcileDelete lets the template go once no claim names it and no
// Metal3Data rendered from it remains, whichever clusters they are of.
func (r *Metal3DataTemplateReconciler) reconcileDelete(ctx context.Context, template *infrav1.Metal3DataTemplate, allocation datatemplate.Allocation) ctrl.Result {
	if allocation.Claims > 0 || allocation.Data > 0 {
		ctrl.LoggerFrom(ctx).V(1).Info("Deleting template waits for its claims and data", "claims", allocation.Claims, "data", allocation.Data)
		setCondition(template, infrav1.Metal3DataTemplateIndexesAllocatedCondition, metav1.ConditionFalse, infrav1.DeletingReason,
			fmt.Sprintf("Waiting for %d Metal3DataClaims naming this template and %d Metal3Data rendered from it to be deleted",
				allocation.Claims, allocation.Data))
		return ctrl.Result{RequeueAfter: dataGoneRequeue}
	}
	controllerutil.RemoveFinalizer(template, infrav1.DataTemplateFinalizer)
	return ctrl.Result{}
}

// someNames lists the first few of names, for a condition message.
func someNames(names []string) string {
	const most = 5
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:most], ", ") + fmt.Sprintf(" and %d more", len(names)-most)
}
