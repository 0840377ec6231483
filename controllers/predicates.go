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
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

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
