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

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/cluster-api/controllers/crdmigrator"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Storage migration: objects written while v1beta1 was the storage version
// (this provider before v1beta2, upstream CAPM3 before v1.13) stay stored
// as v1beta1 until something rewrites them, and the CRDs keep v1beta1 in
// status.storedVersions, so v1beta1 could never be dropped. Cluster API's
// CRD migrator rewrites every object in the storage version and then sets
// storedVersions, as upstream CAPM3 runs it; it also removes managedFields
// entries of versions no longer served.
//
// The migrator finds a kind's CRD by the plural Cluster API computes, which
// for Metal3Data is "metal3data", not the CRD's "metal3datas" (upstream
// CAPM3's migrator silently skips it for that reason). metal3DataMigrator
// does the storage migration for that one CRD the same way.

// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions;customresourcedefinitions/status,verbs=patch;update,resourceNames=metal3clusters.infrastructure.cluster.x-k8s.io;metal3clustertemplates.infrastructure.cluster.x-k8s.io;metal3clusteridentities.infrastructure.cluster.x-k8s.io;metal3machines.infrastructure.cluster.x-k8s.io;metal3machinetemplates.infrastructure.cluster.x-k8s.io;metal3datatemplates.infrastructure.cluster.x-k8s.io;metal3dataclaims.infrastructure.cluster.x-k8s.io;metal3datas.infrastructure.cluster.x-k8s.io;metal3remediations.infrastructure.cluster.x-k8s.io;metal3remediationtemplates.infrastructure.cluster.x-k8s.io

// The migration lists every object of each kind and rewrites it with an
// empty patch, the templates too (which the controllers otherwise only get).
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3clusters;metal3clustertemplates;metal3clusteridentities;metal3machines;metal3machinetemplates;metal3datatemplates;metal3dataclaims;metal3datas;metal3remediations;metal3remediationtemplates,verbs=list;patch

// metal3DataCRD is the name of Metal3Data's CRD.
const metal3DataCRD = "metal3datas.infrastructure.cluster.x-k8s.io"

// SetupStorageMigration registers Cluster API's CRD migrator for every kind
// of the provider, and metal3DataMigrator, skipping the given phases
// (--skip-crd-migration-phases: StorageVersionMigration,
// CleanupManagedFields). Both run one object at a time, so that migrating a
// large installation does not flood the API server.
func SetupStorageMigration(ctx context.Context, mgr ctrl.Manager, skip []crdmigrator.Phase, options controller.Options) error {
	options.MaxConcurrentReconciles = 1
	// Kinds the controllers already cache are listed from the cache; the
	// templates are listed live rather than cached for this alone.
	cached := crdmigrator.ByObjectConfig{UseCache: true}
	live := crdmigrator.ByObjectConfig{UseCache: false}
	migrator := &crdmigrator.CRDMigrator{
		Client:                 mgr.GetClient(),
		APIReader:              mgr.GetAPIReader(),
		SkipCRDMigrationPhases: skip,
		Config: map[client.Object]crdmigrator.ByObjectConfig{
			&infrav1.Metal3Cluster{}:             cached,
			&infrav1.Metal3ClusterTemplate{}:     live,
			&infrav1.Metal3ClusterIdentity{}:     cached,
			&infrav1.Metal3Machine{}:             cached,
			&infrav1.Metal3MachineTemplate{}:     cached,
			&infrav1.Metal3DataTemplate{}:        cached,
			&infrav1.Metal3DataClaim{}:           cached,
			&infrav1.Metal3Remediation{}:         cached,
			&infrav1.Metal3RemediationTemplate{}: live,
		},
	}
	if err := migrator.SetupWithManager(ctx, mgr, options); err != nil {
		return fmt.Errorf("set up CRD migrator: %w", err)
	}
	if slices.Contains(skip, crdmigrator.StorageVersionMigrationPhase) {
		return nil
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("metal3datamigrator").
		For(&apiextensionsv1.CustomResourceDefinition{}, builder.OnlyMetadata,
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == metal3DataCRD }))).
		WithOptions(options).
		Complete(&metal3DataMigrator{client: mgr.GetClient(), apiReader: mgr.GetAPIReader()})
}

// metal3DataMigrator rewrites every Metal3Data in the storage version, then
// records that version alone in the CRD's storedVersions.
type metal3DataMigrator struct {
	client    client.Client
	apiReader client.Reader
}

func (r *metal3DataMigrator) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := r.apiReader.Get(ctx, req.NamespacedName, crd); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	storage := ""
	for _, version := range crd.Spec.Versions {
		if version.Storage {
			storage = version.Name
		}
	}
	if storage == "" || slices.Equal(crd.Status.StoredVersions, []string{storage}) {
		return reconcile.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx)
	datas := &infrav1.Metal3DataList{}
	if err := r.client.List(ctx, datas); err != nil {
		return reconcile.Result{}, err
	}
	log.Info("Rewriting Metal3Data in the storage version", "version", storage, "objects", len(datas.Items))
	for i := range datas.Items {
		// An empty merge patch carrying the resource version: the API
		// server rewrites the object in the storage version and changes
		// nothing else (as Kubernetes' storage version migrator does).
		data := &datas.Items[i]
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(infrav1.GroupVersion.WithKind("Metal3Data"))
		u.SetNamespace(data.Namespace)
		u.SetName(data.Name)
		u.SetResourceVersion(data.ResourceVersion)
		patch, err := u.MarshalJSON()
		if err != nil {
			return reconcile.Result{}, err
		}
		err = r.client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch))
		// Gone, or written by someone else since: stored in the storage
		// version either way.
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return reconcile.Result{}, fmt.Errorf("rewrite %s: %w", klog.KObj(data), err)
		}
	}
	original := crd.DeepCopy()
	crd.Status.StoredVersions = []string{storage}
	if err := r.client.Status().Patch(ctx, crd, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, fmt.Errorf("record stored versions of %s: %w", crd.Name, err)
	}
	log.Info("Metal3Data are stored in one version", "version", storage)
	return reconcile.Result{}, nil
}
