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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// Metal3ClusterIdentityReconciler reports on Metal3ClusterIdentities, for
// their admin: how many Metal3Clusters use each, so that changing or
// deleting one is a known risk, and whether its Secret exists. It decides
// nothing: whether a namespace may use an identity is checked at every use
// (identity.ClusterIdentities), by the controllers of the objects using it.
type Metal3ClusterIdentityReconciler struct {
	Client client.Client
	// Identities gives the Secrets' metadata and hears them change.
	Identities hostaccess.Cache
	// ProviderNamespace is where a secretRef without a namespace points.
	ProviderNamespace string
}

// What the provider needs to use Metal3ClusterIdentities. Their kubeconfig
// Secrets are read under the cluster-wide Secret rule of the Metal3Cluster
// and Metal3Machine controllers, whichever namespace holds them. Namespaces
// are read because allowedNamespaces.selector matches a namespace's labels.
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3clusteridentities,verbs=get;list;watch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3clusteridentities/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// SetupWithManager registers the controller. The identities are
// cluster-scoped, set up by an admin, and not subject to the watch filter,
// which selects clusters.
func (r *Metal3ClusterIdentityReconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, options controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&infrav1.Metal3ClusterIdentity{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(options).
		// A Metal3Cluster starting or stopping to name an identity; on an
		// update both the old and the new identity are mapped.
		Watches(&infrav1.Metal3Cluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToIdentity),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Its Secret appearing or going.
		WatchesRawSource(r.Identities.Source("metal3clusteridentity", r.secretToIdentities)).
		Complete(r)
}

// Reconcile reports on one Metal3ClusterIdentity.
func (r *Metal3ClusterIdentityReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	ci := &infrav1.Metal3ClusterIdentity{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patchHelper, err := patch.NewHelper(ci, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		// The reconcile's own context may be out of time: the status
		// is written all the same.
		ctx, cancel := patchContext(ctx)
		defer cancel()
		if err := patchUnlessGone(ctx, patchHelper, ci, patch.WithOwnedConditions{Conditions: []string{infrav1.ReadyCondition}},
			patch.WithStatusObservedGeneration{}); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	clusters := &infrav1.Metal3ClusterList{}
	if err := r.Client.List(ctx, clusters, client.MatchingFields{identity.RefIndex: identity.RefClusterIdentity(ci.Name)}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list the Metal3Clusters using Metal3ClusterIdentity %s: %w", ci.Name, err)
	}
	ci.Status.Clusters = int32(len(clusters.Items))

	secret := clusterIdentitySecret(ci, r.ProviderNamespace)
	ready := metav1.Condition{Type: infrav1.ReadyCondition, ObservedGeneration: ci.Generation}
	meta, err := r.secretMetadata(ctx, secret)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case meta == nil:
		ready.Status, ready.Reason = metav1.ConditionFalse, infrav1.IdentitySecretNotFoundReason
		ready.Message = fmt.Sprintf("Secret %s not found", secret)
	default:
		if err := r.ownSecret(ctx, ci, meta); err != nil {
			return ctrl.Result{}, err
		}
		ready.Status, ready.Reason = metav1.ConditionTrue, infrav1.ReadyReason
		ready.Message = fmt.Sprintf("Secret %s found", secret)
	}
	if previous := conditions.Get(ci, infrav1.ReadyCondition); previous == nil || previous.Reason != ready.Reason {
		ctrl.LoggerFrom(ctx).Info("Metal3ClusterIdentity state changed", "reason", ready.Reason, "secret", secret.String(),
			"clusters", ci.Status.Clusters)
	}
	conditions.Set(ci, ready)
	return ctrl.Result{}, nil
}

// secretMetadata reads the Secret's metadata from the manager's cache; nil
// when there is no such Secret.
func (r *Metal3ClusterIdentityReconciler) secretMetadata(ctx context.Context, secret types.NamespacedName) (*metav1.PartialObjectMetadata, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := r.Identities.SecretMetadata().Get(ctx, secret, meta); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read metadata of Secret %s: %w", secret, err)
	}
	return meta, nil
}

// ownSecret makes ci an owner of its Secret, which is how clusterctl move
// finds the Secret below the identity (the CRD's move-hierarchy label) and
// carries it along. The reference is not a controller's: several
// identities may share one Secret, and each adds its own. As for any
// owner, the Secret is garbage-collected once every identity owning it is
// deleted.
func (r *Metal3ClusterIdentityReconciler) ownSecret(ctx context.Context, ci *infrav1.Metal3ClusterIdentity, secret *metav1.PartialObjectMetadata) error {
	for _, ref := range secret.OwnerReferences {
		if ref.UID == ci.UID {
			return nil
		}
	}
	before := secret.DeepCopy()
	secret.OwnerReferences = append(secret.OwnerReferences, metav1.OwnerReference{
		APIVersion: infrav1.GroupVersion.String(), Kind: "Metal3ClusterIdentity", Name: ci.Name, UID: ci.UID,
	})
	if err := r.Client.Patch(ctx, secret, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("make Metal3ClusterIdentity %s an owner of its Secret %s/%s: %w", ci.Name, secret.Namespace, secret.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Owned the identity's Secret, so that clusterctl move carries it", "secret", client.ObjectKeyFromObject(secret).String())
	return nil
}

// clusterToIdentity maps a Metal3Cluster to the Metal3ClusterIdentity its
// identityRef names, whose count it changes.
func (r *Metal3ClusterIdentityReconciler) clusterToIdentity(_ context.Context, obj client.Object) []ctrl.Request {
	m3c, ok := obj.(*infrav1.Metal3Cluster)
	if !ok || m3c.Spec.IdentityRef == nil || m3c.Spec.IdentityRef.KindOrDefault() != infrav1.IdentityKindMetal3ClusterIdentity {
		return nil
	}
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Name: m3c.Spec.IdentityRef.Name}}}
}

// secretToIdentities maps a Secret to the Metal3ClusterIdentities naming it.
func (r *Metal3ClusterIdentityReconciler) secretToIdentities(ctx context.Context, secret types.NamespacedName) []ctrl.Request {
	identities := &infrav1.Metal3ClusterIdentityList{}
	if err := r.Client.List(ctx, identities, client.MatchingFields{clusterIdentitySecretIndex: secret.String()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List the Metal3ClusterIdentities of a Secret", "secret", secret)
		return nil
	}
	requests := make([]ctrl.Request, 0, len(identities.Items))
	for _, ci := range identities.Items {
		requests = append(requests, ctrl.Request{NamespacedName: types.NamespacedName{Name: ci.Name}})
	}
	return requests
}

// clusterIdentitySecret is the Secret of ci, the provider's namespace
// standing in for an empty one, as identity.ClusterIdentities resolves it.
func clusterIdentitySecret(ci *infrav1.Metal3ClusterIdentity, providerNamespace string) types.NamespacedName {
	secret := types.NamespacedName{Namespace: ci.Spec.SecretRef.Namespace, Name: ci.Spec.SecretRef.Name}
	if secret.Namespace == "" {
		secret.Namespace = providerNamespace
	}
	return secret
}
