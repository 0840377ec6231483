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
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// Whether an object may use a Metal3ClusterIdentity is decided at each of
// its reconciles (identity.ClusterIdentities): these watches bring the
// reconciles when the answer may change, for the objects the answer is
// about, found through the identity indexes (identity.RefIndex for what
// their spec names, identity.UsedIndex for what they last used, e.g. a
// Metal3Machine through its cluster's identityRef).

// clusterIdentityUsers finds the objects that use Metal3ClusterIdentities:
// value is identity.RefClusterIdentity(name) or identity.AnyClusterIdentity,
// namespace limits the search ("" for all).
type clusterIdentityUsers func(ctx context.Context, value, namespace string) []ctrl.Request

// clusterIdentitySources are the sources of a controller whose objects use
// cluster identities: a Metal3ClusterIdentity created, deleted or with a new
// spec (allowedNamespaces, secretRef) wakes its users in every namespace;
// new labels on a Namespace, which selectors match, wake the users of any
// cluster identity there. They are raw sources so that the controller's
// watch-filter predicate, which neither kind carries, does not drop them;
// users filters the objects instead.
func clusterIdentitySources(mgr ctrl.Manager, users clusterIdentityUsers) []source.Source {
	namespace := &metav1.PartialObjectMetadata{}
	namespace.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return []source.Source{
		source.Kind(mgr.GetCache(), client.Object(&infrav1.Metal3ClusterIdentity{}),
			handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []ctrl.Request {
				return users(ctx, identity.RefClusterIdentity(obj.GetName()), "")
			}),
			predicate.GenerationChangedPredicate{}),
		// Metadata only: labels are all admission reads of a Namespace.
		source.Kind(mgr.GetCache(), client.Object(namespace),
			handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []ctrl.Request {
				return users(ctx, identity.AnyClusterIdentity, obj.GetName())
			}),
			namespaceLabelsChanged()),
	}
}

// namespaceLabelsChanged passes relabelled Namespaces only: objects in a new
// namespace are reconciled when they are created, and a deleted namespace's
// objects go with it.
func namespaceLabelsChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld != nil && e.ObjectNew != nil && !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
		},
	}
}

// listIdentityUsers returns the requests of the objects of newList's kind
// that name value in RefIndex or UsedIndex, in namespace ("" for all), and
// that the controller's watch filter admits.
func listIdentityUsers(ctx context.Context, c client.Reader, newList func() client.ObjectList, value, namespace, watchFilter string) []ctrl.Request {
	seen := map[client.ObjectKey]bool{}
	var requests []ctrl.Request
	for _, index := range []string{identity.RefIndex, identity.UsedIndex} {
		list := newList()
		opts := []client.ListOption{client.MatchingFields{index: value}}
		if namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
		if err := c.List(ctx, list, opts...); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "List the users of a Metal3ClusterIdentity", "index", index, "value", value, "namespace", namespace)
			continue
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			continue
		}
		for _, item := range items {
			obj, ok := item.(client.Object)
			if !ok || seen[client.ObjectKeyFromObject(obj)] ||
				watchFilter != "" && obj.GetLabels()[clusterv1.WatchLabel] != watchFilter {
				continue
			}
			seen[client.ObjectKeyFromObject(obj)] = true
			requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
	}
	return requests
}
