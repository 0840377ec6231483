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

package testenv

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// ServerMetric sums the series of the named metric, among those the API
// server at cfg exports, whose labels include every one of labels
// (`verb="WATCH"`): what the server itself counts, e.g. the watches its
// clients hold open (apiserver_longrunning_requests).
func ServerMetric(ctx context.Context, cfg *rest.Config, name string, labels ...string) (float64, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return 0, err
	}
	total := 0.0
	err = MetricLines(ctx, httpClient, strings.TrimSuffix(cfg.Host, "/")+"/metrics", func(line string) error {
		if !strings.HasPrefix(line, name+"{") {
			return nil
		}
		for _, label := range labels {
			if !strings.Contains(line, label) {
				return nil
			}
		}
		value, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			return fmt.Errorf("metric %s: %w", name, err)
		}
		total += value
		return nil
	})
	return total, err
}

// MetricLines reads the Prometheus text served at url through httpClient
// and hands each line to each, stopping at the first error.
func MetricLines(ctx context.Context, httpClient *http.Client, url string, each func(line string) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("metrics at %s: %s", url, resp.Status)
	}
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for scanner.Scan() {
		if err := each(scanner.Text()); err != nil {
			return err
		}
	}
	return scanner.Err()
}
