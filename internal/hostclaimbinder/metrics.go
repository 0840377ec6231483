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
	"sync"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The binder's metrics, served with controller-runtime's on the metrics
// endpoint. Collectors are registered once per process, hence package
// variables; one binder runs per process.
var (
	bindingsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "hostclaim_binder_bindings_total",
		Help: "Number of HostClaims bound to a BareMetalHost by this process.",
	})
	releasesTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "hostclaim_binder_releases_total",
		Help: "Number of BareMetalHosts released by deleted HostClaims in this process.",
	})
	claimsWaiting = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hostclaim_binder_claims_waiting",
		Help: "Number of HostClaims waiting for a BareMetalHost (none available, or namespace not admitted).",
	})
	claimsBound = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hostclaim_binder_claims_bound",
		Help: "Number of HostClaims bound to a BareMetalHost.",
	})
	claimsMissingHost = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hostclaim_binder_claims_missing_host",
		Help: "Number of HostClaims whose bound BareMetalHost is gone.",
	})
)

func init() {
	metrics.Registry.MustRegister(bindingsTotal, releasesTotal, claimsWaiting, claimsBound, claimsMissingHost)
}

type claimState int

const (
	stateNone claimState = iota
	stateWaiting
	stateBound
	stateMissing
)

// claimStates is what each claim was found to be at its last reconcile,
// from which the gauges are counted. The zero value is ready to use.
type claimStates struct {
	mu     sync.Mutex
	states map[types.NamespacedName]claimState
}

func (s *claimStates) set(claim *bmov1alpha1.HostClaim, state claimState) {
	s.update(client.ObjectKeyFromObject(claim), state)
}

func (s *claimStates) forget(key types.NamespacedName) { s.update(key, stateNone) }

func (s *claimStates) update(key types.NamespacedName, state claimState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.states == nil {
		s.states = map[types.NamespacedName]claimState{}
	}
	if state == stateNone {
		delete(s.states, key)
	} else {
		s.states[key] = state
	}
	counts := map[claimState]int{}
	for _, st := range s.states {
		counts[st]++
	}
	claimsWaiting.Set(float64(counts[stateWaiting]))
	claimsBound.Set(float64(counts[stateBound]))
	claimsMissingHost.Set(float64(counts[stateMissing]))
}
