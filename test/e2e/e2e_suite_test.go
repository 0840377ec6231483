//go:build e2e

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

// Package e2e is the provider's end-to-end suite: Cluster API's core
// controllers, the provider built from this tree and the real Bare Metal
// Operator, over real API servers (test/e2e/env). Run it with
// `make test-e2e`.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/yaml"

	"github.com/go-logr/logr"

	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

var (
	ctx         = context.Background()
	e2eConfig   *clusterctl.E2EConfig
	environment *env.Environment
	// management is the first management cluster, as Cluster API's
	// framework sees it.
	management framework.ClusterProxy
)

func TestE2E(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	RegisterFailHandler(Fail)
	if !RunSpecs(t, "metal3 e2e") {
		// Again, last: a CI log is often cut to its tail, below the
		// processes' output and Ginkgo's summary, which names the failed
		// specs but not why they failed.
		for _, failure := range failures {
			t.Log(failure)
		}
	}
}

var _ = BeforeSuite(func() {
	data, err := os.ReadFile(filepath.Join("config", "e2e.yaml"))
	Expect(err).NotTo(HaveOccurred())
	e2eConfig = &clusterctl.E2EConfig{}
	Expect(yaml.Unmarshal(data, e2eConfig)).To(Succeed())

	// A wait without intervals of its own gives the system 30 s, not
	// gomega's 1 s default, which a loaded machine overruns.
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)

	By("Starting the management, pool and workload API servers, Cluster API, the Bare Metal Operator and the provider")
	// The environment lives as long as the suite, and so does what it
	// restarts from inside a spec (the pool after an outage).
	// The processes' output (provider, Bare Metal Operator, IPAM) is shown
	// when the environment closes if any spec failed: the report of the
	// suite's own cleanup does not know about the specs.
	suite := &testenv.Suite{}
	DeferCleanup(func() { suite.Close(specFailed.Load()) })
	environment = env.Start(suite)
	management = framework.NewClusterProxy(environment.Management.Name,
		environment.Management.WriteKubeconfig(GinkgoT()), env.Scheme())
	DeferCleanup(func() { management.Dispose(ctx) })
})

// After every spec: the provider and the binder ran as their release
// installs them (their ServiceAccounts, Roles and ClusterRoles from
// config/), and no API server refused them anything, across every flow of
// the suite (in-cluster with data templates and both IPAMs, identity
// Secrets, a Metal3ClusterIdentity, HostClaim mode in both places, scaling,
// an outage, move and the pivot, deletion). A 403 is a permission config/
// lacks. Remediation runs in test/remediation, which checks the same.
var _ = AfterSuite(func() {
	forbidden, err := environment.Forbidden()
	Expect(err).NotTo(HaveOccurred())
	Expect(forbidden).To(BeEmpty(), "requests of the shipped ServiceAccounts answered 403 Forbidden")
})

var (
	// specFailed records that a spec failed, for the environment's cleanup.
	specFailed atomic.Bool
	// failures are the failed specs, where and why they failed.
	failures []string
)

var _ = ReportAfterEach(func(report SpecReport) {
	if report.Failed() {
		specFailed.Store(true)
		failure := fmt.Sprintf("FAILED: %s\n  at %s\n  %s",
			report.FullText(), report.Failure.Location, report.Failure.Message)
		if stuck := takeDiagnosis(); len(stuck) > 0 {
			failure += "\n  stuck when it failed:\n    " + strings.Join(stuck, "\n    ")
		}
		failures = append(failures, failure)
	}
})

// intervals are the suite's wait intervals for key (config/e2e.yaml).
func intervals(key string) []any {
	return e2eConfig.GetIntervals("default", key)
}
