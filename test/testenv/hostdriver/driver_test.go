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

package hostdriver

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

const hostNamespace = "metal3"

func TestMain(m *testing.M) {
	// The driver logs nowhere unless asked to, but controller-runtime's
	// informers always use its global logger, which warns when unset.
	ctrl.SetLogger(logr.FromSlogHandler(slog.DiscardHandler))
	os.Exit(m.Run())
}

// server is one API server with whatever advances its hosts, and what
// was seen of them there.
type server struct {
	name     string
	env      *testenv.Env
	recorder *recorder
}

// TestDriverAgreesWithBMO runs the same host lifecycle on two API
// servers, one with the real BMO in test mode and one with the driver,
// and expects the provider to see the same hosts on both at every phase:
// the same status, reached through the same provisioning states in the
// same number of writes.
func TestDriverAgreesWithBMO(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	scheme := testScheme(t)
	bmo := &server{name: "bmo", env: startServer(t, scheme)}
	bmo.env.StartBMO(t, "baremetal-operator-system")
	driven := &server{name: "driver", env: startServer(t, scheme)}
	startDriver(t, driven.env, Options{Scheme: scheme})
	servers := []*server{bmo, driven}

	const hosts = 5
	for _, s := range servers {
		s.recorder = record(t, s.env)
		g.Expect(testenv.RegisterHosts(ctx, s.env.Client, hostNamespace, "host", hosts)).To(Succeed())
	}
	phase(t, servers, "registered", func(h *bmov1alpha1.BareMetalHost) bool {
		return h.Status.Provisioning.State == bmov1alpha1.StateAvailable && h.Status.PoweredOn
	})

	// host-0 is paused, as the provider pauses a paused cluster's hosts:
	// it waits, until unpaused, for what it is given meanwhile.
	for _, s := range servers {
		patchHost(t, s.env.Client, "host-0", func(h *bmov1alpha1.BareMetalHost) {
			metav1.SetMetaDataAnnotation(&h.ObjectMeta, bmov1alpha1.PausedAnnotation, "capm3")
		})
		for i := range hosts {
			provision(t, s.env.Client, fmt.Sprintf("host-%d", i), i == hosts-1)
		}
	}
	phase(t, servers, "provisioned but the paused one", func(h *bmov1alpha1.BareMetalHost) bool {
		if h.Name == "host-0" {
			return h.Status.Provisioning.State == bmov1alpha1.StateAvailable
		}
		return h.Status.Provisioning.State == bmov1alpha1.StateProvisioned && h.Status.PoweredOn
	})
	for _, s := range servers {
		patchHost(t, s.env.Client, "host-0", func(h *bmov1alpha1.BareMetalHost) {
			delete(h.Annotations, bmov1alpha1.PausedAnnotation)
		})
	}
	phase(t, servers, "provisioned", func(h *bmov1alpha1.BareMetalHost) bool {
		return h.Status.Provisioning.State == bmov1alpha1.StateProvisioned && h.Status.PoweredOn
	})

	// Every host at once: BMO's fixture keeps one power state for all.
	remediation := infrav1.RemediationRebootAnnotationPrefix + "agreement"
	for _, s := range servers {
		forEachHost(t, s.env.Client, hosts, func(h *bmov1alpha1.BareMetalHost) { metav1.SetMetaDataAnnotation(&h.ObjectMeta, remediation, "") })
	}
	phase(t, servers, "rebooting", func(h *bmov1alpha1.BareMetalHost) bool { return !h.Status.PoweredOn })
	for _, s := range servers {
		forEachHost(t, s.env.Client, hosts, func(h *bmov1alpha1.BareMetalHost) { delete(h.Annotations, remediation) })
	}
	phase(t, servers, "rebooted", func(h *bmov1alpha1.BareMetalHost) bool { return h.Status.PoweredOn })

	// Released as hostbinding's Release does: first what to provision,
	// then, once the host is available again, the claim.
	for _, s := range servers {
		forEachHost(t, s.env.Client, hosts, func(h *bmov1alpha1.BareMetalHost) {
			h.Spec.Image, h.Spec.CustomDeploy = nil, nil
			h.Spec.UserData, h.Spec.MetaData, h.Spec.NetworkData = nil, nil, nil
			h.Spec.Online = false
		})
	}
	phase(t, servers, "deprovisioned", func(h *bmov1alpha1.BareMetalHost) bool {
		return h.Status.Provisioning.State == bmov1alpha1.StateAvailable && !h.Status.PoweredOn &&
			h.Status.Provisioning.RootDeviceHints != nil
	})
	for _, s := range servers {
		forEachHost(t, s.env.Client, hosts, func(h *bmov1alpha1.BareMetalHost) {
			h.Spec.ConsumerRef = nil
			delete(h.Labels, clusterv1.ClusterNameLabel)
		})
	}
	phase(t, servers, "released", func(h *bmov1alpha1.BareMetalHost) bool {
		ready := apimeta.FindStatusCondition(h.Status.Conditions, bmov1alpha1.ReadyCondition)
		return ready != nil && ready.ObservedGeneration == h.Generation
	})

	for _, s := range servers {
		g.Expect(s.env.Client.DeleteAllOf(ctx, &bmov1alpha1.BareMetalHost{}, client.InNamespace(hostNamespace))).To(Succeed())
	}
	for _, s := range servers {
		g.Eventually(func(g Gomega) {
			list := &bmov1alpha1.BareMetalHostList{}
			g.Expect(s.env.Client.List(ctx, list, client.InNamespace(hostNamespace))).To(Succeed())
			g.Expect(list.Items).To(BeEmpty())
		}).WithTimeout(time.Minute).Should(Succeed(), "%s lets deleted hosts go", s.name)
	}

	g.Eventually(func(g Gomega) {
		want, got := bmo.recorder.history(), driven.recorder.history()
		g.Expect(cmp.Diff(want, got)).To(BeEmpty(), "provisioning states and number of writes per host (-bmo +driver)")
	}).WithTimeout(10 * time.Second).Should(Succeed())
	t.Logf("each host's states: %v", driven.recorder.history()["host-0"])
}

