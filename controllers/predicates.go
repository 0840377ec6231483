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
	"github.com/go-logr/logr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// clusterCreated passes the creation of a Cluster only, for objects that
// name their Cluster before it exists.
var clusterCreated = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { _, ok := e.Object.(*clusterv1.Cluster); return ok },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// controllerFor starts the builder of a controller of obj's kind, as every
// controller of this package starts: the manager's options, and only the
// objects carrying the watch-filter label (Cluster API's
// --watch-filter) when one is set.
func controllerFor(mgr ctrl.Manager, obj client.Object, options controller.Options, log logr.Logger, watchFilterValue string) *builder.TypedBuilder[reconcile.Request] {
	return ctrl.NewControllerManagedBy(mgr).
		For(obj).
		WithOptions(options).
		WithEventFilter(predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, watchFilterValue))
}
