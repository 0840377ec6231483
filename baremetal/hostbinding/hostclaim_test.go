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

package hostbinding

import (
	"strings"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
)

// TestClaimViewTellsRefusals: what the binder refuses to pass to a claim's
// host reaches the machine as a host error, naming the reason; a pause
// does not.
func TestClaimViewTellsRefusals(t *testing.T) {
	tests := []struct {
		name   string
		synced metav1.Condition
		want   string
	}{
		{name: "refused image", synced: metav1.Condition{Status: metav1.ConditionFalse, Reason: hostclaim.ImageNotAllowedReason,
			Message: `spec.image.url: scheme "file" is not one the pool allows`}, want: `ImageNotAllowed): spec.image.url: scheme "file"`},
		{name: "paused", synced: metav1.Condition{Status: metav1.ConditionFalse, Reason: bmov1alpha1.HostPausedReason}},
		{name: "synchronized", synced: metav1.Condition{Status: metav1.ConditionTrue, Reason: bmov1alpha1.ConfigurationSyncedReason}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.synced.Type = bmov1alpha1.SynchronizedCondition
			claim := &bmov1alpha1.HostClaim{Status: bmov1alpha1.HostClaimStatus{Conditions: []metav1.Condition{tt.synced}}}
			got := claimView(claim, &bmov1alpha1.HardwareData{}).ErrorMessage
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("error message %q, want one containing %q", got, tt.want)
			}
		})
	}
}