// phase waits until every host of every server is done, then expects
// the provider's view of the hosts to be the same on all servers.
func phase(t *testing.T, servers []*server, name string, done func(*bmov1alpha1.BareMetalHost) bool) {
	t.Helper()
	g := NewWithT(t)
	for _, s := range servers {
		start := time.Now()
		g.Eventually(func(g Gomega) {
			for _, h := range listHosts(g, s.env.Client) {
				g.Expect(done(&h)).To(BeTrue(), "%s: host %s is not %s: %s", s.name, h.Name, name, h.Status.Provisioning.State)
			}
		}).WithTimeout(2*time.Minute).WithPolling(100*time.Millisecond).Should(Succeed(), "%s: hosts %s", s.name, name)
		t.Logf("%s: hosts %s after %s", s.name, name, time.Since(start).Round(10*time.Millisecond))
	}
	// Trailing writes may still land on either side.
	g.Eventually(func(g Gomega) {
		want := views(g, servers[0].env.Client)
		for _, s := range servers[1:] {
			g.Expect(cmp.Diff(want, views(g, s.env.Client))).To(BeEmpty(),
				"hosts %s: (-%s +%s)", name, servers[0].name, s.name)
		}
	}).WithTimeout(15 * time.Second).Should(Succeed())
}

// view is a host as the provider sees it, and what else BMO writes that
// does not differ between API servers (timestamps and versions do).
type view struct {
	State             bmov1alpha1.ProvisioningState
	OperationalStatus bmov1alpha1.OperationalStatus
	ErrorType         bmov1alpha1.ErrorType
	ErrorMessage      string
	PoweredOn         bool
	HardwareDetails   *bmov1alpha1.HardwareDetails
	HardwareProfile   string
	Image             bmov1alpha1.Image
	CustomDeploy      *bmov1alpha1.CustomDeploy
	ProvisionerID     string
	BootMode          bmov1alpha1.BootMode
	RootDeviceHints   *bmov1alpha1.RootDeviceHints
	GoodCredentials   string
	TriedCredentials  string
	Operations        string
	Conditions        []string
	LastUpdated       bool
	Architecture      string
	Finalizers        []string
	Annotations       map[string]string
}

func views(g Gomega, c client.Client) map[string]view {
	out := map[string]view{}
	for _, h := range listHosts(g, c) {
		st := h.Status
		v := view{
			State: st.Provisioning.State, OperationalStatus: st.OperationalStatus,
			ErrorType: st.ErrorType, ErrorMessage: st.ErrorMessage, PoweredOn: st.PoweredOn,
			HardwareDetails: st.HardwareDetails, HardwareProfile: st.HardwareProfile,
			Image: st.Provisioning.Image, CustomDeploy: st.Provisioning.CustomDeploy,
			ProvisionerID: st.Provisioning.ID, BootMode: st.Provisioning.BootMode,
			RootDeviceHints:  st.Provisioning.RootDeviceHints,
			GoodCredentials:  credentials(st.GoodCredentials),
			TriedCredentials: credentials(st.TriedCredentials),
			LastUpdated:      st.LastUpdated != nil,
			Architecture:     h.Spec.Architecture, Finalizers: h.Finalizers, Annotations: h.Annotations,
		}
		for _, op := range []struct {
			name   string
			metric bmov1alpha1.OperationMetric
		}{
			{"register", st.OperationHistory.Register}, {"inspect", st.OperationHistory.Inspect},
			{"provision", st.OperationHistory.Provision}, {"deprovision", st.OperationHistory.Deprovision},
		} {
			v.Operations += fmt.Sprintf("%s:%t/%t ", op.name, !op.metric.Start.IsZero(), !op.metric.End.IsZero())
		}
		for _, cond := range st.Conditions {
			v.Conditions = append(v.Conditions, fmt.Sprintf("%s=%s %s gen %d", cond.Type, cond.Status, cond.Reason, cond.ObservedGeneration))
		}
		out[h.Name] = v
	}
	return out
}

