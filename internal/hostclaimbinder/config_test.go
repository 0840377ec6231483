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

package hostclaimbinder

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// TestInstallConfig renders config/hostclaim-binder as `kubectl apply -k`
// would and checks what a pool admin gets: the binder's namespace, its
// ServiceAccount bound to its ClusterRole and leader election Role, a
// hardened Deployment with probes, and a metrics Service. (The envtest
// suite installs the same objects and runs the binder with that role.)
func TestInstallConfig(t *testing.T) {
	g := NewWithT(t)
	kinds := map[string][]string{}
	var deployment appsv1.Deployment
	var binding rbacv1.ClusterRoleBinding
	for _, obj := range testenv.KustomizeBuild(t, "config/hostclaim-binder") {
		kinds[obj.GetKind()] = append(kinds[obj.GetKind()], obj.GetNamespace()+"/"+obj.GetName())
		switch obj.GetKind() {
		case "Deployment":
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &deployment)).To(Succeed())
		case "ClusterRoleBinding":
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &binding)).To(Succeed())
		}
	}
	g.Expect(kinds).To(Equal(map[string][]string{
		"Namespace":          {"/hostclaim-binder-system"},
		"ServiceAccount":     {"hostclaim-binder-system/hostclaim-binder"},
		"ClusterRole":        {"/hostclaim-binder"},
		"ClusterRoleBinding": {"/hostclaim-binder"},
		"Role":               {"hostclaim-binder-system/hostclaim-binder-leader-election"},
		"RoleBinding":        {"hostclaim-binder-system/hostclaim-binder-leader-election"},
		"Deployment":         {"hostclaim-binder-system/hostclaim-binder"},
		"Service":            {"hostclaim-binder-system/hostclaim-binder-metrics"},
	}))
	g.Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: "hostclaim-binder", Namespace: "hostclaim-binder-system"}))

	pod := deployment.Spec.Template.Spec
	g.Expect(pod.ServiceAccountName).To(Equal("hostclaim-binder"))
	g.Expect(pod.Containers).To(HaveLen(1))
	c := pod.Containers[0]
	g.Expect(c.Image).To(Equal("quay.io/metal3-io/hostclaim-binder:latest"))
	g.Expect(c.Args).To(ContainElements("--leader-elect", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081"))
	g.Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
	g.Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
	g.Expect(*c.SecurityContext.RunAsNonRoot).To(BeTrue())
	g.Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(*c.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
	g.Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(BeEquivalentTo("ALL")))
}
