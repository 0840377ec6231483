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

	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Field indexes the controllers' mappers look up, instead of listing a
// namespace and filtering.
const (
	// dataClaimIndex indexes Metal3Data by their claim's name, which is
	// their Metal3Machine's.
	dataClaimIndex = "spec.claim.name"
	// clusterIdentitySecretIndex indexes Metal3ClusterIdentities by the
	// namespace/name of their Secret, the provider's namespace standing in
	// for an empty one.
	clusterIdentitySecretIndex = "spec.secretRef" //nolint:gosec // a field path, not a credential
)

// indexes registers the controllers' own field indexes; providerNamespace
// is where a Metal3ClusterIdentity's Secret without a namespace is.
func indexes(ctx context.Context, indexer client.FieldIndexer, providerNamespace string) error {
	for _, index := range []struct {
		obj     client.Object
		field   string
		extract client.IndexerFunc
	}{
		{&infrav1.Metal3Data{}, dataClaimIndex, func(o client.Object) []string {
			return []string{o.(*infrav1.Metal3Data).Spec.Claim.Name}
		}},
		{&infrav1.Metal3ClusterIdentity{}, clusterIdentitySecretIndex, func(o client.Object) []string {
			return []string{clusterIdentitySecret(o.(*infrav1.Metal3ClusterIdentity), providerNamespace).String()}
		}},
	} {
		if err := indexer.IndexField(ctx, index.obj, index.field, index.extract); err != nil {
			return fmt.Errorf("index %T by %s: %w", index.obj, index.field, err)
		}
	}
	return nil
}
