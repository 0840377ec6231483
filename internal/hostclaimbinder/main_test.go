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
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// The envtest tests of this package share one pool API server and one
// binder. Each test keeps to namespaces of its own, and its
// HostDeployPolicies admit only its own tenant namespaces, so the tests run
// in parallel without seeing each other's hosts. Each test runs the real
// Bare Metal Operator of its own, watching its host namespace only: BMO's
// test-mode provisioner keeps one provisioning state for all the hosts of a
// process, so one host deprovisioning while another provisions makes them
// undo each other's work.
var (
	suite        testenv.Suite
	sharedPool   testenv.Once[*poolEnv]
	namespaceSeq int
	namespaceMu  sync.Mutex
)

// nodeReuseGrace is the binder's grace in these tests: short, so that the
// end of a reservation is seen.
const nodeReuseGrace = 3 * time.Second

// maxUnhealthyHosts is how many hosts one namespace's claims may have
// marked unhealthy in these tests.
const maxUnhealthyHosts = 1

type poolEnv struct {
	env         *testenv.Env
	binder      *testenv.Process
	metricsAddr string
	// processMu serialises starting processes: envtest's AddUser, which
	// each start calls, is not safe for concurrent use.
	processMu sync.Mutex
}

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	code := m.Run()
	suite.Close(code != 0)
	os.Exit(code)
}

func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := bmov1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	return scheme
}

// startPool starts the shared API server and the binder with the
// rights config/hostclaim-binder gives it (installed as a pool admin
// would, with kustomize), not system:masters: a rule missing from its
// ClusterRole fails these tests.
func startPool(t testenv.T) *poolEnv {
	env := testenv.Start(t, testenv.Options{Scheme: newScheme(), CRDDirectoryPaths: []string{testenv.BMOCRDPath(t)}})
	metricsAddr := testenv.FreeLoopbackAddr(t)
	binder := env.StartHostClaimBinder(t, "--metrics-bind-address="+metricsAddr,
		"--node-reuse-grace="+nodeReuseGrace.String(), "--v=2",
		"--max-unhealthy-hosts-per-namespace="+strconv.Itoa(maxUnhealthyHosts),
		"--allowed-custom-deploy-methods=install_coreos")
	return &poolEnv{env: env, binder: binder, metricsAddr: metricsAddr}
}

// testPool returns the shared pool; the binder's output is shown if the
// test fails.
func testPool(t *testing.T) *poolEnv {
	t.Helper()
	p := sharedPool.Get(t, &suite, startPool)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("hostclaim-binder output:\n%s", p.binder.Output())
		}
	})
	return p
}

// namespace creates a namespace named base plus a suffix unique in the
// package, with labels.
func (p *poolEnv) namespace(t *testing.T, base string, labels map[string]string) string {
	t.Helper()
	namespaceMu.Lock()
	namespaceSeq++
	name := fmt.Sprintf("%s-%d", base, namespaceSeq)
	namespaceMu.Unlock()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := p.env.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// hosts creates a host namespace with count hosts named node-<i>, a BMO
// for them, and a HostDeployPolicy admitting claims as criteria say.
func (p *poolEnv) hosts(t *testing.T, count int, criteria *bmov1alpha1.HostClaimNamespaces) string {
	t.Helper()
	ns := p.namespace(t, "pool", nil)
	ctx := context.Background()
	p.startBMO(t, ns)
	if err := testenv.RegisterHosts(ctx, p.env.Client, ns, "node", count); err != nil {
		t.Fatal(err)
	}
	policy := &bmov1alpha1.HostDeployPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenants"},
		Spec:       bmov1alpha1.HostDeployPolicySpec{HostClaimNamespaces: criteria},
	}
	if err := p.env.Client.Create(ctx, policy); err != nil {
		t.Fatalf("create HostDeployPolicy: %v", err)
	}
	return ns
}

