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

package main

import (
	"context"
	"fmt"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/crdmigrator"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	infrav1beta1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/workload"
	"github.com/metal3-io/cluster-api-provider-metal3/controllers"
	"github.com/metal3-io/cluster-api-provider-metal3/internal/webhooks"
)

// newScheme knows every API the manager reads or writes: core Kubernetes,
// CRDs (the storage migration reads and patches ours),
// CAPI core (v1beta2 contract), BareMetalHosts, Metal3 IPAM, CAPI IPAM
// and both versions of our own kinds: with both, the webhook server also
// serves /convert, which the CRDs call to convert between them.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		clusterv1.AddToScheme,
		bmov1alpha1.AddToScheme,
		ipamv1.AddToScheme,
		capipamv1.AddToScheme,
		infrav1beta1.AddToScheme,
		infrav1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("build scheme: %w", err)
		}
	}
	return scheme, nil
}

// uncachedObjects are read straight from the API server instead of through a
// cluster-wide informer.
func uncachedObjects() []client.Object {
	return []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}}
}

// setupReconcilers registers every controller with the manager, and the
// remote-client cache they share.
func setupReconcilers(ctx context.Context, mgr ctrl.Manager, opts *options) error {
	policy, err := opts.remote.policy.serverPolicy()
	if err != nil {
		return err
	}
	workloadPolicy, err := opts.workloadPolicy.serverPolicy()
	if err != nil {
		return err
	}
	_, err = controllers.Setup(ctx, mgr, controllers.SetupOptions{
		Remote: hostaccess.Options{
			ProbeInterval:    opts.remote.probeInterval,
			ProbeTimeout:     opts.remote.probeTimeout,
			FailureThreshold: opts.remote.failureThreshold,
			ConnectTimeout:   opts.remote.connectTimeout,
			MaxResponseBytes: opts.remote.maxResponseBytes,
			MaxCachedObjects: opts.remote.maxCachedObjects,
			MaxCachedBytes:   opts.remote.maxCachedBytes,
			QPS:              opts.remote.qps,
			Burst:            opts.remote.burst,
			UserAgent:        controllerName,
			Policy:           policy,

			MaxRequestsInFlight: opts.remote.maxRequestsInFlight,
		},
		Workload:          workload.ClustersOptions{Policy: workloadPolicy, QPS: opts.workloadQPS, Burst: opts.workloadBurst},
		WatchFilterValue:  opts.watchFilterValue,
		ProviderNamespace: opts.providerNamespace,
		Concurrency:       opts.concurrency,
		ReconcileTimeout:  opts.reconcileTimeout,
		FastTrack:         opts.fastTrack,
		HostNameIPClaims:  opts.hostNameIPClaims,
	})
	if err != nil {
		return err
	}
	skip := make([]crdmigrator.Phase, 0, len(opts.skipCRDMigrationPhases))
	for _, phase := range opts.skipCRDMigrationPhases {
		skip = append(skip, crdmigrator.Phase(phase))
	}
	return controllers.SetupStorageMigration(ctx, mgr, skip, controller.Options{})
}

// setupWebhooks registers the defaulting and validating webhooks, unless the
// webhook server is disabled (--webhook-port=0).
func setupWebhooks(mgr ctrl.Manager, opts *options) error {
	if !webhooksEnabled(opts) {
		return nil
	}
	return webhooks.SetupWithManager(mgr)
}

// The event recorder of every controller writes Events.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// /metrics is served over authenticated HTTPS (--diagnostics-address): each
// scrape's token and its permission are checked with the API server.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
