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

package webhooks_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	infrav1beta1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

const tenantNamespace = "tenant-a"

// apiServerWithWebhooks starts a kube-apiserver with the provider's CRDs as
// kustomize builds them (config/crd) and the generated webhook configuration
// (config/webhook), served by our webhooks in a manager; both API versions
// are in the scheme, so envtest points the CRDs' conversion at that manager.
func apiServerWithWebhooks(t *testing.T) client.Client {
	t.Helper()
	return apiServerWithWebhooksEnv(t).Client
}

// apiServerWithWebhooksEnv is apiServerWithWebhooks, returning the whole
// environment (e.g. for a client of one's own).
func apiServerWithWebhooksEnv(t *testing.T) *testenv.Env {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, infrav1beta1.AddToScheme, infrav1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	env := testenv.Start(t, testenv.Options{
		Scheme:       scheme,
		CRDs:         testenv.ProviderCRDs(t),
		WebhookPaths: testenv.ProviderWebhookPaths(t),
	})
	env.ServeProviderWebhooks(t)

	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNamespace}}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return env
}

func fromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatalf("decode manifest: %v\n%s", err, doc)
	}
	return obj
}

// TestAPIServerAdmission runs the whole admission chain of a real API server:
// CRD schema validation, our defaulting and our validation.
func TestAPIServerAdmission(t *testing.T) {
	env := apiServerWithWebhooksEnv(t)
	c := env.Client
	ctx := context.Background()

	t.Run("installed CRDs carry the CAPI contract label", func(t *testing.T) {
		g := NewWithT(t)
		crds := &apiextensionsv1.CustomResourceDefinitionList{}
		g.Expect(c.List(ctx, crds, client.MatchingLabels{"cluster.x-k8s.io/v1beta2": "v1beta2", "cluster.x-k8s.io/v1beta1": "v1beta1"})).To(Succeed())
		var names []string
		for _, crd := range crds.Items {
			names = append(names, crd.Spec.Names.Kind)
		}
		g.Expect(names).To(ConsistOf("Metal3Cluster", "Metal3ClusterTemplate", "Metal3ClusterIdentity", "Metal3Machine", "Metal3MachineTemplate",
			"Metal3DataTemplate", "Metal3DataClaim", "Metal3Data", "Metal3Remediation", "Metal3RemediationTemplate"))
	})

	t.Run("every upstream-shaped sample is accepted", func(t *testing.T) {
		root, err := testenv.ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		files, err := filepath.Glob(filepath.Join(root, "api", "v1beta1", "testdata", "samples", "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no samples found: %v", err)
		}
		for _, file := range files {
			t.Run(filepath.Base(file), func(t *testing.T) {
				data, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				obj := fromYAML(t, string(data))
				if obj.GetNamespace() != "" { // cluster-scoped kinds have none
					obj.SetNamespace(tenantNamespace)
				}
				if err := c.Create(ctx, obj); err != nil {
					t.Fatalf("%s was rejected: %v", filepath.Base(file), err)
				}
			})
		}
	})

	invalid := []struct {
		name     string
		manifest string
		// wantInMessage are substrings of the API server's error: the field
		// path, and what is wrong with it.
		wantInMessage []string
	}{
		{
			name: "Metal3Cluster with an empty identityRef name",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Cluster
metadata: {name: empty-identity, namespace: tenant-a}
spec:
  controlPlaneEndpoint: {host: 192.168.111.249, port: 6443}
  identityRef: {name: ""}`,
			wantInMessage: []string{"spec.identityRef.name"},
		},
		{
			name: "Metal3MachineTemplate with an empty identityRef name",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {name: empty-identity, namespace: tenant-a}
spec:
  template:
    spec:
      image: {url: "http://172.22.0.1/images/node.qcow2", checksum: "http://172.22.0.1/images/node.qcow2.sha256sum"}
      identityRef: {name: ""}`,
			wantInMessage: []string{"spec.template.spec.identityRef.name"},
		},
		{
			name: "Metal3Cluster with an identityRef that cannot name a Secret",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Cluster
metadata: {name: bad-identity, namespace: tenant-a}
spec:
  controlPlaneEndpoint: {host: 192.168.111.249, port: 6443}
  identityRef: {name: "Pool_East"}`,
			wantInMessage: []string{"spec.identityRef.name", "valid kubeconfig Secret name"},
		},
		{
			name: "Metal3Cluster without a control plane endpoint",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Cluster
metadata: {name: no-endpoint, namespace: tenant-a}
spec: {}`,
			wantInMessage: []string{"spec.controlPlaneEndpoint.host", "Required"},
		},
		{
			name: "Metal3Machine with image and customDeploy",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Machine
metadata: {name: both, namespace: tenant-a}
spec:
  image: {url: "http://172.22.0.1/images/node.qcow2", checksum: "http://172.22.0.1/images/node.qcow2.sha256sum"}
  customDeploy: {method: install_coreos}`,
			wantInMessage: []string{"spec.customDeploy", "mutually exclusive"},
		},
		{
			name: "Metal3Machine whose checksum does not fit its type",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Machine
metadata: {name: short-checksum, namespace: tenant-a}
spec:
  image: {url: "http://172.22.0.1/images/node.qcow2", checksum: "abcdef0123", checksumType: sha256}`,
			wantInMessage: []string{"spec.image.checksum", "64 hex digits"},
		},
		{
			name: "Metal3Machine reading user data from another namespace",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Machine
metadata: {name: foreign-userdata, namespace: tenant-a}
spec:
  customDeploy: {method: install_coreos}
  userData: {name: user-data, namespace: tenant-b}`,
			wantInMessage: []string{"spec.userData.namespace"},
		},
		{
			name: "Metal3Machine with an unknown checksum type (CRD enum)",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Machine
metadata: {name: bad-enum, namespace: tenant-a}
spec:
  image: {url: "http://172.22.0.1/images/node.qcow2", checksum: "abc", checksumType: crc32}`,
			wantInMessage: []string{"spec.image.checksumType", "Unsupported value"},
		},
		{
			name: "Metal3DataTemplate writing one metadata key twice",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3DataTemplate
metadata: {name: dup-key, namespace: tenant-a}
spec:
  clusterName: cluster-a
  metaData:
    strings: [{key: role, value: worker}]
    objectNames: [{key: role, object: machine}]`,
			wantInMessage: []string{"spec.metaData.objectNames[0].key", "Duplicate value"},
		},
		{
			name: "Metal3DataTemplate with a network on a missing link",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3DataTemplate
metadata: {name: missing-link, namespace: tenant-a}
spec:
  clusterName: cluster-a
  networkData:
    networks:
      ipv4DHCP: [{id: provisioning, link: eth9}]`,
			wantInMessage: []string{"spec.networkData.networks.ipv4DHCP[0].link", "Not found"},
		},
		{
			name: "Metal3Remediation with an unknown strategy",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Remediation
metadata: {name: reprovision, namespace: tenant-a}
spec:
  strategy: {type: Reprovision, retryLimit: 1, timeoutSeconds: 300}`,
			wantInMessage: []string{"spec.strategy.type", "Unsupported value"},
		},
		{
			name: "Metal3RemediationTemplate with a timeout too short for a reboot",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3RemediationTemplate
metadata: {name: quick, namespace: tenant-a}
spec:
  template:
    spec:
      strategy: {type: Reboot, retryLimit: 1, timeoutSeconds: 10}`,
			wantInMessage: []string{"spec.template.spec.strategy.timeoutSeconds"},
		},
	}
	for _, tc := range invalid {
		t.Run("rejects "+tc.name, func(t *testing.T) {
			err := c.Create(ctx, fromYAML(t, tc.manifest))
			if err == nil {
				t.Fatalf("%s was accepted", tc.name)
			}
			for _, want := range tc.wantInMessage {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err.Error(), want)
				}
			}
		})
	}

	t.Run("defaults are applied", func(t *testing.T) {
		g := NewWithT(t)
		// Deliberately upstream-shaped (v1beta1): noCloudProvider exists only
		// there, and conversion turns it into cloudProviderEnabled.
		cluster := fromYAML(t, `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3Cluster
metadata: {name: defaulted, namespace: tenant-a}
spec:
  controlPlaneEndpoint: {host: api.cluster-a.example.com}
  noCloudProvider: true`)
		// port is required by the upstream schema; the webhook fills it in
		// before the schema is checked.
		g.Expect(c.Create(ctx, cluster)).To(Succeed())
		got := &infrav1.Metal3Cluster{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(cluster), got)).To(Succeed())
		g.Expect(got.Spec.ControlPlaneEndpoint.Port).To(Equal(int32(6443)))
		g.Expect(got.Spec.CloudProviderEnabled).To(HaveValue(BeFalse()))

		remediation := fromYAML(t, `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Remediation
metadata: {name: defaulted, namespace: tenant-a}
spec: {}`)
		g.Expect(c.Create(ctx, remediation)).To(Succeed())
		gotRemediation := &infrav1.Metal3Remediation{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(remediation), gotRemediation)).To(Succeed())
		g.Expect(gotRemediation.Spec.Strategy).NotTo(BeNil())
		g.Expect(gotRemediation.Spec.Strategy.Type).To(Equal(infrav1.RebootRemediationStrategy))
		g.Expect(gotRemediation.Spec.Strategy.RetryLimit).To(Equal(int32(1)))
		g.Expect(gotRemediation.Spec.Strategy.TimeoutSeconds).To(Equal(int32(600)))

		machine := fromYAML(t, `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Machine
metadata: {name: defaulted, namespace: tenant-a}
spec:
  image:
    url: http://172.22.0.1/images/node.qcow2
    checksum: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
  dataTemplate: {name: workers}`)
		g.Expect(c.Create(ctx, machine)).To(Succeed())
		gotMachine := &infrav1.Metal3Machine{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(machine), gotMachine)).To(Succeed())
		g.Expect(gotMachine.Spec.Image.ChecksumType).To(Equal("sha256"))

		template := fromYAML(t, `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3MachineTemplate
metadata: {name: defaulted, namespace: tenant-a}
spec:
  template:
    spec:
      customDeploy: {method: install_coreos}`)
		g.Expect(c.Create(ctx, template)).To(Succeed())
		gotTemplate := &unstructured.Unstructured{}
		gotTemplate.SetGroupVersionKind(infrav1.GroupVersion.WithKind("Metal3MachineTemplate"))
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(template), gotTemplate)).To(Succeed())
		nodeReuse, found, err := unstructured.NestedBool(gotTemplate.Object, "spec", "nodeReuse")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeTrue(), "the CRD should default spec.nodeReuse")
		g.Expect(nodeReuse).To(BeFalse())
	})

	t.Run("identityRef is frozen once a machine has a host, but not on the cluster", func(t *testing.T) {
		g := NewWithT(t)
		machine := &infrav1.Metal3Machine{
			ObjectMeta: metav1.ObjectMeta{Name: "associated", Namespace: tenantNamespace},
			Spec: infrav1.Metal3MachineSpec{
				CustomDeploy: infrav1.CustomDeploy{Method: "install_coreos"},
				IdentityRef:  &infrav1.IdentityRef{Name: "pool-east"},
			},
		}
		g.Expect(c.Create(ctx, machine)).To(Succeed())
		machine.Spec.IdentityRef.Name = "pool-west"
		g.Expect(c.Update(ctx, machine)).To(Succeed(), "not associated yet: the identity may change")

		machine.Annotations = map[string]string{infrav1.HostAnnotation: "pool/host-0"}
		g.Expect(c.Update(ctx, machine)).To(Succeed())
		machine.Spec.IdentityRef.Name = "pool-east"
		err := c.Update(ctx, machine)
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(And(ContainSubstring("spec.identityRef"), ContainSubstring("pool/host-0")))

		cluster := &infrav1.Metal3Cluster{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: tenantNamespace, Name: "defaulted"}, cluster)).To(Succeed())
		cluster.Spec.IdentityRef = &infrav1.IdentityRef{Name: "moved-pool", Context: "dc2"}
		g.Expect(c.Update(ctx, cluster)).To(Succeed(), "re-pointing a cluster's identity is how a pivot moves machines")
	})

	t.Run("Metal3MachineTemplate spec is immutable except automatedCleaningMode", func(t *testing.T) {
		g := NewWithT(t)
		template := &infrav1.Metal3MachineTemplate{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: tenantNamespace, Name: "defaulted"}, template)).To(Succeed())
		template.Spec.Template.Spec.AutomatedCleaningMode = "disabled"
		template.Spec.NodeReuse = ptr.To(true)
		g.Expect(c.Update(ctx, template)).To(Succeed())
		template.Spec.Template.Spec.CustomDeploy.Method = "install_flatcar"
		err := c.Update(ctx, template)
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring("spec.template.spec"))
	})

	t.Run("Metal3DataTemplate clusterName is deprecated in both versions", func(t *testing.T) {
		testDataTemplateClusterName(t, env)
	})

	// The attack: a tenant points its machine's host record at a host that
	// does not exist, or takes another consumer's ID, in its own object;
	// clusterctl move's own JSON patch must still pass.
	t.Run("a machine's pool records are immutable but in clusterctl move's shape", func(t *testing.T) {
		g := NewWithT(t)
		machine := &infrav1.Metal3Machine{
			ObjectMeta: metav1.ObjectMeta{Name: "recorded", Namespace: tenantNamespace},
			Spec:       infrav1.Metal3MachineSpec{CustomDeploy: infrav1.CustomDeploy{Method: "install_coreos"}},
		}
		g.Expect(c.Create(ctx, machine)).To(Succeed())
		machine.Annotations = map[string]string{infrav1.ConsumerIDAnnotation: "someone-else"}
		err := c.Update(ctx, machine)
		g.Expect(err).To(MatchError(ContainSubstring("can only be set to the object's own UID")))
		machine.Annotations = map[string]string{infrav1.ConsumerIDAnnotation: string(machine.UID), infrav1.HostAnnotation: "pool/host-0"}
		g.Expect(c.Update(ctx, machine)).To(Succeed(), "the provider records its consumer ID and the host it intends")
		machine.Annotations[infrav1.HostAnnotation] = "pool/host-1"
		g.Expect(c.Update(ctx, machine)).To(Succeed(), "an intent moves when its host went to someone else")
		machine.Annotations[infrav1.HostAnnotation] = "pool/host-0"
		g.Expect(c.Update(ctx, machine)).To(Succeed())
		machine.Status.Conditions = []metav1.Condition{{
			Type: infrav1.HostAssociatedCondition, Status: metav1.ConditionTrue, Reason: infrav1.AssociatedReason,
			LastTransitionTime: metav1.Now(),
		}}
		g.Expect(c.Status().Update(ctx, machine)).To(Succeed(), "the claim confirmed")

		for _, rewrite := range []map[string]string{
			{infrav1.ConsumerIDAnnotation: string(machine.UID), infrav1.HostAnnotation: "pool/does-not-exist"},
			{infrav1.ConsumerIDAnnotation: string(machine.UID)},
			{infrav1.ConsumerIDAnnotation: "someone-else", infrav1.HostAnnotation: "pool/host-0", clusterctlv1.DeleteForMoveAnnotation: ""},
		} {
			tampered := machine.DeepCopy()
			tampered.Annotations = rewrite
			err := c.Update(ctx, tampered)
			g.Expect(err).To(HaveOccurred(), "rewrite %v", rewrite)
			g.Expect(err.Error()).To(ContainSubstring("metadata.annotations"))
		}

		// clusterctl move marks the source object this way before deleting it.
		movePatch := client.RawPatch(types.JSONPatchType,
			[]byte(`[{"op": "add", "path":"/metadata/annotations", "value":{"`+clusterctlv1.DeleteForMoveAnnotation+`":""}}]`))
		g.Expect(c.Patch(ctx, machine, movePatch)).To(Succeed(), "clusterctl move's patch")
		machine.Annotations[infrav1.ConsumerIDAnnotation] = string(machine.UID)
		machine.Annotations[infrav1.HostAnnotation] = "pool/does-not-exist"
		err = c.Update(ctx, machine)
		g.Expect(err).To(HaveOccurred(), "records do not come back on an object clusterctl move is deleting")
		g.Expect(err.Error()).To(ContainSubstring(clusterctlv1.DeleteForMoveAnnotation))
	})
}