// startBMO runs a BMO of its own for the hosts of namespace, until the
// test ends.
func (p *poolEnv) startBMO(t *testing.T, namespace string) {
	t.Helper()
	bmoDir, err := testenv.BMODir()
	if err != nil {
		t.Fatal(err)
	}
	p.processMu.Lock()
	defer p.processMu.Unlock()
	p.env.RunProcess(t, filepath.Join(bmoDir, "baremetal-operator"),
		[]string{"POD_NAMESPACE=" + namespace, "WATCH_NAMESPACE=" + namespace},
		"--test-mode", "--webhook-port=0",
		"--metrics-addr="+testenv.FreeLoopbackAddr(t), "--health-addr="+testenv.FreeLoopbackAddr(t))
}

var testImage = &bmov1alpha1.Image{
	URL:          "http://172.22.0.1/images/node.qcow2",
	Checksum:     "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
	ChecksumType: bmov1alpha1.SHA256,
}

// claim creates a HostClaim; with userData, a Secret holding it first.
func (p *poolEnv) claim(t *testing.T, namespace, name, userData string, mutate ...func(*bmov1alpha1.HostClaim)) *bmov1alpha1.HostClaim {
	t.Helper()
	ctx := context.Background()
	c := &bmov1alpha1.HostClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: map[string]string{}},
		Spec:       bmov1alpha1.HostClaimSpec{PoweredOn: true},
	}
	if userData != "" {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-userdata"},
			Data:       map[string][]byte{"userData": []byte(userData)},
		}
		if err := p.env.Client.Create(ctx, secret); err != nil {
			t.Fatalf("create Secret: %v", err)
		}
		c.Spec.UserData = &corev1.SecretReference{Name: secret.Name}
	}
	for _, m := range mutate {
		m(c)
	}
	if err := p.env.Client.Create(ctx, c); err != nil {
		t.Fatalf("create HostClaim %s/%s: %v", namespace, name, err)
	}
	return c
}

func withImage(c *bmov1alpha1.HostClaim) { c.Spec.Image = testImage.DeepCopy() }

func (p *poolEnv) getClaim(g Gomega, c *bmov1alpha1.HostClaim) *bmov1alpha1.HostClaim {
	got := &bmov1alpha1.HostClaim{}
	g.Expect(p.env.Client.Get(context.Background(), client.ObjectKeyFromObject(c), got)).To(Succeed())
	return got
}

func (p *poolEnv) getHost(g Gomega, namespace, name string) *bmov1alpha1.BareMetalHost {
	got := &bmov1alpha1.BareMetalHost{}
	g.Expect(p.env.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, got)).To(Succeed())
	return got
}

// condition returns the claim's condition of that type, or an empty one.
func condition(c *bmov1alpha1.HostClaim, conditionType string) metav1.Condition {
	if cond := meta.FindStatusCondition(c.Status.Conditions, conditionType); cond != nil {
		return *cond
	}
	return metav1.Condition{}
}

// boundHost waits until the claim is bound and reports its host.
func (p *poolEnv) boundHost(t *testing.T, c *bmov1alpha1.HostClaim, timeout time.Duration) *bmov1alpha1.BareMetalHost {
	t.Helper()
	var host *bmov1alpha1.BareMetalHost
	NewWithT(t).Eventually(func(g Gomega) {
		got := p.getClaim(g, c)
		g.Expect(condition(got, bmov1alpha1.AssociatedCondition).Status).To(Equal(metav1.ConditionTrue), "claim %s associated", c.Name)
		g.Expect(got.Status.BareMetalHost).NotTo(BeNil())
		host = p.getHost(g, got.Status.BareMetalHost.Namespace, got.Status.BareMetalHost.Name)
		g.Expect(host.Spec.ConsumerRef).NotTo(BeNil())
		g.Expect(host.Spec.ConsumerRef.UID).To(Equal(got.UID), "the host's consumerRef is the claim")
	}).WithTimeout(timeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	return host
}

// claimsOf lists which claim UID each host of namespace is bound to.
func (p *poolEnv) consumers(g Gomega, namespace string) map[string]string {
	hosts := &bmov1alpha1.BareMetalHostList{}
	g.Expect(p.env.Client.List(context.Background(), hosts, client.InNamespace(namespace))).To(Succeed())
	out := map[string]string{}
	for _, h := range hosts.Items {
		if h.Spec.ConsumerRef != nil {
			out[h.Name] = string(h.Spec.ConsumerRef.UID)
		}
	}
	return out
}
