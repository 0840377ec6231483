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

package v1beta1_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	infrav1beta1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
)

// samplesDir holds one manifest per file, written the way a user of
// upstream CAPM3 v1beta1 writes them. Users' existing manifests must apply
// unchanged, so every field they use must exist in the Go types and survive
// a decode/encode round trip.
const samplesDir = "testdata/samples"

// allKinds are the kinds of this API version; each needs at least one sample.
var allKinds = []string{
	"Metal3Cluster",
	"Metal3ClusterTemplate",
	"Metal3ClusterIdentity",
	"Metal3Machine",
	"Metal3MachineTemplate",
	"Metal3DataTemplate",
	"Metal3DataClaim",
	"Metal3Data",
	"Metal3Remediation",
	"Metal3RemediationTemplate",
}

// clusterScopedKinds have no namespace; their samples must not set one.
var clusterScopedKinds = map[string]bool{"Metal3ClusterIdentity": true}

// identityRefPaths says where each kind that supports identityRef carries it;
// each of these kinds needs at least one sample that sets it.
var identityRefPaths = map[string][]string{
	"Metal3Cluster":         {"spec", "identityRef"},
	"Metal3ClusterTemplate": {"spec", "template", "spec", "identityRef"},
	"Metal3Machine":         {"spec", "identityRef"},
	"Metal3MachineTemplate": {"spec", "template", "spec", "identityRef"},
}

// durationPaths are fields of type metav1.Duration. Go writes a duration in
// its canonical form ("300s" comes back as "5m0s"), so these are compared by
// value rather than by spelling.
var durationPaths = [][]string{
	{"spec", "strategy", "timeout"},
	{"spec", "template", "spec", "strategy", "timeout"},
}

type sample struct {
	file string
	raw  []byte
	obj  map[string]any // the manifest as generic JSON
}

func (s sample) kind() string { v, _ := s.obj["kind"].(string); return v }

func loadSamples(t *testing.T) []sample {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(samplesDir, "*.yaml"))
	if err != nil {
		t.Fatalf("listing samples: %v", err)
	}
	if len(files) == 0 {
		t.Fatalf("no samples found in %s", samplesDir)
	}
	sort.Strings(files)
	samples := make([]sample, 0, len(files))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("reading %s: %v", f, err)
		}
		obj, err := yamlToMap(raw)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		samples = append(samples, sample{file: filepath.Base(f), raw: raw, obj: obj})
	}
	return samples
}

// yamlToMap converts YAML into the generic map the API server would see,
// rejecting duplicate keys.
func yamlToMap(raw []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := infrav1beta1.AddToScheme(scheme); err != nil {
		t.Fatalf("AddToScheme: %v", err)
	}
	return scheme
}

// roundTrip decodes raw strictly into the Go type registered for its kind and
// encodes it back to a generic map. Strict decoding fails on any field the Go
// types lack; encoding/json matches field names case-insensitively, so a
// mis-cased field decodes but is then caught by the comparison, as it comes
// back spelt differently.
func roundTrip(scheme *runtime.Scheme, raw []byte, kind string) (map[string]any, error) {
	obj, err := scheme.New(infrav1beta1.GroupVersion.WithKind(kind))
	if err != nil {
		return nil, err
	}
	if err := yaml.UnmarshalStrict(raw, obj); err != nil {
		return nil, err
	}
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// normalize makes semantically equal documents compare equal:
//   - an object with nothing in it is dropped: the Go types write
//     "status: {}" and "hostSelector: {}" (struct fields without omitzero)
//     where a manifest leaves them out, which loses nothing;
//   - durations are rewritten in Go's canonical form.
//
// Anything else that differs is a real loss or change of data.
func normalize(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	for _, path := range durationPaths {
		parent := lookup(m, path[:len(path)-1])
		p, ok := parent.(map[string]any)
		if !ok {
			continue
		}
		key := path[len(path)-1]
		s, ok := p[key].(string)
		if !ok {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Errorf("%s: %q is not a duration: %v", strings.Join(path, "."), s, err)
			continue
		}
		p[key] = d.String()
	}
	pruneEmptyObjects(m)
	return m
}

func pruneEmptyObjects(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			pruneEmptyObjects(child)
			if c, ok := child.(map[string]any); ok && len(c) == 0 {
				delete(v, k)
			}
		}
	case []any:
		for _, child := range v {
			pruneEmptyObjects(child)
		}
	}
}

func lookup(m map[string]any, path []string) any {
	var cur any = m
	for _, p := range path {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur, ok = obj[p]
		if !ok {
			return nil
		}
	}
	return cur
}

