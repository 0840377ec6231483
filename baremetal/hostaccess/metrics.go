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
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// Metrics of the remote-client cache, served on the manager's metrics
// endpoint. Accessors are connections: one per set of credentials, shared
// by every identity that holds them; the series labelled by identity
// follow each identity, whichever accessor serves it.
var (
	connectedAccessors = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "capm3_remote_accessors_connected",
		Help: "Number of connected accessors (client, host cache and probe): one per set of credentials in use, " +
			"however many identities share it.",
	})
	connectedIdentities = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "capm3_remote_identities_connected",
		Help: "Number of identities served by a connected accessor; more than capm3_remote_accessors_connected " +
			"when identities share credentials.",
	})
	accessorCreations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "capm3_remote_accessor_creations_total",
		Help: "Accessors created per identity, counting reconnects and rotations; an identity that joins the " +
			"accessor of its credentials creates none.",
	}, []string{"identity"})
	accessorRotations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "capm3_remote_accessor_rotations_total",
		Help: "Times the identity Secret's kubeconfig changed credentials, moving the identity to another accessor.",
	}, []string{"identity"})
	probeFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "capm3_remote_probe_failures_total",
		Help: "Failed health probes per identity; the probe of a shared accessor counts for each identity it serves.",
	}, []string{"identity"})
	lastSuccessfulProbe = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "capm3_remote_last_successful_probe_timestamp_seconds",
		Help: "Unix time of the last successful health probe of the accessor serving each connected identity.",
	}, []string{"identity"})
)

func init() {
	metrics.Registry.MustRegister(connectedAccessors, connectedIdentities, accessorCreations, accessorRotations,
		probeFailures, lastSuccessfulProbe)
}

// recordAccessorCreated counts an accessor key connected.
func recordAccessorCreated(key identity.Key) {
	connectedAccessors.Inc()
	accessorCreations.WithLabelValues(key.String()).Inc()
}

func recordAccessorStopped() { connectedAccessors.Dec() }

// recordAttached counts key as served by an accessor last probed at
// lastProbe (Unix time).
func recordAttached(key identity.Key, lastProbe int64) {
	connectedIdentities.Inc()
	lastSuccessfulProbe.WithLabelValues(key.String()).Set(float64(lastProbe))
}

func recordDetached(key identity.Key) {
	connectedIdentities.Dec()
	// A stopped identity must not keep reporting a probe time.
	lastSuccessfulProbe.DeleteLabelValues(key.String())
}

func recordRotation(key identity.Key) { accessorRotations.WithLabelValues(key.String()).Inc() }

func recordProbeSuccess(key identity.Key, at int64) {
	lastSuccessfulProbe.WithLabelValues(key.String()).Set(float64(at))
}

func recordProbeFailure(key identity.Key) { probeFailures.WithLabelValues(key.String()).Inc() }
