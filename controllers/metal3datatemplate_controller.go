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
	"sigs.k8s.io/controller-runtime/pkg/predicate"

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
		// A Cluster created after its templates becomes their owner; its
		// pause and unpause pause and unpause them.
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToTemplates),
			builder.WithPredicates(predicate.Or(clusterCreated, predicates.ClusterPausedTransitions(mgr.GetScheme(), log)))).
		Complete(r)
}

// clusterToTemplates maps a Cluster to the Metal3DataTemplates naming it.
func (r *Metal3DataTemplateReconciler) clusterToTemplates(ctx context.Context, obj client.Object) []ctrl.Request {
	templates := &infrav1.Metal3DataTemplateList{}
	if err := r.Client.List(ctx, templates, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{templateClusterIndex: obj.GetName()}); err != nil {
		return nil
	}
	requests := make([]ctrl.Request, 0, len(templates.Items))
	for _, template := range templates.Items {
		requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&template)})
	}
	return requests
}

// Reconcile allocates, releases and records the template's indexes.
func (r *Metal3DataTemplateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	template := &infrav1.Metal3DataTemplate{}
	if err := r.Client.Get(ctx, req.NamespacedName, template); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cluster, err := clusterNamed(ctx, r.Client, template.Namespace, template.Spec.ClusterName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, template); err != nil || isPaused || requeue {
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
	if !template.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, manager)
	}
	return r.reconcileNormal(ctx, manager, cluster)
}

func (r *Metal3DataTemplateReconciler) reconcileNormal(ctx context.Context, manager *datatemplate.DataTemplateManager, cluster *clusterv1.Cluster) (ctrl.Result, error) {
	template := manager.Template
	if !manager.SetClusterOwner(cluster) {
		// The Cluster's creation wakes the template (see SetupWithManager).
		ctrl.LoggerFrom(ctx).Info("Cluster of the template not found yet; it will own the template once it exists",
			"cluster", template.Spec.ClusterName)
	}
	releasing, err := manager.AllocateIndexes(ctx)
	if err != nil {
		setCondition(template, infrav1.Metal3DataTemplateIndexesAllocatedCondition, metav1.ConditionFalse,
			infrav1.Metal3DataTemplateAllocationFailedReason, err.Error())
		return ctrl.Result{}, err
	}
	setCondition(template, infrav1.Metal3DataTemplateIndexesAllocatedCondition, metav1.ConditionTrue,
		infrav1.Metal3DataTemplateIndexesAllocatedReason, fmt.Sprintf("%d indexes allocated", len(template.Status.Indexes)))
	if releasing > 0 {
		return ctrl.Result{RequeueAfter: dataGoneRequeue}, nil
	}
	return ctrl.Result{}, nil
}

func (r *Metal3DataTemplateReconciler) reconcileDelete(ctx context.Context, manager *datatemplate.DataTemplateManager) (ctrl.Result, error) {
	template := manager.Template
	remaining, err := manager.DataRemaining(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if remaining > 0 {
		setCondition(template, infrav1.Metal3DataTemplateIndexesAllocatedCondition, metav1.ConditionFalse, infrav1.DeletingReason,
			fmt.Sprintf("Waiting for %d Metal3Data rendered from this template to be deleted", remaining))
		return ctrl.Result{RequeueAfter: dataGoneRequeue}, nil
	}
	controllerutil.RemoveFinalizer(template, infrav1.DataTemplateFinalizer)
	return ctrl.Result{}, nil
}
