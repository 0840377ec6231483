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

	"k8s.io/apimachinery/pkg/api/equality"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Metal3MachineTemplateReconciler propagates the template's
// automatedCleaningMode to the Metal3Machines created from it, as upstream
// CAPM3 does; the Metal3Machine controller passes it on to their hosts.
// Nothing else of a template changes existing machines: that is a rollout.
type Metal3MachineTemplateReconciler struct {
	Client           client.Client
	WatchFilterValue string
}

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3machinetemplates,verbs=get;list;watch

// SetupWithManager registers the controller.
func (r *Metal3MachineTemplateReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	return controllerFor(mgr, &infrav1.Metal3MachineTemplate{}, options, ctrl.LoggerFrom(ctx), r.WatchFilterValue).
		Complete(r)
}

// Reconcile copies automatedCleaningMode to the template's machines.
func (r *Metal3MachineTemplateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	template := &infrav1.Metal3MachineTemplate{}
	if err := r.Client.Get(ctx, req.NamespacedName, template); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !template.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	// A paused template changes no machine, as upstream CAPM3's; removing
	// the annotation is an update of the template, which brings the next
	// reconcile.
	if annotations.HasPaused(template) {
		ctrl.LoggerFrom(ctx).Info("The Metal3MachineTemplate is paused: its automatedCleaningMode reaches its machines once the annotation is removed",
			"annotation", clusterv1.PausedAnnotation)
		return ctrl.Result{}, nil
	}
	machines := &infrav1.Metal3MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(template.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("list Metal3Machines: %w", err)
	}
	mode := template.Spec.Template.Spec.AutomatedCleaningMode
	for i := range machines.Items {
		m3m := &machines.Items[i]
		if m3m.Annotations[clusterv1.TemplateClonedFromNameAnnotation] != template.Name ||
			equality.Semantic.DeepEqual(m3m.Spec.AutomatedCleaningMode, mode) {
			continue
		}
		patch := client.MergeFrom(m3m.DeepCopy())
		m3m.Spec.AutomatedCleaningMode = mode
		if err := r.Client.Patch(ctx, m3m, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("set automatedCleaningMode of Metal3Machine %s: %w", m3m.Name, err)
		}
	}
	return ctrl.Result{}, nil
}