// warningRecorder keeps the warnings the API server sends a client.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (r *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, message)
}

// take returns the warnings received since the last call.
func (r *warningRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.warnings
	r.warnings = nil
	return out
}

// testDataTemplateClusterName: spec.clusterName of a Metal3DataTemplate, as
// upstream CAPM3 v1.14 has it. In v1beta2 it is optional (a template
// several clusters share names none); in v1beta1 the schema still requires
// it. Setting it, in either version, draws the deprecation warning (v1beta1
// requests reach the webhook converted); it may change or be cleared.
func testDataTemplateClusterName(t *testing.T, env *testenv.Env) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	recorder := &warningRecorder{}
	config := rest.CopyConfig(env.Config)
	config.WarningHandlerWithContext = recorder
	c, err := client.New(config, client.Options{Scheme: env.Client.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	const deprecated = "spec.clusterName is deprecated and will be removed in a future release. It is no longer used by the controllers."
	template := func(version, name, clusterName string) *unstructured.Unstructured {
		spec := ""
		if clusterName != "" {
			spec = "\n  clusterName: " + clusterName
		}
		return fromYAML(t, `
apiVersion: infrastructure.cluster.x-k8s.io/`+version+`
kind: Metal3DataTemplate
metadata: {name: `+name+`, namespace: tenant-a}
spec:`+spec+`
  metaData:
    objectNames: [{key: name, object: machine}]`)
	}

	for _, tc := range []struct {
		version, name, clusterName string
		warnings                   []string
		rejected                   string
	}{
		{version: "v1beta2", name: "shared-v1beta2", clusterName: ""},
		{version: "v1beta2", name: "named-v1beta2", clusterName: "cluster-a", warnings: []string{deprecated}},
		{version: "v1beta1", name: "named-v1beta1", clusterName: "cluster-a", warnings: []string{deprecated}},
		{version: "v1beta1", name: "shared-v1beta1", clusterName: "", rejected: "spec.clusterName: Required value"},
	} {
		obj := template(tc.version, tc.name, tc.clusterName)
		err := c.Create(ctx, obj)
		if tc.rejected != "" {
			g.Expect(err).To(MatchError(ContainSubstring(tc.rejected)), "%s without clusterName, as upstream's v1beta1 schema", tc.version)
			recorder.take()
			continue
		}
		g.Expect(err).NotTo(HaveOccurred(), "%s %s", tc.version, tc.name)
		g.Expect(recorder.take()).To(Equal(tc.warnings), "warnings creating %s %s", tc.version, tc.name)
	}

	// Clearing it in v1beta2 makes the template one any cluster may share.
	named := &infrav1.Metal3DataTemplate{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: tenantNamespace, Name: "named-v1beta2"}, named)).To(Succeed())
	named.Spec.ClusterName = "cluster-b"
	g.Expect(c.Update(ctx, named)).To(Succeed(), "clusterName may change")
	g.Expect(recorder.take()).To(Equal([]string{deprecated}))
	named.Spec.ClusterName = ""
	g.Expect(c.Update(ctx, named)).To(Succeed(), "clusterName may be cleared")
	g.Expect(recorder.take()).To(BeEmpty())

	// Read and updated in v1beta1, a template without clusterName shows an
	// empty one, which the schema lets an update keep (ratcheting).
	old := &infrav1beta1.Metal3DataTemplate{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: tenantNamespace, Name: "shared-v1beta2"}, old)).To(Succeed())
	g.Expect(old.Spec.ClusterName).To(BeEmpty())
	old.Labels = map[string]string{"team": "platform"}
	g.Expect(c.Update(ctx, old)).To(Succeed(), "a v1beta1 client may update a template without clusterName")
	g.Expect(recorder.take()).To(BeEmpty())
}
