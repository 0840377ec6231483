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

package hostaccess

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// Metrics of the remote-client cache, served on the manager's metrics endpoint.
var (
	connectedAccessors = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "capm3_remote_accessors_connected",
		Help: "Number of identities with a connected accessor (client, host cache and probe).",
	})
	accessorCreations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "capm3_remote_accessor_creations_total",
		Help: "Accessors created per identity, counting reconnects and rotations.",
	}, []string{"identity"})
	accessorRotations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "capm3_remote_accessor_rotations_total",
		Help: "Accessors replaced because the identity Secret's kubeconfig changed.",
	}, []string{"identity"})
	probeFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "capm3_remote_probe_failures_total",
		Help: "Failed health probes per identity.",
	}, []string{"identity"})
	lastSuccessfulProbe = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "capm3_remote_last_successful_probe_timestamp_seconds",
		Help: "Unix time of the last successful health probe per connected identity.",
	}, []string{"identity"})
)

func init() {
	metrics.Registry.MustRegister(connectedAccessors, accessorCreations, accessorRotations, probeFailures, lastSuccessfulProbe)
}

func recordConnected(key identity.Key) {
	connectedAccessors.Inc()
	accessorCreations.WithLabelValues(key.String()).Inc()
	lastSuccessfulProbe.WithLabelValues(key.String()).Set(float64(time.Now().Unix()))
}

func recordDisconnected(key identity.Key) {
	connectedAccessors.Dec()
	// A stopped identity must not keep reporting a probe time.
	lastSuccessfulProbe.DeleteLabelValues(key.String())
}

func recordRotation(key identity.Key) { accessorRotations.WithLabelValues(key.String()).Inc() }

func recordProbeSuccess(key identity.Key) {
	lastSuccessfulProbe.WithLabelValues(key.String()).Set(float64(time.Now().Unix()))
}

func recordProbeFailure(key identity.Key) { probeFailures.WithLabelValues(key.String()).Inc() }
