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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/ptr"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

const (
	imageURL  = "http://172.22.0.1/images/ubuntu-22.04.qcow2"
	md5Sum    = "9dd4e461268c8034f5c8564e155c67a6"
	sha256Sum = "dbf893ae49490db82caa7d8b3a8f1414de98e94ab93949c2ecd743d22f4809c2"
	sha512Sum = "a4abd4448c49562d828115d13a1fccea927f52b4d5459297f8b43e42da89238b" +
		"c13626e43dcb38ddb082488927ec904fb42057443983e88585179d50551afe62"
	checksumFileURL = "http://172.22.0.1/images/SHA256SUMS"
)

func validMetal3MachineSpec() infrav1.Metal3MachineSpec {
	return infrav1.Metal3MachineSpec{
		Image: infrav1.Image{
			URL:          imageURL,
			Checksum:     ptr.To(sha256Sum),
			ChecksumType: "sha256",
			DiskFormat:   "qcow2",
		},
		HostSelector: &infrav1.HostSelector{
			MatchLabels: map[string]string{"cluster-role": "control-plane"},
			MatchExpressions: []infrav1.HostSelectorRequirement{{
				Key:      "infrastructure.cluster.x-k8s.io/failure-domain",
				Operator: selection.In,
				Values:   []string{"rack-a", "rack-b"},
			}},
		},
		DataTemplate:          &infrav1.Metal3ObjectRef{Name: "workload-1-controlplane-template"},
		AutomatedCleaningMode: "metadata",
		FailureDomain:         "rack-a",
	}
}

func validMetal3Machine() *infrav1.Metal3Machine {
	return &infrav1.Metal3Machine{
		ObjectMeta: metav1.ObjectMeta{Name: "workload-1-controlplane-x7k2p", Namespace: testNamespace},
		Spec:       validMetal3MachineSpec(),
	}
}

func validMetal3MachineTemplate() *infrav1.Metal3MachineTemplate {
	return &infrav1.Metal3MachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "workload-1-controlplane-v1", Namespace: testNamespace},
		Spec: infrav1.Metal3MachineTemplateSpec{
			Template: infrav1.Metal3MachineTemplateResource{Spec: validMetal3MachineSpec()},
		},
	}
}

// machineSpecDefaultCases apply to a Metal3Machine and a Metal3MachineTemplate alike.
var machineSpecDefaultCases = []struct {
	name   string
	mutate func(*infrav1.Metal3MachineSpec)
	check  func(*testing.T, *infrav1.Metal3MachineSpec)
}{
	{
		name:   "md5 inferred from 32 hex digits",
		mutate: func(s *infrav1.Metal3MachineSpec) { s.Image.Checksum, s.Image.ChecksumType = ptr.To(md5Sum), "" },
		check:  wantChecksumType("md5"),
	},
	{
		name:   "sha256 inferred from 64 hex digits",
		mutate: func(s *infrav1.Metal3MachineSpec) { s.Image.Checksum, s.Image.ChecksumType = ptr.To(sha256Sum), "" },
		check:  wantChecksumType("sha256"),
	},
	{
		name:   "sha512 inferred from 128 hex digits",
		mutate: func(s *infrav1.Metal3MachineSpec) { s.Image.Checksum, s.Image.ChecksumType = ptr.To(sha512Sum), "" },
		check:  wantChecksumType("sha512"),
	},
	{
		name: "upper-case hex digest",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.Image.Checksum, s.Image.ChecksumType = ptr.To(strings.ToUpper(sha256Sum)), ""
		},
		check: wantChecksumType("sha256"),
	},
	{
		name: "left alone for a checksum file URL",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.Image.Checksum, s.Image.ChecksumType = ptr.To(checksumFileURL), ""
		},
		check: wantChecksumType(""),
	},
	{
		name: "left alone for a hex digest of another length",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.Image.Checksum, s.Image.ChecksumType = ptr.To(sha256Sum[:40]), ""
		},
		check: wantChecksumType(""),
	},
	{
		name: "explicit checksumType kept",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.Image.Checksum, s.Image.ChecksumType = ptr.To(sha256Sum), "sha512"
		},
		check: wantChecksumType("sha512"),
	},
	{
		name:   "no image, no checksumType",
		mutate: func(s *infrav1.Metal3MachineSpec) { s.Image = infrav1.Image{} },
		check:  wantChecksumType(""),
	},
	{
		name: "hostSelector operators lower-cased, as upstream matches them",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.HostSelector.MatchExpressions = []infrav1.HostSelectorRequirement{{Key: "role", Operator: "In", Values: []string{"worker"}}}
		},
		check: func(t *testing.T, s *infrav1.Metal3MachineSpec) {
			t.Helper()
			if op := s.HostSelector.MatchExpressions[0].Operator; op != selection.In {
				t.Errorf("operator = %q, want %q", op, selection.In)
			}
		},
	},
	{
		name:   "no hostSelector added",
		mutate: func(s *infrav1.Metal3MachineSpec) { s.HostSelector = nil },
		check: func(t *testing.T, s *infrav1.Metal3MachineSpec) {
			t.Helper()
			if s.HostSelector != nil {
				t.Errorf("hostSelector = %+v, want none", s.HostSelector)
			}
		},
	},
	{
		name:   "dataTemplate kept",
		mutate: func(s *infrav1.Metal3MachineSpec) { s.DataTemplate = &infrav1.Metal3ObjectRef{Name: "t"} },
		check:  wantDataTemplate(&infrav1.Metal3ObjectRef{Name: "t"}),
	},
	{
		name:   "no dataTemplate added",
		mutate: func(s *infrav1.Metal3MachineSpec) { s.DataTemplate = nil },
		check:  wantDataTemplate(nil),
	},
}

