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

// Package hostdriver advances BareMetalHosts the way the Bare Metal Operator
// (BMO) v0.13.2 does in --test-mode, where its fixture provisioner stands in
// for Ironic, so that benchmarks can run thousands of hosts without a BMO
// process per API server.
//
// It is a real controller: it watches BareMetalHosts on an API server and
// writes what BMO writes, in the same order and in as many requests — the
// finalizer, status.provisioning.state through registering, inspecting,
// preparing, available, provisioning, provisioned, deprovisioning and the
// deletion states, the fixture's hardware details, the hardware profile and
// root device hints, the credentials, the fake provisioner ID, the deployed
// image or custom deploy, power following spec.online and the reboot
// annotations, operationHistory, lastUpdated and BMO's conditions — through
// the status subresource with optimistic concurrency. Paused hosts are left
// alone, as are hosts with an error (but for BMC credentials, which BMO
// retries).
//
// It deliberately does not mirror what no provider reads and a benchmark
// would only pay for: Ironic and anything behind it (real inspection, power,
// cleaning, RAID, firmware settings and updates, servicing, data images,
// preprovisioning images, detached hosts), the objects BMO creates next to a
// host (HardwareData, HostFirmwareSettings, HostFirmwareComponents, Events),
// the label, owner and finalizer BMO puts on the BMC Secret, and BMO's
// periodic re-reads of hosts that nothing changed. BMC credentials are only
// read while registering. The fixture's state is shared by all hosts of a
// BMO process, so there only the first host waits for inspection,
// provisioning and deprovisioning; the driver gives every host the same
// Delays, none by default.
package hostdriver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/go-logr/logr"
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Defaults are BMO's own: --kube-api-qps, --kube-api-burst and its
// concurrency on a machine with 8 or more cores.
const (
	DefaultWorkers = 8
	DefaultQPS     = 20
	DefaultBurst   = 30
)

// stepsPerPass bounds the writes of one reconcile, so one busy host cannot
// hold a worker forever.
const stepsPerPass = 32

// Options configure a Driver.
type Options struct {
	// Namespaces whose hosts are advanced; all when empty.
	Namespaces []string
	// Workers reconcile hosts in parallel; DefaultWorkers when zero.
	Workers int
	// QPS and Burst limit the driver's API client; DefaultQPS and
	// DefaultBurst when zero. A host takes nine writes to become
	// available, so a thousand take 7.5 minutes at BMO's 20 QPS: raise
	// them to go faster than BMO would.
	QPS   float32
	Burst int
	// Scheme for the driver's client; client-go's and metal3.io's when nil.
	Scheme *runtime.Scheme
	// Delays keep each host in the fixture's slow states.
	Delays Delays
	// Logger for the controller; none when zero.
	Logger logr.Logger
}

// Delays are how long a host stays inspecting, provisioning and
// deprovisioning. BMO's fixture takes 2 s, 10 s and 10 s for the first host
// of a process and nothing for the others.
type Delays struct {
	Inspect, Provision, Deprovision time.Duration
}

// Driver advances hosts on one API server until stopped.
type Driver struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Start runs a driver against the API server of cfg until ctx ends or Stop
// is called; it returns once the driver sees the hosts it is to advance.
func Start(ctx context.Context, cfg *rest.Config, opts Options) (*Driver, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = orDefault(opts.QPS, DefaultQPS), orDefault(opts.Burst, DefaultBurst)
	scheme := opts.Scheme
	if scheme == nil {
		scheme = runtime.NewScheme()
		if err := errors.Join(clientgoscheme.AddToScheme(scheme), bmov1alpha1.AddToScheme(scheme)); err != nil {
			return nil, fmt.Errorf("build the driver's scheme: %w", err)
		}
	}
	cacheOpts := cache.Options{}
	if len(opts.Namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range opts.Namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	log := opts.Logger
	if log.GetSink() == nil {
		// Not logr.Discard(): its nil sink would have controller-runtime
		// fall back to, and warn about, its global logger.
		log = logr.FromSlogHandler(slog.DiscardHandler)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Cache: cacheOpts, Logger: log,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, fmt.Errorf("create the host driver's manager: %w", err)
	}
	r := &reconciler{client: mgr.GetClient(), machine: machine{
		// Uncached: a cache of every Secret costs more than one read per
		// registration.
		secrets: mgr.GetAPIReader(), delays: opts.Delays, now: time.Now,
	}}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("hostdriver").
		For(&bmov1alpha1.BareMetalHost{}, builder.WithPredicates(predicate.Funcs{UpdateFunc: wantsUpdate})).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: orDefault(opts.Workers, DefaultWorkers),
			// Tests and benchmarks run one driver per API server in
			// one process.
			SkipNameValidation: ptr.To(true),
		}).
		Complete(r)
	if err != nil {
		return nil, fmt.Errorf("set up the host driver: %w", err)
	}
	// Created now, so that waiting for the cache waits for the hosts.
	if _, err := mgr.GetCache().GetInformer(ctx, &bmov1alpha1.BareMetalHost{}); err != nil {
		return nil, fmt.Errorf("watch BareMetalHosts: %w", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	d := &Driver{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		// Stopping for good: a failed start must not leave Start
		// waiting for a cache that never syncs.
		d.err = mgr.Start(ctx)
		cancel()
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		cancel()
		<-d.done
		return nil, fmt.Errorf("start the host driver: %w", errors.Join(d.err, ctx.Err()))
	}
	return d, nil
}

// Stop stops the driver and waits until it has.
func (d *Driver) Stop() {
	d.cancel()
	<-d.done
}

func orDefault[N int | float32](v, def N) N {
	if v == 0 {
		return def
	}
	return v
}

// wantsUpdate is BMO's event filter: a host is looked at again when its
// spec, finalizers or annotations change, not for status-only writes
// (including the driver's own, which it follows up itself).
func wantsUpdate(e event.UpdateEvent) bool {
	return e.ObjectNew.GetGeneration() != e.ObjectOld.GetGeneration() ||
		!reflect.DeepEqual(e.ObjectNew.GetFinalizers(), e.ObjectOld.GetFinalizers()) ||
		!reflect.DeepEqual(e.ObjectNew.GetAnnotations(), e.ObjectOld.GetAnnotations())
}

type reconciler struct {
	client  client.Client
	machine machine
}

// Reconcile takes a host as far as it goes now, one write per step. It
// carries on from what each write returns rather than from the cache, which
// would lag behind its own writes and cost a conflict each time.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	host := &bmov1alpha1.BareMetalHost{}
	if err := r.client.Get(ctx, req.NamespacedName, host); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	for range stepsPerPass {
		s, err := r.machine.advance(ctx, host)
		if err != nil {
			return ctrl.Result{}, err
		}
		switch s.write {
		case writeNone:
			return ctrl.Result{RequeueAfter: s.after}, nil
		case writeObject:
			err = r.client.Update(ctx, host)
		case writeStatus:
			err = r.client.Status().Update(ctx, host)
		}
		switch {
		case apierrors.IsNotFound(err):
			return ctrl.Result{}, nil
		case err != nil:
			// A conflict too: someone changed the host; the error
			// requeues it, rate limited, to start from their version.
			return ctrl.Result{}, fmt.Errorf("advance host %s: %w", req.NamespacedName, err)
		case s.after > 0:
			return ctrl.Result{RequeueAfter: s.after}, nil
		}
	}
	return ctrl.Result{RequeueAfter: time.Millisecond}, nil
}
