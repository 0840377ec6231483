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

package hostclaim

import (
	"maps"
	"regexp"
	"strings"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

func TestSecretCopyName(t *testing.T) {
	a := SecretCopyName("worker-0", "uid-1", pool.UserDataPurpose)
	if !regexp.MustCompile(`^worker-0-user-data-[0-9a-f]{10}$`).MatchString(a) {
		t.Errorf("name %q is not <claim>-<purpose>-<10 hex>", a)
	}
	if a != SecretCopyName("worker-0", "uid-1", pool.UserDataPurpose) {
		t.Error("the name is not deterministic")
	}
	if a == SecretCopyName("worker-0", "uid-2", pool.UserDataPurpose) {
		t.Error("two claims of the same name (two tenants) share a copy name")
	}
	long := SecretCopyName(strings.Repeat("a", 253), "uid", pool.NetworkDataPurpose)
	if errs := validation.IsDNS1123Subdomain(long); len(errs) > 0 {
		t.Errorf("copy name of a long claim name is invalid: %v", errs)
	}
}

func TestRedact(t *testing.T) {
	bmc := bmov1alpha1.BMCDetails{Address: "redfish+https://10.1.2.3:8443/redfish/v1/Systems/1", CredentialsName: "node-7-bmc-secret"}
	tests := []struct{ in, want string }{
		{"failed to reach redfish+https://10.1.2.3:8443/redfish/v1/Systems/1: timeout", "failed to reach <BMC>: timeout"},
		{"dial tcp 10.1.2.3:8443: connection refused", "dial tcp <BMC>: connection refused"},
		{"no route to 10.1.2.3", "no route to <BMC>"},
		{"secret node-7-bmc-secret has no username", "secret <BMC> has no username"},
		{"nothing to hide", "nothing to hide"},
		// The leak: a driver quoting the address in another case than the
		// host's spec wrote it.
		{"REDFISH+HTTPS://10.1.2.3:8443/Redfish/V1/Systems/1 answered 500", "<BMC> answered 500"},
		{"Secret Node-7-BMC-Secret is missing", "Secret <BMC> is missing"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in, bmc); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// An address without a scheme still hides its host part.
	if got := Redact("dial 192.168.0.9:623 failed", bmov1alpha1.BMCDetails{Address: "192.168.0.9:623/x"}); got != "dial <BMC> failed" {
		t.Errorf("schemeless address: %q", got)
	}
	if got := Redact("an error", bmov1alpha1.BMCDetails{}); got != "an error" {
		t.Errorf("empty BMC changed the message: %q", got)
	}
}

func TestIsBMOKey(t *testing.T) {
	for key, want := range map[string]bool{
		"baremetalhost.metal3.io/status": true,
		"metal3.io/something":            true,
		"reboot.metal3.io":               false, // no "/": no prefix
		"reboot.metal3.io/x":             true,
		"example.com/metal3.io":          false,
		"notmetal3.io/x":                 false,
		"rack":                           false,
	} {
		if got := IsBMOKey(key); got != want {
			t.Errorf("IsBMOKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestTenantLabelsAndAnnotations(t *testing.T) {
	h := &bmov1alpha1.BareMetalHost{}
	h.Spec.BMC = bmov1alpha1.BMCDetails{Address: "ipmi://10.9.9.9:623", CredentialsName: "h-bmc"}
	h.Labels = map[string]string{"rack": "r1", "bmc-secret": "h-bmc", "bmc-secret-upper": "H-BMC"}
	h.Annotations = map[string]string{
		"baremetalhost.metal3.io/status":                   `{"bmc":"ipmi://10.9.9.9:623"}`,
		"kubectl.kubernetes.io/last-applied-configuration": `{"spec":{}}`,
		"example.com/owner":                                "team",
		"example.com/note":                                 "BMC at 10.9.9.9",
		"example.com/console":                              "IPMI://10.9.9.9:623",
	}
	if got, want := TenantLabels(h), map[string]string{"rack": "r1"}; !maps.Equal(got, want) {
		t.Errorf("labels = %v, want %v", got, want)
	}
	if got, want := TenantAnnotations(h), map[string]string{"example.com/owner": "team"}; !maps.Equal(got, want) {
		t.Errorf("annotations = %v, want %v", got, want)
	}
}

func TestMirrorReboots(t *testing.T) {
	const key = RebootAnnotationPrefix + "/remediation"
	tests := []struct {
		name        string
		claim, host map[string]string
		want        map[string]string
	}{
		{
			name:  "a claim's reboot is mirrored and recorded",
			claim: map[string]string{key: `{"mode":"hard"}`, "other": "x"},
			host:  nil,
			want:  map[string]string{key: `{"mode":"hard"}`, MirroredRebootsAnnotation: key},
		},
		{
			name:  "the plain annotation too",
			claim: map[string]string{RebootAnnotationPrefix: ""},
			host:  map[string]string{},
			want:  map[string]string{RebootAnnotationPrefix: "", MirroredRebootsAnnotation: RebootAnnotationPrefix},
		},
		{
			name:  "one BMO removed is not put back",
			claim: map[string]string{RebootAnnotationPrefix: ""},
			host:  map[string]string{MirroredRebootsAnnotation: RebootAnnotationPrefix},
			want:  map[string]string{MirroredRebootsAnnotation: RebootAnnotationPrefix},
		},
		{
			name:  "gone from the claim: removed from the host, the operator's own kept",
			claim: map[string]string{},
			host:  map[string]string{key: "", RebootAnnotationPrefix + "/operator": "", MirroredRebootsAnnotation: key},
			want:  map[string]string{RebootAnnotationPrefix + "/operator": ""},
		},
		// The attack: a tenant adds the key of the operator's own reboot
		// annotation to its claim, then removes it, to have the binder
		// remove the operator's and power the host back on.
		{
			name:  "the operator's own reboot of the same key is not taken over",
			claim: map[string]string{RebootAnnotationPrefix + "/operator": `{"mode":"soft"}`},
			host:  map[string]string{RebootAnnotationPrefix + "/operator": `{"mode":"hard"}`},
			want:  map[string]string{RebootAnnotationPrefix + "/operator": `{"mode":"hard"}`},
		},
		{
			name:  "and stays when the claim drops it",
			claim: map[string]string{},
			host:  map[string]string{RebootAnnotationPrefix + "/operator": `{"mode":"hard"}`},
			want:  map[string]string{RebootAnnotationPrefix + "/operator": `{"mode":"hard"}`},
		},
		{
			name:  "an edited record never removes a non-reboot annotation",
			claim: map[string]string{},
			host:  map[string]string{"keep-me": "", MirroredRebootsAnnotation: "keep-me"},
			want:  map[string]string{"keep-me": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MirrorReboots(tt.claim, tt.host)
			if !maps.Equal(got, tt.want) {
				t.Errorf("host annotations = %v, want %v", got, tt.want)
			}
		})
	}
	host := map[string]string{key: "", "x": "y", MirroredRebootsAnnotation: key}
	UnmirrorReboots(host)
	if !maps.Equal(host, map[string]string{"x": "y"}) {
		t.Errorf("after UnmirrorReboots: %v", host)
	}
}