func wantChecksumType(want string) func(*testing.T, *infrav1.Metal3MachineSpec) {
	return func(t *testing.T, s *infrav1.Metal3MachineSpec) {
		t.Helper()
		if s.Image.ChecksumType != want {
			t.Errorf("checksumType = %q, want %q", s.Image.ChecksumType, want)
		}
	}
}

func wantDataTemplate(want *infrav1.Metal3ObjectRef) func(*testing.T, *infrav1.Metal3MachineSpec) {
	return func(t *testing.T, s *infrav1.Metal3MachineSpec) {
		t.Helper()
		if !equality.Semantic.DeepEqual(s.DataTemplate, want) {
			t.Errorf("dataTemplate = %+v, want %+v", s.DataTemplate, want)
		}
	}
}

func TestMetal3MachineDefault(t *testing.T) {
	for _, tc := range machineSpecDefaultCases {
		t.Run(tc.name, func(t *testing.T) {
			m := validMetal3Machine()
			tc.mutate(&m.Spec)
			if err := (&Metal3Machine{}).Default(context.Background(), m); err != nil {
				t.Fatal(err)
			}
			tc.check(t, &m.Spec)
		})
	}
}

func TestMetal3MachineTemplateDefault(t *testing.T) {
	for _, tc := range machineSpecDefaultCases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := validMetal3MachineTemplate()
			tc.mutate(&tmpl.Spec.Template.Spec)
			if err := (&Metal3MachineTemplate{}).Default(context.Background(), tmpl); err != nil {
				t.Fatal(err)
			}
			tc.check(t, &tmpl.Spec.Template.Spec)
		})
	}
}

// machineSpecCase mutates a valid Metal3MachineSpec; wantFields are relative
// to the spec.
type machineSpecCase struct {
	name       string
	mutate     func(*infrav1.Metal3MachineSpec)
	wantFields []string
}

func expr(op selection.Operator, values ...string) func(*infrav1.Metal3MachineSpec) {
	return func(s *infrav1.Metal3MachineSpec) {
		s.HostSelector.MatchExpressions = []infrav1.HostSelectorRequirement{{Key: "example.com/rack", Operator: op, Values: values}}
	}
}

