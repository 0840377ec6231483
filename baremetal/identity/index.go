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

package identity

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Which objects use which identity is read from what the objects record,
// through field indexes of the manager's cache: it survives restarts and
// costs a lookup, not a list of a namespace.
const (
	// RefIndex indexes Metal3Clusters and Metal3Machines by what their own
	// spec.identityRef names: a Secret by its plain name (the Secrets to
	// protect), a Metal3ClusterIdentity as RefClusterIdentity(name), and
	// also as AnyClusterIdentity. A Secret's name has no "/", so a reader
	// looking up a Secret only ever finds refs of kind Secret.
	RefIndex = "infrastructure.cluster.x-k8s.io/identity-ref"
	// UsedIndex indexes Metal3Clusters, Metal3Machines and Metal3Data by
	// the identity they last used, as status.identity (or, for a
	// Metal3Data, its DataIdentityAnnotation) records it: UsedSecret for
	// its Secret and UsedKey for its connection, once resolved, and for a
	// Metal3ClusterIdentity RefClusterIdentity(name) and AnyClusterIdentity.
	UsedIndex = "infrastructure.cluster.x-k8s.io/identity-used"

	// AnyClusterIdentity is the RefIndex and UsedIndex value of every
	// object using some Metal3ClusterIdentity: the objects of a namespace
	// to look at again when its labels change. "*" is in no object name.
	AnyClusterIdentity = "clusteridentity/*"
)

// RefClusterIdentity is the RefIndex and UsedIndex value of the objects
// using the Metal3ClusterIdentity name.
func RefClusterIdentity(name string) string { return "clusteridentity/" + name }

// UsedSecret is the UsedIndex value of the objects whose identity's
// kubeconfig is the Secret secret, whatever its context.
func UsedSecret(secret types.NamespacedName) string { return "secret/" + secret.String() }

// UsedKey is the UsedIndex value of the objects that used the connection
// of key, directly or through any Metal3ClusterIdentity.
func UsedKey(key Key) string {
	if key.IsInCluster() {
		return "key/in-cluster"
	}
	key = key.Connection()
	return fmt.Sprintf("key/%s/%s/%s", key.SecretNamespace, key.SecretName, key.Context)
}

func usedValues(key Key) []string {
	if key.IsInCluster() {
		return []string{UsedKey(key)}
	}
	var values []string
	if key.ClusterIdentity != "" {
		values = append(values, RefClusterIdentity(key.ClusterIdentity), AnyClusterIdentity)
	}
	if key.Resolved() {
		values = append(values, UsedSecret(key.Secret()), UsedKey(key))
	}
	return values
}

func refValues(ref *infrav1.IdentityRef) []string {
	switch {
	case ref == nil:
		return nil
	case ref.KindOrDefault() == infrav1.IdentityKindMetal3ClusterIdentity:
		return []string{RefClusterIdentity(ref.Name), AnyClusterIdentity}
	default:
		return []string{ref.Name}
	}
}

// KeyFromStatus is the key status.identity of an object in namespace
// records; ok is false while it records none.
func KeyFromStatus(status *infrav1.IdentityStatus, namespace string) (Key, bool) {
	switch {
	case status == nil:
		return Key{}, false
	case status.Source == infrav1.IdentitySourceSecret:
		return Key{SecretNamespace: namespace, SecretName: status.SecretName, Context: status.Context}, true
	case status.Source == infrav1.IdentitySourceMetal3ClusterIdentity:
		key := Key{ClusterIdentity: status.IdentityName}
		if status.SecretName != "" {
			key.SecretNamespace, key.SecretName, key.Context = status.SecretNamespace, status.SecretName, status.Context
		}
		return key, true
	default:
		return InCluster, true
	}
}

