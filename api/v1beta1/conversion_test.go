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

package v1beta1

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	utilconversion "sigs.k8s.io/cluster-api/util/conversion"
	"sigs.k8s.io/randfill"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// hubAndSpokeScheme holds both versions, as the conversion webhook's does.
func hubAndSpokeScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := infrav1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// TestFuzzyConversion converts 10,000 random objects of each kind v1beta1 →
// v1beta2 → v1beta1 and v1beta2 → v1beta1 → v1beta2 and wants each back
// exactly as it was.
func TestFuzzyConversion(t *testing.T) {
	scheme := hubAndSpokeScheme(t)
	for _, tc := range []struct {
		name string
		hub  utilconversion.FuzzTestFuncInput
	}{
		{"Metal3Cluster", utilconversion.FuzzTestFuncInput{Hub: &infrav1.Metal3Cluster{}, Spoke: &Metal3Cluster{}}},
		{"Metal3ClusterTemplate", utilconversion.FuzzTestFuncInput{Hub: &infrav1.Metal3ClusterTemplate{}, Spoke: &Metal3ClusterTemplate{}}},
		{"Metal3Machine", utilconversion.FuzzTestFuncInput{Hub: &infrav1.Metal3Machine{}, Spoke: &Metal3Machine{}}},
		{"Metal3MachineTemplate", utilconversion.FuzzTestFuncInput{Hub: &infrav1.Metal3MachineTemplate{}, Spoke: &Metal3MachineTemplate{}}},
		{"Metal3Remediation", utilconversion.FuzzTestFuncInput{Hub: &infrav1.Metal3Remediation{}, Spoke: &Metal3Remediation{}}},
		{"Metal3RemediationTemplate", utilconversion.FuzzTestFuncInput{Hub: &infrav1.Metal3RemediationTemplate{}, Spoke: &Metal3RemediationTemplate{}}},
		{"Metal3ClusterIdentity", utilconversion.FuzzTestFuncInput{Hub: &infrav1.Metal3ClusterIdentity{}, Spoke: &Metal3ClusterIdentity{}}},
	} {
		input := tc.hub
		input.Scheme = scheme
		input.FuzzerFuncs = []fuzzer.FuzzerFuncs{machineFuzzerFuncs}
		t.Run(tc.name, utilconversion.FuzzTestFunc(input))
	}
}

// machineFuzzerFuncs hold the v1beta2 objects to what an API server can
// hold; v1beta1 objects need none: whatever v1beta2 cannot say is recorded
// in V1beta1DataAnnotation and given back.
func machineFuzzerFuncs(_ runtimeserializer.CodecFactory) []interface{} {
	return append([]interface{}{hubMetal3ClusterSpec}, jsonShapedKinds...)
}

// jsonShapedKinds fill every kind, both versions, in the shape JSON gives
// it (jsonShaped).
var jsonShapedKinds = []interface{}{
	jsonShaped[Metal3Cluster], jsonShaped[infrav1.Metal3Cluster],
	jsonShaped[Metal3ClusterTemplate], jsonShaped[infrav1.Metal3ClusterTemplate],
	jsonShaped[Metal3ClusterIdentity], jsonShaped[infrav1.Metal3ClusterIdentity],
	jsonShaped[Metal3Machine], jsonShaped[infrav1.Metal3Machine],
	jsonShaped[Metal3MachineTemplate], jsonShaped[infrav1.Metal3MachineTemplate],
	jsonShaped[Metal3DataTemplate], jsonShaped[infrav1.Metal3DataTemplate],
	jsonShaped[Metal3Data], jsonShaped[infrav1.Metal3Data],
	jsonShaped[Metal3DataClaim], jsonShaped[infrav1.Metal3DataClaim],
	jsonShaped[Metal3Remediation], jsonShaped[infrav1.Metal3Remediation],
	jsonShaped[Metal3RemediationTemplate], jsonShaped[infrav1.Metal3RemediationTemplate],
}

// jsonShaped fills a T, then gives it the shape JSON gives it: the API
// server stores every object as JSON, which does not tell an empty list,
// map or time from none (omitempty) nor keep a time's fraction of a
// second, so no object it serves has them; nor do conversions, which keep
// what they cannot otherwise say in JSON annotations.
func jsonShaped[T any](in *T, c randfill.Continue) {
	c.FillNoCustom(in)
	data, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	var shaped T
	if err := json.Unmarshal(data, &shaped); err != nil {
		panic(err)
	}
	*in = shaped
}

// hubMetal3ClusterSpec: failure domains are a list keyed by name (the API
// server refuses two of one name), so v1beta1's map holds them all.
func hubMetal3ClusterSpec(in *infrav1.Metal3ClusterSpec, c randfill.Continue) {
	c.FillNoCustom(in)
	seen := map[string]bool{}
	var unique []clusterv1.FailureDomain
	for _, fd := range in.FailureDomains {
		if !seen[fd.Name] {
			seen[fd.Name] = true
			unique = append(unique, fd)
		}
	}
	if in.FailureDomains != nil && unique == nil {
		unique = []clusterv1.FailureDomain{}
	}
	in.FailureDomains = unique
}

// TestNoCloudProviderSurvivesV1beta2 pins what v1beta2 makes of v1beta1's
// deprecated noCloudProvider, and that v1beta1 reads it back as written.
func TestNoCloudProviderSurvivesV1beta2(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		noCloudProvider      *bool
		cloudProviderEnabled *bool
		wantEnabled          *bool
	}{
		{name: "noCloudProvider alone decides", noCloudProvider: new(true), wantEnabled: new(false)},
		{name: "noCloudProvider false enables", noCloudProvider: new(false), wantEnabled: new(true)},
		{name: "cloudProviderEnabled wins when both are set", noCloudProvider: new(true), cloudProviderEnabled: new(true), wantEnabled: new(true)},
		{name: "neither: v1beta2 default", wantEnabled: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spoke := &Metal3Cluster{
				ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
				Spec:       Metal3ClusterSpec{NoCloudProvider: tc.noCloudProvider, CloudProviderEnabled: tc.cloudProviderEnabled},
			}
			hub := &infrav1.Metal3Cluster{}
			if err := spoke.DeepCopy().ConvertTo(hub); err != nil {
				t.Fatal(err)
			}
			if got := hub.Spec.CloudProviderEnabled; (got == nil) != (tc.wantEnabled == nil) || (got != nil && *got != *tc.wantEnabled) {
				t.Errorf("v1beta2 cloudProviderEnabled = %v, want %v", ptrString(got), ptrString(tc.wantEnabled))
			}
			back := &Metal3Cluster{}
			if err := back.ConvertFrom(hub); err != nil {
				t.Fatal(err)
			}
			delete(back.Annotations, utilconversion.DataAnnotation)
			if ptrString(back.Spec.NoCloudProvider) != ptrString(tc.noCloudProvider) || ptrString(back.Spec.CloudProviderEnabled) != ptrString(tc.cloudProviderEnabled) {
				t.Errorf("v1beta1 read back noCloudProvider=%s cloudProviderEnabled=%s, want %s %s",
					ptrString(back.Spec.NoCloudProvider), ptrString(back.Spec.CloudProviderEnabled),
					ptrString(tc.noCloudProvider), ptrString(tc.cloudProviderEnabled))
			}
			if len(back.Annotations) != 0 {
				t.Errorf("v1beta1 shows the provider's bookkeeping annotations: %v", back.Annotations)
			}
		})
	}
}

func ptrString(b *bool) string {
	if b == nil {
		return "unset"
	}
	if *b {
		return "true"
	}
	return "false"
}