// machineSpecCases are the validation rules shared by Metal3Machine and
// Metal3MachineTemplate.
var machineSpecCases = []machineSpecCase{
	{name: "valid", mutate: func(*infrav1.Metal3MachineSpec) {}},
	{
		name: "valid customDeploy without image",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.Image, s.CustomDeploy = infrav1.Image{}, infrav1.CustomDeploy{Method: "install_coreos"}
		},
	},
	{
		name: "valid live-iso without checksum",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.Image = infrav1.Image{URL: "http://172.22.0.1/images/rescue.iso", DiskFormat: "live-iso"}
		},
	},
	{
		name: "valid OCI image without checksum",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.Image = infrav1.Image{URL: "oci://registry.example.com/images/node:v1.36"}
		},
	},
	{
		name:   "valid checksum file URL",
		mutate: func(s *infrav1.Metal3MachineSpec) { s.Image.Checksum = ptr.To(checksumFileURL) },
	},
	{
		name:   "valid checksum without checksumType",
		mutate: func(s *infrav1.Metal3MachineSpec) { s.Image.ChecksumType = "" },
	},
	{
		name:   "valid md5 digest",
		mutate: func(s *infrav1.Metal3MachineSpec) { s.Image.Checksum, s.Image.ChecksumType = ptr.To(md5Sum), "md5" },
	},
	{
		name: "valid sha512 digest",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.Image.Checksum, s.Image.ChecksumType = ptr.To(sha512Sum), "sha512"
		},
	},
	{
		name: "valid Secrets in the machine's own namespace",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.DataTemplate = nil
			s.UserData = &corev1.SecretReference{Name: "worker-user-data", Namespace: testNamespace}
			s.MetaData = &corev1.SecretReference{Name: "worker-metadata"}
			s.NetworkData = &corev1.SecretReference{Name: "worker-network-data", Namespace: testNamespace}
		},
	},
	{
		name: "valid dataTemplate in own namespace",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.DataTemplate = &infrav1.Metal3ObjectRef{Name: "t", Namespace: testNamespace}
		},
	},
	{
		name: "valid identityRef",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.IdentityRef = &infrav1.IdentityRef{Name: "pool-east-kubeconfig", Context: "pool-east"}
		},
	},
	{name: "valid without hostSelector", mutate: func(s *infrav1.Metal3MachineSpec) { s.HostSelector = nil }},
	{name: "valid operator notin", mutate: expr(selection.NotIn, "rack-c")},
	{name: "valid operator exists", mutate: expr(selection.Exists)},
	{name: "valid operator !", mutate: expr(selection.DoesNotExist)},
	{name: "valid operator =", mutate: expr(selection.Equals, "rack-a")},
	{name: "valid operator ==", mutate: expr(selection.DoubleEquals, "rack-a")},
	{name: "valid operator !=", mutate: expr(selection.NotEquals, "rack-a")},
	{name: "valid operator gt", mutate: expr(selection.GreaterThan, "3")},
	{name: "valid operator lt", mutate: expr(selection.LessThan, "-3")},
	{
		name:       "image and customDeploy both set",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.CustomDeploy = infrav1.CustomDeploy{Method: "install_coreos"} },
		wantFields: []string{"customDeploy"},
	},
	{
		name:       "neither image nor customDeploy",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.Image = infrav1.Image{} },
		wantFields: []string{"image"},
	},
	{
		// customDeploy is a value: without a method it is not set.
		name:       "customDeploy without method",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.Image, s.CustomDeploy = infrav1.Image{}, infrav1.CustomDeploy{} },
		wantFields: []string{"image"},
	},
	{
		name: "customDeploy with a blank method",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.Image, s.CustomDeploy = infrav1.Image{}, infrav1.CustomDeploy{Method: " "}
		},
		wantFields: []string{"customDeploy.method"},
	},
	{
		name:       "image without url",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.Image.URL = "" },
		wantFields: []string{"image.url"},
	},
	{
		name:       "image url not absolute",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.Image.URL = "images/ubuntu-22.04.qcow2" },
		wantFields: []string{"image.url"},
	},
	{
		name:       "image without checksum",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.Image.Checksum, s.Image.ChecksumType = nil, "" },
		wantFields: []string{"image.checksum"},
	},
	{
		name:       "image with an empty checksum",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.Image.Checksum, s.Image.ChecksumType = ptr.To(""), "" },
		wantFields: []string{"image.checksum"},
	},
	{
		name: "image without checksum nor format",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.Image = infrav1.Image{URL: imageURL}
		},
		wantFields: []string{"image.checksum"},
	},
	{
		name: "live-iso with checksumType but no checksum",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.Image = infrav1.Image{URL: imageURL, DiskFormat: "live-iso", ChecksumType: "sha256"}
		},
		wantFields: []string{"image.checksum"},
	},
	{
		name:       "sha256 checksumType with an md5-length digest",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.Image.Checksum = ptr.To(md5Sum) },
		wantFields: []string{"image.checksum"},
	},
	{
		name:       "md5 checksumType with a sha256-length digest",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.Image.ChecksumType = "md5" },
		wantFields: []string{"image.checksum"},
	},
	{
		name:       "sha512 checksumType with a sha256-length digest",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.Image.ChecksumType = "sha512" },
		wantFields: []string{"image.checksum"},
	},
	{
		name:       "checksum neither digest nor URL",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.Image.Checksum = ptr.To("not-a-checksum") },
		wantFields: []string{"image.checksum"},
	},
	{
		name: "userData Secret in another namespace",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.UserData = &corev1.SecretReference{Name: "u", Namespace: "tenant-b"}
		},
		wantFields: []string{"userData.namespace"},
	},
	{
		name:       "userData without name",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.UserData = &corev1.SecretReference{} },
		wantFields: []string{"userData.name"},
	},
	{
		name: "metaData Secret in another namespace",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.DataTemplate, s.MetaData = nil, &corev1.SecretReference{Name: "m", Namespace: "kube-system"}
		},
		wantFields: []string{"metaData.namespace"},
	},
	{
		name: "networkData Secret in another namespace",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.DataTemplate, s.NetworkData = nil, &corev1.SecretReference{Name: "n", Namespace: "tenant-b"}
		},
		wantFields: []string{"networkData.namespace"},
	},
	{
		name: "networkData Secret name invalid",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.DataTemplate, s.NetworkData = nil, &corev1.SecretReference{Name: "Network_Data"}
		},
		wantFields: []string{"networkData.name"},
	},
	{
		name:       "dataTemplate in another namespace",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.DataTemplate.Namespace = "tenant-b" },
		wantFields: []string{"dataTemplate.namespace"},
	},
	{
		name:       "dataTemplate without name",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.DataTemplate.Name = "" },
		wantFields: []string{"dataTemplate.name"},
	},
	{
		name:       "dataTemplate together with metaData",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.MetaData = &corev1.SecretReference{Name: "m"} },
		wantFields: []string{"dataTemplate"},
	},
	{
		name:       "unknown hostSelector operator",
		mutate:     expr("contains", "rack-a"),
		wantFields: []string{"hostSelector.matchExpressions[0].operator"},
	},
	{
		name:       "LabelSelector-style operator In",
		mutate:     expr("In", "rack-a"),
		wantFields: []string{"hostSelector.matchExpressions[0].operator"},
	},
	{
		name:       "operator in without values",
		mutate:     expr(selection.In),
		wantFields: []string{"hostSelector.matchExpressions[0].values"},
	},
	{
		name:       "operator = with two values",
		mutate:     expr(selection.Equals, "rack-a", "rack-b"),
		wantFields: []string{"hostSelector.matchExpressions[0].values"},
	},
	{
		name:       "operator exists with values",
		mutate:     expr(selection.Exists, "rack-a"),
		wantFields: []string{"hostSelector.matchExpressions[0].values"},
	},
	{
		name:       "operator gt with a non-integer",
		mutate:     expr(selection.GreaterThan, "three"),
		wantFields: []string{"hostSelector.matchExpressions[0].values[0]"},
	},
	{
		name:       "value not a label value",
		mutate:     expr(selection.In, "rack-a", "rack b"),
		wantFields: []string{"hostSelector.matchExpressions[0].values[1]"},
	},
	{
		name: "key not a label key",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.HostSelector.MatchExpressions[0].Key = "bad key"
		},
		wantFields: []string{"hostSelector.matchExpressions[0].key"},
	},
	{
		name: "matchLabels value not a label value",
		mutate: func(s *infrav1.Metal3MachineSpec) {
			s.HostSelector.MatchLabels = map[string]string{"cluster-role": "control plane"}
		},
		wantFields: []string{"hostSelector.matchLabels"},
	},
	{
		name:       "failureDomain not a label value",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.FailureDomain = "rack a" },
		wantFields: []string{"failureDomain"},
	},
	{
		name:       "empty identityRef name",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.IdentityRef = &infrav1.IdentityRef{} },
		wantFields: []string{"identityRef.name"},
	},
	{
		name:       "identityRef name not a Secret name",
		mutate:     func(s *infrav1.Metal3MachineSpec) { s.IdentityRef = &infrav1.IdentityRef{Name: "Bad_Name"} },
		wantFields: []string{"identityRef.name"},
	},
}

