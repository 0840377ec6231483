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
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

func TestClusterIdentitiesResolve(t *testing.T) {
	scheme := k8sruntime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	_ = infrav1.AddToScheme(scheme)
	namespace := func(name string, labels map[string]string) *corev1.Namespace {
		all := map[string]string{corev1.LabelMetadataName: name}
		for k, v := range labels {
			all[k] = v
		}
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: all}}
	}
	clusterIdentity := func(name, secretNamespace string, allowed *infrav1.AllowedNamespaces) *infrav1.Metal3ClusterIdentity {
		return &infrav1.Metal3ClusterIdentity{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: infrav1.Metal3ClusterIdentitySpec{
				SecretRef:         infrav1.KubeconfigSecretReference{Name: name + "-kubeconfig", Namespace: secretNamespace, Context: "pools"},
				AllowedNamespaces: allowed,
			},
		}
	}
	east := &metav1.LabelSelector{MatchLabels: map[string]string{"metal3.io/pool": "east"}}
	objects := []client.Object{
		namespace("tenant-a", map[string]string{"metal3.io/pool": "east"}),
		namespace("tenant-b", nil),
		clusterIdentity("listed", "", &infrav1.AllowedNamespaces{List: []string{"tenant-b"}}),
		clusterIdentity("selected", "pools-admin", &infrav1.AllowedNamespaces{Selector: east}),
		clusterIdentity("everyone", "", &infrav1.AllowedNamespaces{Selector: &metav1.LabelSelector{}}),
		clusterIdentity("closed", "", nil),
		func() *infrav1.Metal3ClusterIdentity {
			ci := clusterIdentity("claims-only", "", &infrav1.AllowedNamespaces{Selector: &metav1.LabelSelector{}})
			ci.Spec.AllowedHostModes = []infrav1.HostMode{infrav1.HostModeHostClaim}
			return ci
		}(),
		clusterIdentity("broken", "", &infrav1.AllowedNamespaces{Selector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}),
	}
	resolver := &ClusterIdentities{
		Reader:            fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build(),
		ProviderNamespace: "capm3-system",
	}
	resolved := func(name, secretNamespace string) Key {
		return Key{ClusterIdentity: name, SecretNamespace: secretNamespace, SecretName: name + "-kubeconfig", Context: "pools"}
	}

	tests := []struct {
		name       string
		key        Key
		namespace  string
		mode       infrav1.HostMode
		want       Key
		wantReason string
		wantInMsg  []string
	}{
		{name: "a Secret identityRef is left as it is", key: Key{SecretNamespace: "tenant-b", SecretName: "own"}, namespace: "tenant-b",
			want: Key{SecretNamespace: "tenant-b", SecretName: "own"}},
		{name: "in-cluster is left as it is", key: InCluster, namespace: "tenant-b", want: InCluster},
		{name: "listed namespace, Secret in the provider's namespace", key: Key{ClusterIdentity: "listed"}, namespace: "tenant-b",
			want: resolved("listed", "capm3-system")},
		{name: "selected namespace, Secret in the namespace secretRef names", key: Key{ClusterIdentity: "selected"}, namespace: "tenant-a",
			want: resolved("selected", "pools-admin")},
		{name: "an empty selector admits every namespace", key: Key{ClusterIdentity: "everyone"}, namespace: "tenant-b",
			want: resolved("everyone", "capm3-system")},
		{name: "not listed", key: Key{ClusterIdentity: "listed"}, namespace: "tenant-a",
			want: Key{ClusterIdentity: "listed"}, wantReason: infrav1.IdentityNamespaceNotAllowedReason,
			wantInMsg: []string{"Metal3ClusterIdentity listed", "namespace tenant-a"}},
		{name: "labels do not match", key: Key{ClusterIdentity: "selected"}, namespace: "tenant-b",
			want: Key{ClusterIdentity: "selected"}, wantReason: infrav1.IdentityNamespaceNotAllowedReason,
			wantInMsg: []string{"Metal3ClusterIdentity selected", "namespace tenant-b"}},
		{name: "no allowedNamespaces admits none", key: Key{ClusterIdentity: "closed"}, namespace: "tenant-a",
			want: Key{ClusterIdentity: "closed"}, wantReason: infrav1.IdentityNamespaceNotAllowedReason},
		{name: "a selector that does not parse admits none", key: Key{ClusterIdentity: "broken"}, namespace: "tenant-a",
			want: Key{ClusterIdentity: "broken"}, wantReason: infrav1.IdentityNamespaceNotAllowedReason,
			wantInMsg: []string{"cannot be evaluated"}},
		{name: "a namespace that is gone is admitted by no selector", key: Key{ClusterIdentity: "everyone"}, namespace: "gone",
			want: Key{ClusterIdentity: "everyone"}, wantReason: infrav1.IdentityNamespaceNotAllowedReason},
		{name: "missing identity", key: Key{ClusterIdentity: "nope"}, namespace: "tenant-a",
			want: Key{ClusterIdentity: "nope"}, wantReason: infrav1.IdentityNotFoundReason,
			wantInMsg: []string{"Metal3ClusterIdentity nope not found"}},
		// A key read back from a status or a Metal3Data record is no
		// proof: the identity is read again.
		{name: "a recorded key is resolved again", key: Key{ClusterIdentity: "listed", SecretNamespace: "tenant-b", SecretName: "forged"},
			namespace: "tenant-b", want: resolved("listed", "capm3-system")},
		{name: "a recorded key does not lend admission", key: resolved("listed", "capm3-system"), namespace: "tenant-a",
			want: Key{ClusterIdentity: "listed"}, wantReason: infrav1.IdentityNamespaceNotAllowedReason},
		// The attack: a tenant given an identity meant for HostClaim mode
		// asks for BareMetalHost mode, to read hosts and BMC addresses
		// wherever the kubeconfig's Role allows.
		{name: "an identity for HostClaim mode, used in it", key: Key{ClusterIdentity: "claims-only"}, namespace: "tenant-a",
			mode: infrav1.HostModeHostClaim, want: resolved("claims-only", "capm3-system")},
		{name: "an identity for HostClaim mode, asked for BareMetalHost mode", key: Key{ClusterIdentity: "claims-only"}, namespace: "tenant-a",
			mode: infrav1.HostModeBareMetalHost, want: Key{ClusterIdentity: "claims-only"}, wantReason: infrav1.IdentityHostModeNotAllowedReason,
			wantInMsg: []string{"host mode BareMetalHost", "allowedHostModes"}},
		{name: "an identity for HostClaim mode, the default mode asked", key: Key{ClusterIdentity: "claims-only"}, namespace: "tenant-a",
			want: Key{ClusterIdentity: "claims-only"}, wantReason: infrav1.IdentityHostModeNotAllowedReason},
		{name: "no allowedHostModes: both", key: Key{ClusterIdentity: "everyone"}, namespace: "tenant-a",
			mode: infrav1.HostModeHostClaim, want: resolved("everyone", "capm3-system")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolver.Resolve(context.Background(), Identity{Key: tt.key, ObjectNamespace: tt.namespace, Mode: tt.mode})
			if got.Key != tt.want || got.ObjectNamespace != tt.namespace {
				t.Errorf("resolved to %+v in %s, want %+v in %s", got.Key, got.ObjectNamespace, tt.want, tt.namespace)
			}
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			ie, ok := AsError(err)
			if !ok || ie.Reason != tt.wantReason || !ie.Terminal {
				t.Fatalf("err = %v, want a terminal identity error with reason %s", err, tt.wantReason)
			}
			for _, want := range tt.wantInMsg {
				if !strings.Contains(ie.Message, want) {
					t.Errorf("message %q does not mention %q", ie.Message, want)
				}
			}
		})
	}
}