// credentials is a credentials status without the Secret's version,
// which differs between API servers: only that there is one.
func credentials(c bmov1alpha1.CredentialsStatus) string {
	if c.Reference == nil {
		return ""
	}
	return fmt.Sprintf("%s/%s version set %t", c.Reference.Namespace, c.Reference.Name, c.Version != "")
}

// provision claims a host and gives it what to provision, in one update
// as hostbinding's claim does for a machine without a data template.
func provision(t *testing.T, c client.Client, name string, customDeploy bool) {
	t.Helper()
	ctx := t.Context()
	userData := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: hostNamespace, Name: name + "-user-data"},
		StringData: map[string]string{"value": "#cloud-config\n", "format": "cloud-config"},
	}
	if err := c.Create(ctx, userData); err != nil {
		t.Fatalf("create user data of %s: %v", name, err)
	}
	patchHost(t, c, name, func(h *bmov1alpha1.BareMetalHost) {
		h.Spec.ConsumerRef = &corev1.ObjectReference{
			APIVersion: infrav1.GroupVersion.String(), Kind: "Metal3Machine",
			Namespace: hostNamespace, Name: "machine-" + name, UID: types.UID("uid-" + name),
		}
		metav1.SetMetaDataLabel(&h.ObjectMeta, clusterv1.ClusterNameLabel, "cluster")
		h.Spec.Online = true
		if customDeploy {
			h.Spec.CustomDeploy = &bmov1alpha1.CustomDeploy{Method: "install_coreos"}
		} else {
			h.Spec.Image = &bmov1alpha1.Image{
				URL: "http://images.example.com/node.qcow2", Checksum: "http://images.example.com/node.qcow2.sha256sum",
				ChecksumType: bmov1alpha1.SHA256, DiskFormat: ptr.To("qcow2"),
			}
		}
		h.Spec.UserData = &corev1.SecretReference{Namespace: hostNamespace, Name: userData.Name}
	})
}

func forEachHost(t *testing.T, c client.Client, n int, change func(*bmov1alpha1.BareMetalHost)) {
	t.Helper()
	for i := range n {
		patchHost(t, c, fmt.Sprintf("host-%d", i), change)
	}
}

// patchHost changes a host as the provider does: a merge patch guarded by
// the resourceVersion, retried on conflict.
func patchHost(t *testing.T, c client.Client, name string, change func(*bmov1alpha1.BareMetalHost)) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		host := &bmov1alpha1.BareMetalHost{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: hostNamespace, Name: name}, host); err != nil {
			return err
		}
		updated := host.DeepCopy()
		change(updated)
		return c.Patch(t.Context(), updated, client.MergeFromWithOptions(host, client.MergeFromWithOptimisticLock{}))
	}).WithTimeout(10*time.Second).Should(Succeed(), "patch host %s", name)
}

func listHosts(g Gomega, c client.Client) []bmov1alpha1.BareMetalHost {
	list := &bmov1alpha1.BareMetalHostList{}
	g.Expect(c.List(context.Background(), list, client.InNamespace(hostNamespace))).To(Succeed())
	return list.Items
}

// recorder follows every write to the hosts of an API server through a
// watch, which sees each one.
type recorder struct {
	mu     sync.Mutex
	states map[string][]bmov1alpha1.ProvisioningState
	writes map[string]int
}

func record(t *testing.T, env *testenv.Env) *recorder {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(t.Context(), &bmov1alpha1.BareMetalHostList{}, client.InNamespace(hostNamespace))
	if err != nil {
		t.Fatalf("watch hosts: %v", err)
	}
	t.Cleanup(w.Stop)
	r := &recorder{states: map[string][]bmov1alpha1.ProvisioningState{}, writes: map[string]int{}}
	go func() {
		for ev := range w.ResultChan() {
			host, ok := ev.Object.(*bmov1alpha1.BareMetalHost)
			if !ok {
				if t.Context().Err() == nil { // else the test is over
					t.Errorf("watching hosts: %v", ev.Object)
				}
				return
			}
			r.mu.Lock()
			if ev.Type == watch.Modified {
				r.writes[host.Name]++
			}
			states := r.states[host.Name]
			if state := host.Status.Provisioning.State; len(states) == 0 || states[len(states)-1] != state {
				r.states[host.Name] = append(states, state)
			}
			r.mu.Unlock()
		}
	}()
	return r
}

// history is, per host, its provisioning states in order and how many
// times the host was written.
func (r *recorder) history() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for name, states := range r.states {
		out[name] = fmt.Sprintf("%q in %d writes, the test's included", states, r.writes[name])
	}
	return out
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := bmov1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// startServer runs an API server with the BareMetalHost CRDs and the
// hosts' namespace.
func startServer(t *testing.T, scheme *runtime.Scheme) *testenv.Env {
	t.Helper()
	env := testenv.Start(t, testenv.Options{Scheme: scheme, CRDDirectoryPaths: []string{testenv.BMOCRDPath(t)}})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostNamespace}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return env
}

func startDriver(t *testing.T, env *testenv.Env, opts Options) *Driver {
	t.Helper()
	d, err := Start(context.Background(), env.Config, opts)
	if err != nil {
		t.Fatalf("start the host driver: %v", err)
	}
	t.Cleanup(d.Stop)
	return d
}