func TestMetal3MachineValidateCreate(t *testing.T) {
	for _, tc := range machineSpecCases {
		t.Run(tc.name, func(t *testing.T) {
			m := validMetal3Machine()
			tc.mutate(&m.Spec)
			_, err := (&Metal3Machine{}).ValidateCreate(context.Background(), m)
			expectFieldErrors(t, err, prefixed("spec.", tc.wantFields)...)
		})
	}
}

func TestMetal3MachineValidateUpdate(t *testing.T) {
	const host = "tenant-a/worker-3"
	// associated: the claim confirmed by the status written with it.
	associated := func(m *infrav1.Metal3Machine) {
		m.Annotations = map[string]string{infrav1.HostAnnotation: host}
		m.Status.Conditions = []metav1.Condition{{Type: infrav1.HostAssociatedCondition, Status: metav1.ConditionTrue, Reason: infrav1.AssociatedReason}}
	}
	// intended: the host written with the finalizer, not claimed yet.
	intended := func(m *infrav1.Metal3Machine) {
		m.Annotations = map[string]string{infrav1.HostAnnotation: host}
	}
	provisioned := func(m *infrav1.Metal3Machine) { m.Spec.ProviderID = "metal3://tenant-a/worker-3/m-0" }
	withIdentity := func(name string) func(*infrav1.Metal3Machine) {
		return func(m *infrav1.Metal3Machine) { m.Spec.IdentityRef = &infrav1.IdentityRef{Name: name} }
	}
	both := func(fs ...func(*infrav1.Metal3Machine)) func(*infrav1.Metal3Machine) {
		return func(m *infrav1.Metal3Machine) {
			for _, f := range fs {
				f(m)
			}
		}
	}
	none := func(*infrav1.Metal3Machine) {}
	consumerID := func(id string) func(*infrav1.Metal3Machine) {
		return func(m *infrav1.Metal3Machine) {
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}
			m.Annotations[infrav1.ConsumerIDAnnotation] = id
		}
	}
	const (
		consumerIDField = "metadata.annotations[" + infrav1.ConsumerIDAnnotation + "]"
		hostField       = "metadata.annotations[" + infrav1.HostAnnotation + "]"
		claimField      = "metadata.annotations[" + infrav1.HostClaimAnnotation + "]"
	)
	withAnnotation := func(key, value string) func(*infrav1.Metal3Machine) {
		return func(m *infrav1.Metal3Machine) {
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}
			m.Annotations[key] = value
		}
	}
	moveDeletion := func(m *infrav1.Metal3Machine) {
		m.Annotations = map[string]string{clusterctlv1.DeleteForMoveAnnotation: ""}
	}

	tests := []struct {
		name       string
		old        func(*infrav1.Metal3Machine)
		new        func(*infrav1.Metal3Machine)
		wantFields []string
	}{
		{name: "unchanged, associated", old: associated, new: associated},
		{name: "consumer ID set for the first time", old: none, new: consumerID("6f1c")},
		{name: "consumer ID kept", old: both(associated, consumerID("6f1c")), new: both(associated, consumerID("6f1c"))},
		{
			name:       "consumer ID changed",
			old:        both(associated, consumerID("6f1c")),
			new:        both(associated, consumerID("9a2e")),
			wantFields: []string{consumerIDField},
		},
		{
			name:       "consumer ID removed",
			old:        both(associated, consumerID("6f1c")),
			new:        associated,
			wantFields: []string{consumerIDField},
		},
		{
			// clusterctl move's JSON patch before it deletes the source.
			name: "annotations replaced by clusterctl move's delete-for-move",
			old:  both(associated, consumerID("6f1c")),
			new:  moveDeletion,
		},
		{
			name:       "identityRef changed while associated",
			old:        both(associated, withIdentity("pool-east-kubeconfig")),
			new:        both(associated, withIdentity("pool-west-kubeconfig")),
			wantFields: []string{"spec.identityRef"},
		},
		{
			name:       "identityRef added while associated",
			old:        associated,
			new:        both(associated, withIdentity("pool-east-kubeconfig")),
			wantFields: []string{"spec.identityRef"},
		},
		{
			name:       "identityRef removed while associated",
			old:        both(associated, withIdentity("pool-east-kubeconfig")),
			new:        associated,
			wantFields: []string{"spec.identityRef"},
		},
		{
			name: "identityRef context changed while associated",
			old:  both(associated, withIdentity("pool-east-kubeconfig")),
			new: both(associated, func(m *infrav1.Metal3Machine) {
				m.Spec.IdentityRef = &infrav1.IdentityRef{Name: "pool-east-kubeconfig", Context: "other"}
			}),
			wantFields: []string{"spec.identityRef"},
		},
		{
			name:       "identityRef changed while the annotation is being removed",
			old:        both(associated, withIdentity("pool-east-kubeconfig")),
			new:        withIdentity("pool-west-kubeconfig"),
			wantFields: []string{"spec.identityRef", hostField},
		},
		// The attack: point the machine's record at a host that does not
		// exist, so that deleting the machine would leave its real host
		// provisioned with its data; or take another consumer's ID.
		{
			name:       "host record rewritten to another host",
			old:        both(associated, consumerID("6f1c")),
			new:        both(associated, consumerID("6f1c"), withAnnotation(infrav1.HostAnnotation, "tenant-a/does-not-exist")),
			wantFields: []string{hostField},
		},
		{
			name:       "host record removed",
			old:        both(associated, consumerID("6f1c")),
			new:        consumerID("6f1c"),
			wantFields: []string{hostField},
		},
		{
			// A status lost to clusterctl move: the provider ID confirms.
			name:       "host record rewritten on a provisioned machine without status",
			old:        both(intended, provisioned, consumerID("6f1c")),
			new:        both(provisioned, consumerID("6f1c"), withAnnotation(infrav1.HostAnnotation, "tenant-a/does-not-exist")),
			wantFields: []string{hostField},
		},
		{
			// An identity failure rewrites HostAssociated; HostProvisioned,
			// set from the association on, still confirms.
			name: "host record rewritten while the identity fails",
			old: both(intended, consumerID("6f1c"), func(m *infrav1.Metal3Machine) {
				m.Status.Conditions = []metav1.Condition{
					{Type: infrav1.HostAssociatedCondition, Status: metav1.ConditionFalse, Reason: infrav1.IdentityNotReadyReason},
					{Type: infrav1.HostProvisionedCondition, Status: metav1.ConditionFalse, Reason: infrav1.ProvisioningReason},
				}
			}),
			new:        both(consumerID("6f1c"), withAnnotation(infrav1.HostAnnotation, "tenant-a/does-not-exist")),
			wantFields: []string{hostField},
		},
		// An intent is the provider's choice among the hosts the machine
		// may take, which it moves when another consumer wins the host:
		// whoever moves it only states a preference the claim checks.
		{
			name: "intended host moved to another before the claim",
			old:  both(intended, consumerID("6f1c")),
			new:  both(consumerID("6f1c"), withAnnotation(infrav1.HostAnnotation, "tenant-a/worker-4")),
		},
		{
			name: "intended host dropped when no host is left",
			old:  both(intended, consumerID("6f1c")),
			new:  consumerID("6f1c"),
		},
		{
			name:       "HostClaim record rewritten",
			old:        withAnnotation(infrav1.HostClaimAnnotation, "tenant-a/worker-3-1a2b3c4d5e"),
			new:        withAnnotation(infrav1.HostClaimAnnotation, "tenant-a/other"),
			wantFields: []string{claimField},
		},
		{
			name:       "consumer ID first set to another object's",
			old:        none,
			new:        consumerID("9a2e"),
			wantFields: []string{consumerIDField},
		},
		{
			name:       "delete-for-move added beside a changed consumer ID: not clusterctl move's shape",
			old:        both(associated, consumerID("6f1c")),
			new:        both(associated, consumerID("9a2e"), withAnnotation(clusterctlv1.DeleteForMoveAnnotation, "")),
			wantFields: []string{consumerIDField},
		},
		{
			name:       "records set again after clusterctl move's delete-for-move",
			old:        moveDeletion,
			new:        both(moveDeletion, withAnnotation(infrav1.HostAnnotation, host), consumerID("6f1c")),
			wantFields: []string{consumerIDField, hostField},
		},
		{
			name: "identityRef changed while not associated",
			old:  withIdentity("pool-east-kubeconfig"),
			new:  withIdentity("pool-west-kubeconfig"),
		},
		{
			name: "identityRef changed in the same update that associates",
			old:  withIdentity("pool-east-kubeconfig"),
			new:  both(associated, withIdentity("pool-west-kubeconfig")),
		},
		{
			name: "providerID set while associated",
			old:  associated,
			new: both(associated, func(m *infrav1.Metal3Machine) {
				m.Spec.ProviderID = "metal3://tenant-a/worker-3/workload-1-controlplane-x7k2p"
			}),
		},
		{
			name:       "change to an invalid spec",
			old:        none,
			new:        func(m *infrav1.Metal3Machine) { m.Spec.Image.URL = "" },
			wantFields: []string{"spec.image.url"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldM, newM := validMetal3Machine(), validMetal3Machine()
			oldM.UID, newM.UID = "6f1c", "6f1c"
			tc.old(oldM)
			tc.new(newM)
			_, err := (&Metal3Machine{}).ValidateUpdate(context.Background(), oldM, newM)
			expectFieldErrors(t, err, tc.wantFields...)
		})
	}
}