// Indexes registers RefIndex and UsedIndex on the manager's cache.
func Indexes(ctx context.Context, indexer client.FieldIndexer) error {
	statusIndex := func(status *infrav1.IdentityStatus, namespace string) []string {
		if key, ok := KeyFromStatus(status, namespace); ok {
			return usedValues(key)
		}
		return nil
	}
	indexes := []struct {
		obj     client.Object
		field   string
		extract client.IndexerFunc
	}{
		{&infrav1.Metal3Cluster{}, RefIndex, func(o client.Object) []string {
			return refValues(o.(*infrav1.Metal3Cluster).Spec.IdentityRef)
		}},
		{&infrav1.Metal3Machine{}, RefIndex, func(o client.Object) []string {
			return refValues(o.(*infrav1.Metal3Machine).Spec.IdentityRef)
		}},
		{&infrav1.Metal3Cluster{}, UsedIndex, func(o client.Object) []string {
			return statusIndex(o.(*infrav1.Metal3Cluster).Status.Identity, o.GetNamespace())
		}},
		{&infrav1.Metal3Machine{}, UsedIndex, func(o client.Object) []string {
			return statusIndex(o.(*infrav1.Metal3Machine).Status.Identity, o.GetNamespace())
		}},
		{&infrav1.Metal3Data{}, UsedIndex, func(o client.Object) []string {
			if rec, ok := RecordedOn(o.(*infrav1.Metal3Data)); ok {
				return usedValues(rec.Identity().Key)
			}
			return nil
		}},
	}
	for _, index := range indexes {
		if err := indexer.IndexField(ctx, index.obj, index.field, index.extract); err != nil {
			return fmt.Errorf("index %T by %s: %w", index.obj, index.field, err)
		}
	}
	return nil
}

// Record is what a Metal3Data records of the identity its Secrets were
// written through (DataIdentityAnnotation), so they can be deleted through
// it after its Metal3Machine is gone.
//
// The annotation is written by the provider but can be changed by whoever
// may edit the Metal3Data, the tenant included, so RecordedOn trusts only
// what the tenant could use anyway: the namespaces are the data's own, and a
// Metal3ClusterIdentity is resolved again (and its admission of the data's
// namespace checked) before it is used; its recorded Secret only says which
// connection the data counts as a user of.
type Record struct {
	// ClusterIdentity is the Metal3ClusterIdentity the Secrets were written
	// through, if any.
	ClusterIdentity string `json:"clusterIdentity,omitempty"`
	SecretNamespace string `json:"secretNamespace,omitempty"`
	SecretName      string `json:"secretName,omitempty"`
	Context         string `json:"context,omitempty"`
	ObjectNamespace string `json:"objectNamespace"`
	Metal3Machine   string `json:"metal3Machine"`
	// HostClaims: the Secrets are next to a HostClaim.
	HostClaims bool `json:"hostClaims,omitempty"`
}

// Identity is the recorded identity. For a Metal3ClusterIdentity it must go
// through ClusterIdentities.Resolve before use.
func (r Record) Identity() Identity {
	mode := infrav1.HostModeBareMetalHost
	if r.HostClaims {
		mode = infrav1.HostModeHostClaim
	}
	return Identity{
		Key: Key{
			ClusterIdentity: r.ClusterIdentity,
			SecretNamespace: r.SecretNamespace, SecretName: r.SecretName, Context: r.Context,
		},
		ObjectNamespace: r.ObjectNamespace,
		Mode:            mode,
	}
}

// RecordOn notes on data that its Secrets are written through id for the
// Metal3Machine machine.
func RecordOn(data *infrav1.Metal3Data, id Identity, machine string) error {
	value, err := json.Marshal(Record{
		ClusterIdentity: id.Key.ClusterIdentity,
		SecretNamespace: id.Key.SecretNamespace, SecretName: id.Key.SecretName, Context: id.Key.Context,
		ObjectNamespace: id.ObjectNamespace, Metal3Machine: machine, HostClaims: id.UsesHostClaims(),
	})
	if err != nil {
		return err
	}
	if data.Annotations == nil {
		data.Annotations = map[string]string{}
	}
	data.Annotations[infrav1.DataIdentityAnnotation] = string(value)
	return nil
}

// RecordedOn reads what RecordOn noted; ok is false if nothing (valid) is.
// The namespaces are the data's own whatever the annotation says: a data's
// machine, and a Secret identityRef, are always in the data's namespace,
// and an edited record must not lend the data another namespace's Secret or
// admission.
func RecordedOn(data *infrav1.Metal3Data) (Record, bool) {
	var rec Record
	raw, ok := data.Annotations[infrav1.DataIdentityAnnotation]
	if !ok || json.Unmarshal([]byte(raw), &rec) != nil {
		return Record{}, false
	}
	rec.ObjectNamespace = data.Namespace
	if rec.ClusterIdentity == "" {
		rec.SecretNamespace = ""
		if rec.SecretName != "" {
			rec.SecretNamespace = data.Namespace
		}
	}
	return rec, true
}
