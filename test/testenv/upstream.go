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

// Upstream CAPM3 (github.com/metal3-io/cluster-api-provider-metal3, the
// project this one forks) as its users install it: `clusterctl init
// --infrastructure metal3:<version>` from its published release, and its
// manager. Upgrade tests install it and then `clusterctl upgrade` to this
// tree's release under the same provider name (metal3); comparisons run
// both managers against the same objects.
//
// hack/tools-bin.sh upstream-capm3 builds it all from the Go module proxy
// once per version and caches it: the manager binary (upstream's main
// package at the release tag, with its api module at the same tag), its
// CRDs, and its release laid out as a clusterctl local repository:
// infrastructure-components.yaml is upstream's config/default rendered as
// its `make release` does (the manager image set to the release's, then
// `kustomize build`), metadata.yaml and the cluster template are upstream's.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// upstreamCAPM3Tool is upstream CAPM3's manager with its CRDs and release.
var upstreamCAPM3Tool = &builtTool{kind: "upstream-capm3", binary: "upstream-capm3-manager"}

// UpstreamRelease is a release of upstream CAPM3, built and rendered by
// hack/tools-bin.sh upstream-capm3.
type UpstreamRelease struct {
	// Version is the release's tag, e.g. v1.13.2.
	Version string
	// Manager is the path of its manager binary.
	Manager string
	// CRDs is the directory of its CRDs as controller-gen wrote them
	// (config/crd/bases), for Options.CRDDirectoryPaths.
	CRDs string
	// Repository is a clusterctl local repository holding this release
	// only, at Repository/infrastructure-metal3/Version.
	Repository string
	// Dir is the release: infrastructure-components.yaml, metadata.yaml
	// (upstream's, listing every release series of upstream), and
	// cluster-template.yaml with example_variables.rc.
	Dir string
}

// UpstreamCAPM3 is the upstream CAPM3 release of hack/tools-bin.sh
// (UPSTREAM_CAPM3_VERSION, v1.13.2 unless set), built on first use.
func UpstreamCAPM3(t T) *UpstreamRelease {
	t.Helper()
	dir, err := upstreamCAPM3Tool.Dir()
	if err != nil {
		t.Fatalf("%v", err)
	}
	version := filepath.Base(dir)
	repository := filepath.Join(dir, "repository")
	return &UpstreamRelease{
		Version:    version,
		Manager:    filepath.Join(dir, upstreamCAPM3Tool.binary),
		CRDs:       filepath.Join(dir, "crds"),
		Repository: repository,
		Dir:        filepath.Join(repository, "infrastructure-metal3", version),
	}
}

// ComponentsPath is the release's infrastructure-components.yaml.
func (u *UpstreamRelease) ComponentsPath() string {
	return filepath.Join(u.Dir, "infrastructure-components.yaml")
}

// Shipped is the release as `clusterctl init` installs it, with
// clusterctl's variables at their defaults (or vars' values), for
// RunShipped and RouteShippedWebhooks.
func (u *UpstreamRelease) Shipped(t T, vars map[string]string) *Shipped {
	t.Helper()
	rendered, err := os.ReadFile(u.ComponentsPath())
	if err != nil {
		t.Fatalf("upstream CAPM3 components: %v", err)
	}
	return shippedComponents(t, rendered, vars)
}

// UpstreamManager is upstream CAPM3's manager running against an
// environment.
type UpstreamManager struct {
	*Process
	// HealthAddr serves /healthz and /readyz over plain HTTP.
	HealthAddr string
	// DiagnosticsAddr serves /metrics over HTTPS, to clients the API
	// server authenticates and authorizes, as the release ships it.
	DiagnosticsAddr string
}

// StartUpstreamCAPM3 runs u's manager against the environment until the
// test ends, as u's Deployment runs it once `clusterctl init` installed u
// there (RunShipped): as its ServiceAccount, with the RBAC and Deployment
// arguments of the release. Its webhooks and conversion webhooks are
// served for real: RouteShippedWebhooks issues the release's Certificate
// and points the installed configurations at the manager. Only what cannot
// be the same here differs: the webhook port and certificate directory,
// and probes and metrics on free loopback ports. args (--name=value)
// replace the Deployment's flags of the same names. It returns once the
// manager is ready (/readyz: its webhook server serves).
//
// Besides what clusterctl installs, the manager needs the Bare Metal
// Operator's and the Metal3 IPAM's CRDs (BMOCRDPath, IPAMCRDPath), which
// users install with those components; without them its controllers never
// start.
func (e *Env) StartUpstreamCAPM3(t T, u *UpstreamRelease, args ...string) *UpstreamManager {
	t.Helper()
	shipped := u.Shipped(t, nil)
	webhooks := e.RouteShippedWebhooks(t, shipped)
	flags := map[string]string{
		"webhook-port":        strconv.Itoa(webhooks.Port),
		"webhook-cert-dir":    webhooks.CertDir,
		"health-addr":         FreeLoopbackAddr(t),
		"diagnostics-address": FreeLoopbackAddr(t),
	}
	AddFlags(flags, args)
	m := &UpstreamManager{
		Process:         e.RunShipped(t, shipped, u.Manager, flags),
		HealthAddr:      flags["health-addr"],
		DiagnosticsAddr: flags["diagnostics-address"],
	}
	if err := m.WaitReady(2 * time.Minute); err != nil {
		t.Fatalf("upstream CAPM3 %s: %v", u.Version, err)
	}
	return m
}

// WaitReady waits until the manager's /readyz answers 200, for at most
// timeout, and fails early if the manager exits.
func (m *UpstreamManager) WaitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	url := "http://" + m.HealthAddr + "/readyz"
	var last string
	for {
		if !m.Running() {
			return fmt.Errorf("the manager exited before it was ready (last /readyz: %s)", last)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready within %s (last /readyz: %s)", timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
