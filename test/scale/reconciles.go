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
	"net/http"
	"strconv"
	"strings"

	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// providerMetrics makes the provider serve its metrics on a free loopback
// port in plain HTTP (--insecure-diagnostics, which the Deployment exposes
// as CAPM3_INSECURE_DIAGNOSTICS), so that the benchmark can count its
// reconciles; it returns the flags to add and the metrics URL. Nothing
// else of the provider changes.
func providerMetrics(t testenv.T) (args []string, url string) {
	t.Helper()
	addr := testenv.FreeLoopbackAddr(t)
	return []string{"--diagnostics-address=" + addr, "--insecure-diagnostics=true"}, "http://" + addr + "/metrics"
}

// reconciles returns how many reconciles controller has finished, whatever
// their result (controller-runtime's controller_runtime_reconcile_total,
// summed over its result label).
func reconciles(ctx context.Context, url, controller string) (float64, error) {
	prefix := `controller_runtime_reconcile_total{controller="` + controller + `",`
	var total float64
	found := false
	err := testenv.MetricLines(ctx, http.DefaultClient, url, func(line string) error {
		labels, ok := strings.CutPrefix(line, prefix)
		if !ok {
			return nil
		}
		_, value, ok := strings.Cut(labels, "} ")
		if !ok {
			return nil
		}
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", url, line, err)
		}
		total += f
		found = true
		return nil
	})
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("%s: no reconciles of controller %s", url, controller)
	}
	return total, nil
}

// countReconciles runs associate and returns how many Metal3Machine
// reconciles the provider behind url finished meanwhile.
func countReconciles(ctx context.Context, url string, associate func() error) (float64, error) {
	before, err := reconciles(ctx, url, "metal3machine")
	if err != nil {
		return 0, err
	}
	if err := associate(); err != nil {
		return 0, err
	}
	after, err := reconciles(ctx, url, "metal3machine")
	if err != nil {
		return 0, err
	}
	return after - before, nil
}
