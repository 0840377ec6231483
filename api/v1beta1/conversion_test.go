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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
// v1beta2 → v1beta1 and v1beta2 → v1beta1 → v1beta2 and wants each back as
// it was. machineFuzzerFuncs lists the v1beta1 spellings that v1beta2 cannot
// tell apart and that mean the same thing; nothing else may change.
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

func machineFuzzerFuncs(_ runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		spokeMetal3MachineSpec,
		spokeMetal3MachineStatus,
		spokeAPIEndpoint,
		spokeRemediationStrategy,
		spokeMetal3RemediationStatus,
		hubMetal3ClusterSpec,
		hubMetal3RemediationStatus,
	}
}

// hubMetal3RemediationStatus: a zero time is written as null, so the API
// server never holds a set but zero lastRemediated.
func hubMetal3RemediationStatus(in *infrav1.Metal3RemediationStatus, c randfill.Continue) {
	c.FillNoCustom(in)
	if in.LastRemediated != nil && in.LastRemediated.IsZero() {
		in.LastRemediated = nil
	}
}

// spokeMetal3MachineSpec: v1beta2 holds these as plain values, so a pointer
// to "" (or to an empty custom deploy) and no pointer say the same; an empty
// selector map is no selector; of a data template reference the provider
// reads the name and namespace only.
func spokeMetal3MachineSpec(in *Metal3MachineSpec, c randfill.Continue) {
	c.FillNoCustom(in)
	in.ProviderID = nonEmpty(in.ProviderID)
	in.AutomatedCleaningMode = nonEmpty(in.AutomatedCleaningMode)
	in.Image.ChecksumType = nonEmpty(in.Image.ChecksumType)
	in.Image.DiskFormat = nonEmpty(in.Image.DiskFormat)
	if in.CustomDeploy != nil && in.CustomDeploy.Method == "" {
		in.CustomDeploy = nil
	}
	if len(in.HostSelector.MatchLabels) == 0 {
		in.HostSelector.MatchLabels = nil
	}
	if len(in.HostSelector.MatchExpressions) == 0 {
		in.HostSelector.MatchExpressions = nil
	}
	in.DataTemplate = nameAndNamespace(in.DataTemplate)
}

func spokeMetal3MachineStatus(in *Metal3MachineStatus, c randfill.Continue) {
	c.FillNoCustom(in)
	in.RenderedData = nameAndNamespace(in.RenderedData)
}

// spokeAPIEndpoint: a port is an int32 in v1beta2 (and at most 65535).
func spokeAPIEndpoint(in *APIEndpoint, c randfill.Continue) {
	c.FillNoCustom(in)
	in.Port = int(int32(in.Port))
}

// spokeRemediationStrategy: v1beta2 counts whole seconds and int32 retries;
// a zero timeout is no timeout.
func spokeRemediationStrategy(in *RemediationStrategy, c randfill.Continue) {
	c.FillNoCustom(in)
	in.RetryLimit = int(int32(in.RetryLimit))
	if in.Timeout != nil {
		in.Timeout.Duration = time.Duration(int32(in.Timeout.Duration/time.Second)) * time.Second
		if in.Timeout.Duration == 0 {
			in.Timeout = nil
		}
	}
}

func spokeMetal3RemediationStatus(in *Metal3RemediationStatus, c randfill.Continue) {
	c.FillNoCustom(in)
	in.RetryCount = int(int32(in.RetryCount))
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

func nonEmpty(s *string) *string {
	if s != nil && *s == "" {
		return nil
	}
	return s
}

func nameAndNamespace(ref *corev1.ObjectReference) *corev1.ObjectReference {
	if ref == nil {
		return nil
	}
	return &corev1.ObjectReference{Name: ref.Name, Namespace: ref.Namespace}
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
