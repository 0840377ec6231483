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

package webhooks

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	infrav1beta1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// samplesDir holds the manifests of api/v1beta1/testdata/samples, written as
// users of upstream CAPM3 write them; every one must be admitted.
const samplesDir = "../../api/v1beta1/testdata/samples"

// admitSample decodes raw strictly into spoke, the v1beta1 object the sample
// is written as, and converts it into obj, as the API server converts a
// v1beta1 request before calling the webhooks. It then defaults obj when the
// kind has a defaulter (as the mutating webhook would), and checks that it
// is accepted on creation without warnings and on a no-op update.
func admitSample[T runtime.Object](t *testing.T, raw []byte, spoke runtime.Object, obj T, d admission.Defaulter[T], v admission.Validator[T], wantWarnings ...string) {
	t.Helper()
	ctx := context.Background()
	if err := yaml.UnmarshalStrict(raw, spoke); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	convertible, ok := spoke.(conversion.Convertible)
	if !ok {
		t.Fatalf("%T does not convert to %T", spoke, obj)
	}
	hub, ok := any(obj).(conversion.Hub)
	if !ok {
		t.Fatalf("%T is not the conversion hub", obj)
	}
	if err := convertible.ConvertTo(hub); err != nil {
		t.Fatalf("converting to %s: %v", infrav1.GroupVersion.Version, err)
	}
	if d != nil {
		if err := d.Default(ctx, obj); err != nil {
			t.Fatalf("Default: %v", err)
		}
	}
	warnings, err := v.ValidateCreate(ctx, obj)
	expectFieldErrors(t, err)
	if !slices.Equal([]string(warnings), wantWarnings) {
		t.Errorf("ValidateCreate warnings: %q, want %q", warnings, wantWarnings)
	}
	_, err = v.ValidateUpdate(ctx, obj.DeepCopyObject().(T), obj)
	expectFieldErrors(t, err)
}

// sampleAdmitters admits a sample of each kind through its webhook.
var sampleAdmitters = map[string]func(*testing.T, []byte){
	"Metal3Cluster": func(t *testing.T, raw []byte) {
		t.Helper()
		w := &Metal3Cluster{}
		admitSample(t, raw, &infrav1beta1.Metal3Cluster{}, &infrav1.Metal3Cluster{}, w, w)
	},
	"Metal3ClusterTemplate": func(t *testing.T, raw []byte) {
		t.Helper()
		w := &Metal3ClusterTemplate{}
		admitSample(t, raw, &infrav1beta1.Metal3ClusterTemplate{}, &infrav1.Metal3ClusterTemplate{}, w, w)
	},
	"Metal3ClusterIdentity": func(t *testing.T, raw []byte) {
		t.Helper()
		admitSample(t, raw, &infrav1beta1.Metal3ClusterIdentity{}, &infrav1.Metal3ClusterIdentity{}, nil, &Metal3ClusterIdentity{})
	},
	"Metal3Machine": func(t *testing.T, raw []byte) {
		t.Helper()
		w := &Metal3Machine{}
		admitSample(t, raw, &infrav1beta1.Metal3Machine{}, &infrav1.Metal3Machine{}, w, w)
	},
	"Metal3MachineTemplate": func(t *testing.T, raw []byte) {
		t.Helper()
		w := &Metal3MachineTemplate{}
		admitSample(t, raw, &infrav1beta1.Metal3MachineTemplate{}, &infrav1.Metal3MachineTemplate{}, w, w)
	},
	"Metal3DataTemplate": func(t *testing.T, raw []byte) {
		t.Helper()
		// v1beta1 requires spec.clusterName, which v1beta2 deprecates (as
		// upstream v1.14): every v1beta1 template is warned about it.
		admitSample(t, raw, &infrav1beta1.Metal3DataTemplate{}, &infrav1.Metal3DataTemplate{}, nil, &Metal3DataTemplate{}, clusterNameDeprecated)
	},
	"Metal3DataClaim": func(t *testing.T, raw []byte) {
		t.Helper()
		admitSample(t, raw, &infrav1beta1.Metal3DataClaim{}, &infrav1.Metal3DataClaim{}, nil, &Metal3DataClaim{})
	},
	"Metal3Data": func(t *testing.T, raw []byte) {
		t.Helper()
		admitSample(t, raw, &infrav1beta1.Metal3Data{}, &infrav1.Metal3Data{}, nil, &Metal3Data{})
	},
	"Metal3Remediation": func(t *testing.T, raw []byte) {
		t.Helper()
		w := &Metal3Remediation{}
		admitSample(t, raw, &infrav1beta1.Metal3Remediation{}, &infrav1.Metal3Remediation{}, w, w)
	},
	"Metal3RemediationTemplate": func(t *testing.T, raw []byte) {
		t.Helper()
		w := &Metal3RemediationTemplate{}
		admitSample(t, raw, &infrav1beta1.Metal3RemediationTemplate{}, &infrav1.Metal3RemediationTemplate{}, w, w)
	},
}

func TestSamplesAreAdmitted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(samplesDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no samples in %s", samplesDir)
	}
	sort.Strings(files)
	seen := map[string]bool{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			j, err := yaml.YAMLToJSON(raw)
			if err != nil {
				t.Fatal(err)
			}
			var meta struct{ Kind string }
			if err := json.Unmarshal(j, &meta); err != nil {
				t.Fatal(err)
			}
			admit, ok := sampleAdmitters[meta.Kind]
			if !ok {
				t.Fatalf("no webhook for kind %q", meta.Kind)
			}
			seen[meta.Kind] = true
			admit(t, raw)
		})
	}
	for kind := range sampleAdmitters {
		if !seen[kind] {
			t.Errorf("no sample of kind %s was admitted", kind)
		}
	}
}

// TestEveryKindIsAdmittedBySamples keeps sampleAdmitters in step with the API:
// a new kind must get a webhook and a sample.
func TestEveryKindIsAdmittedBySamples(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := infrav1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for kind := range scheme.KnownTypes(infrav1.GroupVersion) {
		if !strings.HasPrefix(kind, "Metal3") || strings.HasSuffix(kind, "List") {
			continue
		}
		if _, ok := sampleAdmitters[kind]; !ok {
			t.Errorf("kind %s has no webhook test", kind)
		}
	}
}