func TestSamplesRoundTrip(t *testing.T) {
	scheme := newScheme(t)
	for _, s := range loadSamples(t) {
		t.Run(s.file, func(t *testing.T) {
			if got, want := s.obj["apiVersion"], infrav1beta1.GroupVersion.String(); got != want {
				t.Errorf("apiVersion = %v, want %s", got, want)
			}
			if s.kind() == "" {
				t.Fatalf("sample has no kind")
			}
			if name := lookup(s.obj, []string{"metadata", "name"}); name == nil || name == "" {
				t.Errorf("sample has no metadata.name")
			}
			ns := lookup(s.obj, []string{"metadata", "namespace"})
			switch {
			case clusterScopedKinds[s.kind()] && ns != nil:
				t.Errorf("metadata.namespace = %v, want none: %s is cluster-scoped", ns, s.kind())
			case !clusterScopedKinds[s.kind()] && ns != "tenant-a":
				t.Errorf("metadata.namespace = %v, want tenant-a", ns)
			}

			got, err := roundTrip(scheme, s.raw, s.kind())
			if err != nil {
				t.Fatalf("strict decode into %s failed (a field the Go types lack?): %v", s.kind(), err)
			}
			want, err := yamlToMap(s.raw)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(normalize(t, want), normalize(t, got)); diff != "" {
				t.Errorf("%s does not survive a round trip through the Go types (-manifest +re-encoded):\n%s", s.file, diff)
			}
		})
	}
}

func TestSamplesCoverEveryKind(t *testing.T) {
	samples := loadSamples(t)
	byKind := map[string][]string{}
	withIdentity := map[string][]string{}
	for _, s := range samples {
		byKind[s.kind()] = append(byKind[s.kind()], s.file)
		if path, ok := identityRefPaths[s.kind()]; ok && lookup(s.obj, path) != nil {
			withIdentity[s.kind()] = append(withIdentity[s.kind()], s.file)
		}
	}
	for _, kind := range allKinds {
		if len(byKind[kind]) == 0 {
			t.Errorf("no sample of kind %s in %s", kind, samplesDir)
		}
	}
	for kind, path := range identityRefPaths {
		if len(withIdentity[kind]) == 0 {
			t.Errorf("no sample of kind %s sets %s", kind, strings.Join(path, "."))
		}
	}
	known := map[string]bool{}
	for _, kind := range allKinds {
		known[kind] = true
	}
	for kind, files := range byKind {
		if !known[kind] {
			t.Errorf("samples %v have unknown kind %q", files, kind)
		}
	}
}

// TestRoundTripDetectsLoss checks the round trip itself: a manifest with a
// field the types lack, a key given twice (a lenient decoder keeps the last
// value and drops the other), or a field spelt with the wrong case, must
// not pass.
func TestRoundTripDetectsLoss(t *testing.T) {
	scheme := newScheme(t)
	tests := []struct {
		name     string
		manifest string
		// wantErr is part of the error strict decoding must fail with; ""
		// means the manifest decodes and the comparison must tell.
		wantErr string
	}{
		{
			name: "unknown field",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3Machine
metadata: {name: m, namespace: tenant-a}
spec:
  customDeploy: {method: install_coreos}
  imageURL: http://172.22.0.1/images/ubuntu-22.04.qcow2
`,
			wantErr: `unknown field "imageURL"`,
		},
		{
			name: "duplicate key",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3Remediation
metadata: {name: r, namespace: tenant-a}
spec:
  strategy:
    retryLimit: 1
    retryLimit: 2
`,
			wantErr: `key "retryLimit" already set in map`,
		},
		{
			name: "mis-cased field decodes but changes on the way back",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3Machine
metadata: {name: m, namespace: tenant-a}
spec:
  customDeploy: {method: install_coreos}
  userdata: {name: ignition}
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.manifest)
			// The kind is read leniently, so that every manifest, the
			// duplicate key's too, reaches roundTrip.
			var typeMeta metav1.TypeMeta
			if err := yaml.Unmarshal(raw, &typeMeta); err != nil {
				t.Fatalf("read kind: %v", err)
			}
			got, err := roundTrip(scheme, raw, typeMeta.Kind)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("roundTrip error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			want, err := yamlToMap(raw)
			if err != nil {
				t.Fatal(err)
			}
			if cmp.Diff(normalize(t, want), normalize(t, got)) == "" {
				t.Fatalf("round trip reported no difference")
			}
		})
	}
}

func TestAddToSchemeRegistersEveryKind(t *testing.T) {
	scheme := newScheme(t)
	for _, kind := range allKinds {
		for _, k := range []string{kind, kind + "List"} {
			gvk := infrav1beta1.GroupVersion.WithKind(k)
			if !scheme.Recognizes(gvk) {
				t.Errorf("%s is not registered by AddToScheme", gvk)
				continue
			}
			obj, err := scheme.New(gvk)
			if err != nil {
				t.Errorf("scheme.New(%s): %v", gvk, err)
				continue
			}
			if got := strings.TrimPrefix(typeName(obj), "*v1beta1."); got != k {
				t.Errorf("scheme.New(%s) returned %s", gvk, typeName(obj))
			}
		}
	}
	// Nothing else that looks like a kind of ours is registered.
	want := map[string]bool{}
	for _, kind := range allKinds {
		want[kind], want[kind+"List"] = true, true
	}
	for k := range scheme.KnownTypes(infrav1beta1.GroupVersion) {
		if strings.HasPrefix(k, "Metal3") && !want[k] {
			t.Errorf("unexpected kind %s registered", k)
		}
	}
}

func typeName(obj runtime.Object) string { return fmt.Sprintf("%T", obj) }
