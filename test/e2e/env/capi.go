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
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/core/reconcilers/cluster"
	"sigs.k8s.io/cluster-api/core/reconcilers/machine"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinedeployment"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinehealthcheck"
	"sigs.k8s.io/cluster-api/core/reconcilers/machineset"
	"sigs.k8s.io/cluster-api/core/setup"
	coreadmission "sigs.k8s.io/cluster-api/core/webhooks/admission"
	"sigs.k8s.io/cluster-api/core/webhooks/conversion"
	"sigs.k8s.io/cluster-api/feature"
	"sigs.k8s.io/cluster-api/util/contract"
	"sigs.k8s.io/cluster-api/util/index"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// capiWebhooks is the webhook installation of a management cluster: Cluster
// API's admission webhooks from its module, renamed so that they do not
// replace ours (both use kubebuilder's default names), and CRD conversion
// through the same local server, so v1beta1 manifests work.
func capiWebhooks(t testenv.T) *envtest.WebhookInstallOptions {
	t.Helper()
	path := filepath.Join(testenv.CAPIModuleDir(t), "core", "config", "webhook", "manifests.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read Cluster API's webhook manifests: %v", err)
	}
	opts := &envtest.WebhookInstallOptions{
		Paths:                   testenv.ProviderWebhookPaths(t),
		IgnoreSchemeConvertible: true,
	}
	decoder := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := decoder.Read()
		if err != nil {
			break
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("parse %s: %v", path, err)
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			w := &admissionv1.MutatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, w); err != nil {
				t.Fatalf("parse %s: %v", path, err)
			}
			w.Name += "-cluster-api"
			opts.MutatingWebhooks = append(opts.MutatingWebhooks, w)
		case "ValidatingWebhookConfiguration":
			w := &admissionv1.ValidatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, w); err != nil {
				t.Fatalf("parse %s: %v", path, err)
			}
			w.Name += "-cluster-api"
			opts.ValidatingWebhooks = append(opts.ValidatingWebhooks, w)
		}
	}
	return opts
}

// apiVersionGetter is set once per process, by the first management
// cluster (which lives as long as the environment): the getter is global
// in Cluster API, and every management cluster holds the same CRDs.
var apiVersionGetter sync.Once

// setupCAPIWebhooks registers Cluster API's admission webhooks and
// conversions on mgr, beside ours.
func setupCAPIWebhooks(mgr ctrl.Manager) error {
	reader := mgr.GetAPIReader()
	apiVersionGetter.Do(func() { conversion.SetAPIVersionGetter(contractVersionGetter(reader)) })
	coreadmission.SetMinNodeStartupTimeoutSeconds(0)
	for _, w := range []interface{ SetupWebhookWithManager(ctrl.Manager) error }{
		&coreadmission.Cluster{Client: reader}, &coreadmission.ClusterClass{Client: reader},
		&coreadmission.Machine{}, &coreadmission.MachineSet{}, &coreadmission.MachineDeployment{},
		&coreadmission.MachineDrainRule{}, &coreadmission.MachinePool{}, &coreadmission.MachineHealthCheck{},
		&coreadmission.ClusterResourceSet{}, &coreadmission.ClusterResourceSetBinding{},
		&coreadmission.ExtensionConfig{}, &coreadmission.IPAddress{Client: reader}, &coreadmission.IPAddressClaim{},
	} {
		if err := w.SetupWebhookWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}

// contractVersionGetter answers what converting to v1beta1 needs: the API
// version of the kinds an object refers to, read, as Cluster API's manager
// does, from the contract label of their CRD.
func contractVersionGetter(reader client.Reader) func(context.Context, schema.GroupKind) (string, error) {
	return func(ctx context.Context, gk schema.GroupKind) (string, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := reader.Get(ctx, client.ObjectKey{Name: contract.CalculateCRDName(gk.Group, gk.Kind)}, crd); err != nil {
			return "", err
		}
		for _, label := range []string{"cluster.x-k8s.io/v1beta2", "cluster.x-k8s.io/v1beta1"} {
			if value := crd.Labels[label]; value != "" {
				versions := strings.Split(value, "_")
				return schema.GroupVersion{Group: gk.Group, Version: versions[len(versions)-1]}.String(), nil
			}
		}
		return "", fmt.Errorf("CRD %s carries no Cluster API contract label", crd.Name)
	}
}

// capiManagers counts the Cluster API managers of this process: each needs
// its own informer name.
var capiManagers atomic.Int32

// startCAPI runs Cluster API's core reconcilers (Cluster, Machine,
// MachineSet, MachineDeployment, MachineHealthCheck) and its ClusterCache
// in-process against a management cluster until the test ends.
func startCAPI(t testenv.T, cfg *rest.Config) {
	t.Helper()
	// The priority queue of controller-runtime v0.24.1 can deadlock at
	// shutdown; the rate limiting gate depends on it.
	if err := feature.MutableGates.Set("PriorityQueue=false,ReconcilerRateLimiting=false"); err != nil {
		t.Fatalf("Cluster API feature gates: %v", err)
	}
	name := fmt.Sprintf("capi-e2e-%d", capiManagers.Add(1))
	scheme := Scheme()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Our own manager runs a controller of the same name ("clustercache").
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      setup.ManagerCacheOptions(scheme, name, "", 10*time.Minute),
		Client:     setup.ManagerClientOptions(),
	})
	if err != nil {
		t.Fatalf("Cluster API manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	fail := func(what string, err error) {
		cancel()
		t.Fatalf("Cluster API %s: %v", what, err)
	}
	if err := index.AddDefaultIndexes(ctx, mgr); err != nil {
		fail("indexes", err)
	}
	secrets, err := setup.CreateSecretCachingClient(mgr)
	if err != nil {
		fail("secret client", err)
	}
	clusterCache, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: secrets,
		Cache:        setup.ClusterCacheCacheOptions(),
		Client:       setup.ClusterCacheClientOptions(name, 20, 30),
	}, controller.Options{MaxConcurrentReconciles: 5})
	if err != nil {
		fail("ClusterCache", err)
	}
	opts := controller.Options{MaxConcurrentReconciles: 5}
	for what, setupErr := range map[string]error{
		"Cluster controller": (&cluster.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterCache: clusterCache,
			RemoteConnectionGracePeriod: 50 * time.Second,
		}).SetupWithManager(ctx, mgr, opts),
		"Machine controller": (&machine.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterCache: clusterCache,
			RemoteConditionsGracePeriod: 5 * time.Minute,
		}).SetupWithManager(ctx, mgr, opts),
		"MachineSet controller": (&machineset.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterCache: clusterCache,
			PreflightChecks: sets.New(clusterv1.MachineSetPreflightCheckAll),
		}).SetupWithManager(ctx, mgr, opts),
		"MachineDeployment controller": (&machinedeployment.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		}).SetupWithManager(ctx, mgr, opts),
		"MachineHealthCheck controller": (&machinehealthcheck.Reconciler{
			Client: mgr.GetClient(), ClusterCache: clusterCache,
		}).SetupWithManager(ctx, mgr, opts),
	} {
		if setupErr != nil {
			fail(what, setupErr)
		}
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Cluster API manager: %v", err)
		}
		// The ClusterCache's caches of workload clusters run on a context
		// of their own, which the manager's stop leaves running: their
		// watches would hold the workload API server's shutdown for a
		// minute.
		if s, ok := clusterCache.(interface{ Shutdown() }); ok {
			s.Shutdown()
		}
	})
}
