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
	"testing"

	. "github.com/onsi/gomega"
)

// upstreamFlags is every flag upstream CAPM3 v1.13.2's manager defines
// (its main.go initFlags, flags.AddManagerOptions, the logging flags and
// controller-runtime's --kubeconfig), with a value of its type.
var upstreamFlags = []string{
	"--leader-elect", "--enable-bmh-name-based-preallocation=true",
	"--leader-elect-lease-duration=20s", "--leader-elect-renew-deadline=15s", "--leader-elect-retry-period=3s",
	"--namespace=metal3", "--watch-filter=tenant", "--sync-period=15m",
	"--clustercache-client-qps=7", "--clustercache-client-burst=9",
	"--webhook-port=9443", "--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs/", "--health-addr=:9440",
	"--metal3machine-concurrency=10", "--metal3cluster-concurrency=10", "--metal3datatemplate-concurrency=10",
	"--metal3data-concurrency=10", "--metal3labelsync-concurrency=10", "--metal3machinetemplate-concurrency=10",
	"--metal3remediation-concurrency=10",
	"--kube-api-qps=20", "--kube-api-burst=30",
	"--skip-crd-migration-phases=StorageVersionMigration",
	"--diagnostics-address=:8443", "--insecure-diagnostics=false",
	"--tls-min-version=VersionTLS12", "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"--v=2", "--vmodule=", "--logging-format=text", "--log-flush-frequency=5s",
}

// TestUpstreamDeploymentArguments: an operator who puts this image into an
// upstream CAPM3 Deployment keeps its arguments and its fast-track
// ConfigMap; the manager must not exit on a flag it does not know, and
// must honour what it shares.
func TestUpstreamDeploymentArguments(t *testing.T) {
	g := NewWithT(t)
	// Upstream's Deployment loads capm3fasttrack-configmap into the
	// environment.
	t.Setenv("CAPM3_FAST_TRACK", "true")
	opts, err := parseOptions(upstreamFlags)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.fastTrack).To(BeTrue(), "CAPM3_FAST_TRACK from the environment")
	g.Expect(opts.workloadQPS).To(Equal(float32(7)), "--clustercache-client-qps limits the workload clusters' clients")
	g.Expect(opts.workloadBurst).To(Equal(9), "--clustercache-client-burst")
	g.Expect(opts.hostNameIPClaims).To(BeTrue())
	g.Expect(opts.watchNamespace).To(Equal("metal3"))

	// The flag, when given, wins over the environment.
	opts, err = parseOptions([]string{"--fast-track=false"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.fastTrack).To(BeFalse())

	t.Setenv("CAPM3_FAST_TRACK", "false")
	opts, err = parseOptions(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.fastTrack).To(BeFalse())
}
