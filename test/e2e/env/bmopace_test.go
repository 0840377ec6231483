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

package env

import (
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWaitingFor(t *testing.T) {
	image := &bmov1alpha1.Image{URL: "http://172.22.0.1/images/node.qcow2"}
	now := metav1.Now()
	tests := []struct {
		name        string
		state       bmov1alpha1.ProvisioningState
		image       *bmov1alpha1.Image
		online      bool
		poweredOn   bool
		annotations map[string]string
		deleting    bool
		errored     bool
		want        string
	}{
		{name: "provisioned and on: settled", state: bmov1alpha1.StateProvisioned, image: image, online: true, poweredOn: true},
		{name: "available and off: settled", state: bmov1alpha1.StateAvailable, online: false},
		{name: "provisioned, asked to be on, off", state: bmov1alpha1.StateProvisioned, image: image, online: true,
			want: "power on in provisioned"},
		{name: "given an image while available", state: bmov1alpha1.StateAvailable, image: image, online: true,
			want: "provisioning in available"},
		{name: "provisioning", state: bmov1alpha1.StateProvisioning, image: image, online: true,
			want: "provisioning in provisioning"},
		{name: "image removed while provisioned", state: bmov1alpha1.StateProvisioned, online: false, poweredOn: true,
			want: "deprovisioning in provisioned"},
		{name: "deprovisioning", state: bmov1alpha1.StateDeprovisioning, want: "deprovisioning in deprovisioning"},
		{name: "being deleted", state: bmov1alpha1.StateAvailable, deleting: true, want: "deletion in available"},
		// Power-off is not paced: with one power flag for every host,
		// pacing both sides would switch them all every lookAfter.
		{name: "available, asked to be off, on", state: bmov1alpha1.StateAvailable, online: false, poweredOn: true},
		{name: "paused", state: bmov1alpha1.StateProvisioned, online: false,
			annotations: map[string]string{bmov1alpha1.PausedAnnotation: "metal3.io/capm3"}},
		{name: "being rebooted", state: bmov1alpha1.StateProvisioned, image: image, online: true,
			annotations: map[string]string{bmov1alpha1.RebootAnnotationPrefix + "/capm3-remediation": ""}},
		{name: "in error: the operator's own backoff", state: bmov1alpha1.StateProvisioning, image: image, errored: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := &bmov1alpha1.BareMetalHost{
				ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations},
				Spec:       bmov1alpha1.BareMetalHostSpec{Image: tt.image, Online: tt.online},
				Status: bmov1alpha1.BareMetalHostStatus{
					Provisioning: bmov1alpha1.ProvisionStatus{State: tt.state},
					PoweredOn:    tt.poweredOn,
				},
			}
			if tt.deleting {
				host.DeletionTimestamp = &now
			}
			if tt.errored {
				host.Status.OperationalStatus = bmov1alpha1.OperationalStatusError
			}
			if got := waitingFor(host); got != tt.want {
				t.Errorf("waitingFor() = %q, want %q", got, tt.want)
			}
		})
	}
}