func TestMetal3MachineTemplateValidateCreate(t *testing.T) {
	for _, tc := range machineSpecCases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := validMetal3MachineTemplate()
			tc.mutate(&tmpl.Spec.Template.Spec)
			_, err := (&Metal3MachineTemplate{}).ValidateCreate(context.Background(), tmpl)
			expectFieldErrors(t, err, prefixed("spec.template.spec.", tc.wantFields)...)
		})
	}
}

func TestMetal3MachineTemplateValidateUpdate(t *testing.T) {
	tests := []struct {
		name       string
		old        func(*infrav1.Metal3MachineTemplate)
		new        func(*infrav1.Metal3MachineTemplate)
		wantFields []string
	}{
		{name: "unchanged", old: func(*infrav1.Metal3MachineTemplate) {}, new: func(*infrav1.Metal3MachineTemplate) {}},
		{
			name: "nodeReuse enabled",
			old:  func(*infrav1.Metal3MachineTemplate) {},
			new:  func(t *infrav1.Metal3MachineTemplate) { t.Spec.NodeReuse = ptr.To(true) },
		},
		{
			name: "nodeReuse disabled",
			old:  func(t *infrav1.Metal3MachineTemplate) { t.Spec.NodeReuse = ptr.To(true) },
			new:  func(*infrav1.Metal3MachineTemplate) {},
		},
		{
			name: "automatedCleaningMode changed",
			old:  func(*infrav1.Metal3MachineTemplate) {},
			new: func(t *infrav1.Metal3MachineTemplate) {
				t.Spec.Template.Spec.AutomatedCleaningMode = "disabled"
			},
		},
		{
			name: "automatedCleaningMode set",
			old:  func(t *infrav1.Metal3MachineTemplate) { t.Spec.Template.Spec.AutomatedCleaningMode = "" },
			new:  func(*infrav1.Metal3MachineTemplate) {},
		},
		{
			name: "labels changed",
			old:  func(*infrav1.Metal3MachineTemplate) {},
			new:  func(t *infrav1.Metal3MachineTemplate) { t.Labels = map[string]string{"team": "infra"} },
		},
		{
			name: "image changed",
			old:  func(*infrav1.Metal3MachineTemplate) {},
			new: func(t *infrav1.Metal3MachineTemplate) {
				t.Spec.Template.Spec.Image.URL = "http://172.22.0.1/images/ubuntu-24.04.qcow2"
			},
			wantFields: []string{"spec.template.spec"},
		},
		{
			name: "identityRef changed",
			old:  func(*infrav1.Metal3MachineTemplate) {},
			new: func(t *infrav1.Metal3MachineTemplate) {
				t.Spec.Template.Spec.IdentityRef = &infrav1.IdentityRef{Name: "pool-east-kubeconfig"}
			},
			wantFields: []string{"spec.template.spec"},
		},
		{
			name: "hostSelector changed",
			old:  func(*infrav1.Metal3MachineTemplate) {},
			new: func(t *infrav1.Metal3MachineTemplate) {
				t.Spec.Template.Spec.HostSelector.MatchLabels["cluster-role"] = "worker"
			},
			wantFields: []string{"spec.template.spec"},
		},
		{
			name: "automatedCleaningMode and image changed together",
			old:  func(*infrav1.Metal3MachineTemplate) {},
			new: func(t *infrav1.Metal3MachineTemplate) {
				t.Spec.Template.Spec.AutomatedCleaningMode = "disabled"
				t.Spec.Template.Spec.Image.Checksum = ptr.To("4d4a099ace59ef1dfeba3a4362e23d1eaa07d4302f9926498f2a9b88faa25420")
			},
			wantFields: []string{"spec.template.spec"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldT, newT := validMetal3MachineTemplate(), validMetal3MachineTemplate()
			tc.old(oldT)
			tc.new(newT)
			_, err := (&Metal3MachineTemplate{}).ValidateUpdate(context.Background(), oldT, newT)
			expectFieldErrors(t, err, tc.wantFields...)
		})
	}
}