func TestKeys(t *testing.T) {
	unresolved := Key{ClusterIdentity: "pool-east"}
	viaIdentity := Key{ClusterIdentity: "pool-east", SecretNamespace: "capm3-system", SecretName: "east", Context: "c"}
	viaOtherIdentity := Key{ClusterIdentity: "pool-east-2", SecretNamespace: "capm3-system", SecretName: "east", Context: "c"}
	direct := Key{SecretNamespace: "capm3-system", SecretName: "east", Context: "c"}
	tests := []struct {
		name                   string
		key                    Key
		inCluster, isResolved  bool
		sameConnectionAsDirect bool
		str                    string
	}{
		{name: "in-cluster", key: InCluster, inCluster: true, isResolved: true, str: "in-cluster"},
		{name: "an unresolved cluster identity is never in-cluster", key: unresolved, str: "Metal3ClusterIdentity pool-east"},
		{name: "a resolved cluster identity", key: viaIdentity, isResolved: true, sameConnectionAsDirect: true,
			str: `Metal3ClusterIdentity pool-east (secret capm3-system/east context "c")`},
		{name: "another identity on the same Secret", key: viaOtherIdentity, isResolved: true, sameConnectionAsDirect: true},
		{name: "the Secret itself", key: direct, isResolved: true, sameConnectionAsDirect: true, str: `secret capm3-system/east context "c"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.key.IsInCluster(); got != tt.inCluster {
				t.Errorf("IsInCluster = %v", got)
			}
			if got := tt.key.Resolved(); got != tt.isResolved {
				t.Errorf("Resolved = %v", got)
			}
			if got := tt.key.SameConnection(direct); got != tt.sameConnectionAsDirect {
				t.Errorf("SameConnection = %v", got)
			}
			if tt.str != "" && tt.key.String() != tt.str {
				t.Errorf("String = %q, want %q", tt.key.String(), tt.str)
			}
		})
	}
	// Keys are map keys: identities differ, their connection is one.
	keys := map[Key]bool{viaIdentity: true, viaOtherIdentity: true, direct: true}
	connections := map[Key]bool{}
	for key := range keys {
		connections[key.Connection()] = true
	}
	if len(keys) != 3 || len(connections) != 1 {
		t.Errorf("%d keys, %d connections; want 3 and 1", len(keys), len(connections))
	}
	if unresolved.SameConnection(InCluster) || InCluster.SameConnection(unresolved) {
		t.Error("an unresolved cluster identity shares the in-cluster connection")
	}
}

// TestIndexValues: what RefIndex and UsedIndex hold for each kind of
// identityRef and status, and that readers looking up a Secret by name
// (identity Secret protection) find only refs of kind Secret.
func TestIndexValues(t *testing.T) {
	t.Run("RefIndex", func(t *testing.T) {
		tests := []struct {
			name string
			ref  *infrav1.IdentityRef
			want []string
		}{
			{name: "none", ref: nil, want: nil},
			{name: "Secret by default", ref: &infrav1.IdentityRef{Name: "pool"}, want: []string{"pool"}},
			{name: "Secret", ref: &infrav1.IdentityRef{Kind: infrav1.IdentityKindSecret, Name: "pool", Context: "c"}, want: []string{"pool"}},
			{name: "Metal3ClusterIdentity", ref: &infrav1.IdentityRef{Kind: infrav1.IdentityKindMetal3ClusterIdentity, Name: "pool"},
				want: []string{"clusteridentity/pool", AnyClusterIdentity}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if got := refValues(tt.ref); !slices.Equal(got, tt.want) {
					t.Errorf("values = %q, want %q", got, tt.want)
				}
			})
		}
	})
	t.Run("UsedIndex round trip through status", func(t *testing.T) {
		tests := []struct {
			name string
			id   Identity
			want []string
		}{
			{name: "in-cluster", id: Identity{ObjectNamespace: "tenant-a"}, want: []string{"key/in-cluster"}},
			{name: "Secret", id: Identity{Key: Key{SecretNamespace: "tenant-a", SecretName: "pool", Context: "c"}, ObjectNamespace: "tenant-a"},
				want: []string{"secret/tenant-a/pool", "key/tenant-a/pool/c"}},
			{name: "cluster identity, not admitted", id: Identity{Key: Key{ClusterIdentity: "east"}, ObjectNamespace: "tenant-a"},
				want: []string{"clusteridentity/east", AnyClusterIdentity}},
			{name: "cluster identity, resolved: the same connection values as its Secret's",
				id:   Identity{Key: Key{ClusterIdentity: "east", SecretNamespace: "capm3-system", SecretName: "pool", Context: "c"}, ObjectNamespace: "tenant-a"},
				want: []string{"clusteridentity/east", AnyClusterIdentity, "secret/capm3-system/pool", "key/capm3-system/pool/c"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				status := Status(tt.id, "hosts")
				key, ok := KeyFromStatus(status, tt.id.ObjectNamespace)
				if !ok || key != tt.id.Key {
					t.Fatalf("status %+v reads back as %+v, want %+v", status, key, tt.id.Key)
				}
				if got := usedValues(key); !slices.Equal(got, tt.want) {
					t.Errorf("values = %q, want %q", got, tt.want)
				}
			})
		}
	})
}

// TestRecordedOn: a Metal3Data's record keeps its cluster identity, and an
// edited record lends the data neither another namespace nor a Secret.
func TestRecordedOn(t *testing.T) {
	data := &infrav1.Metal3Data{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "worker-0"}}
	viaIdentity := Identity{
		Key:             Key{ClusterIdentity: "east", SecretNamespace: "capm3-system", SecretName: "pool", Context: "c"},
		ObjectNamespace: "tenant-a", Mode: infrav1.HostModeBareMetalHost,
	}
	if err := RecordOn(data, viaIdentity, "worker-0"); err != nil {
		t.Fatal(err)
	}
	rec, ok := RecordedOn(data)
	if !ok || rec.Identity() != viaIdentity {
		t.Fatalf("recorded %+v, want %+v", rec.Identity(), viaIdentity)
	}

	forged := map[string]string{
		"another namespace's Secret": `{"secretNamespace":"tenant-b","secretName":"pool-b","objectNamespace":"tenant-b","metal3Machine":"w"}`,
		"a namespace for no Secret":  `{"secretNamespace":"tenant-b","objectNamespace":"tenant-b","metal3Machine":"w"}`,
		"another admitted namespace": `{"clusterIdentity":"east","secretNamespace":"capm3-system","secretName":"pool","context":"c","objectNamespace":"tenant-b","metal3Machine":"w"}`,
	}
	want := map[string]Key{
		"another namespace's Secret": {SecretNamespace: "tenant-a", SecretName: "pool-b"},
		"a namespace for no Secret":  InCluster,
		"another admitted namespace": viaIdentity.Key, // resolved again, for tenant-a, before use
	}
	for name, raw := range forged {
		t.Run(name, func(t *testing.T) {
			data.Annotations[infrav1.DataIdentityAnnotation] = raw
			rec, ok := RecordedOn(data)
			if !ok {
				t.Fatal("record not read")
			}
			if id := rec.Identity(); id.Key != want[name] || id.ObjectNamespace != "tenant-a" {
				t.Errorf("identity = %+v in %s, want %+v in tenant-a", id.Key, id.ObjectNamespace, want[name])
			}
		})
	}
}
