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
	"io"
	"net/http"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// probeClient gives up on a server that does not answer: a port another
// process took meanwhile may accept and never respond.
var probeClient = &http.Client{Timeout: 2 * time.Second}

func httpStatus(url string) (int, string, error) {
	resp, err := probeClient.Get(url) //nolint:noctx // short-lived probe against a local test server
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body), nil
}

// TestManagerAgainstAPIServer starts the manager binary's run function
// against a real kube-apiserver and checks what an operator relies on: the
// probes answer, metrics are served, the leader lease is taken, and a stop
// signal shuts it down cleanly and hands the lease back.
func TestManagerAgainstAPIServer(t *testing.T) {
	g := NewWithT(t)
	scheme, err := newScheme()
	g.Expect(err).NotTo(HaveOccurred())
	env := testenv.Start(t, testenv.Options{
		Scheme:            scheme,
		CRDs:              testenv.ProviderCRDs(t),
		CRDDirectoryPaths: []string{testenv.CAPICRDPath(t), testenv.BMOCRDPath(t)},
	})
	kubeconfig := env.WriteKubeconfig(t)

	const leaseName = "capm3-manager-test"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	healthAddr, metricsAddr, done := startManager(ctx, t, func(healthAddr, metricsAddr string) []string {
		return []string{
			"--kubeconfig", kubeconfig,
			"--health-addr", healthAddr,
			"--diagnostics-address", metricsAddr,
			"--insecure-diagnostics",
			"--webhook-port", "0",
			"--leader-elect",
			"--leader-elect-id", leaseName,
			"--leader-elect-namespace", "default",
			"--leader-elect-lease-duration", "4s",
			"--leader-elect-renew-deadline", "3s",
			"--leader-elect-retry-period", "500ms",
		}
	})

	code, _, err := httpStatus("http://" + healthAddr + "/healthz")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusOK), "healthz")

	lease := &coordinationv1.Lease{}
	g.Eventually(func() (string, error) {
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: leaseName}, lease); err != nil {
			return "", err
		}
		return ptr.Deref(lease.Spec.HolderIdentity, ""), nil
	}).WithTimeout(30*time.Second).Should(Not(BeEmpty()), "the manager should take the leader election lease")

	g.Eventually(func() (string, error) {
		_, body, err := httpStatus("http://" + metricsAddr + "/metrics")
		return body, err
	}).WithTimeout(10*time.Second).Should(ContainSubstring("leader_election_master_status"),
		"metrics should be served and report leader election")

	cancel()
	select {
	case err := <-done:
		g.Expect(err).NotTo(HaveOccurred(), "manager should stop cleanly on cancellation")
	case <-time.After(gracefulShutdownTimeout + 10*time.Second):
		t.Fatal("manager did not stop after cancellation")
	}

	// LeaderElectionReleaseOnCancel: a replacement pod must not wait a whole
	// lease duration after a clean rollout.
	g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: leaseName}, lease)).To(Succeed())
	g.Expect(ptr.Deref(lease.Spec.HolderIdentity, "")).To(BeEmpty(), "lease should be released on shutdown")
}

// startManager runs the manager's run function with the flags args gives
// for free loopback probe and metrics addresses, until readyz answers, and
// returns those addresses and the channel run's result arrives on. A port
// another test process took between FreeLoopbackAddr and the bind is
// given up for new ones (twice at most); any other exit fails the test.
func startManager(ctx context.Context, t *testing.T, args func(healthAddr, metricsAddr string) []string) (string, string, chan error) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		healthAddr, metricsAddr := testenv.FreeLoopbackAddr(t), testenv.FreeLoopbackAddr(t)
		opts, err := parseOptions(args(healthAddr, metricsAddr))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- run(ctx, opts) }()
		deadline := time.After(30 * time.Second)
		for {
			if code, _, err := httpStatus("http://" + healthAddr + "/readyz"); err == nil && code == http.StatusOK {
				return healthAddr, metricsAddr, done
			}
			select {
			case err := <-done:
				if err != nil && strings.Contains(err.Error(), "address already in use") && attempt < 3 {
					t.Logf("attempt %d: %v; new ports", attempt, err)
				} else {
					t.Fatalf("the manager exited before readyz answered: %v", err)
				}
			case <-deadline:
				t.Fatal("readyz did not answer within 30 s of the manager's start")
			case <-time.After(200 * time.Millisecond):
				continue
			}
			break
		}
	}
}

func TestRunRejectsInvalidFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown flag", []string{"--no-such-flag"}, "unknown flag"},
		{"renew deadline not shorter than lease", []string{"--leader-elect", "--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=5s"}, "--leader-elect-renew-deadline"},
		{"webhook port out of range", []string{"--webhook-port=70000"}, "--webhook-port"},
		{"zero QPS", []string{"--kube-api-qps=0"}, "--kube-api-qps"},
		{"zero sync period", []string{"--sync-period=0s"}, "--sync-period"},
		{"zero machine concurrency", []string{"--metal3machine-concurrency=0"}, "--metal3machine-concurrency"},
		{"unreadable kubeconfig", []string{"--kubeconfig=/nonexistent/kubeconfig"}, "/nonexistent/kubeconfig"},
		{"bad TLS version", []string{"--tls-min-version=VersionTLS99"}, "VersionTLS99"},
		{"allowed CIDR that is not one", []string{"--identity-allowed-cidrs=10.0.0.0/8,10.0.0.0/33"}, "--identity-allowed-cidrs"},
		{"zero connect timeout", []string{"--remote-connect-timeout=0s"}, "--remote-connect-timeout"},
		{"zero response cap", []string{"--remote-max-response-bytes=0"}, "--remote-max-response-bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := parseOptions(tt.args)
			if err == nil {
				err = run(context.Background(), opts)
			}
			if err == nil {
				t.Fatalf("run(%v) succeeded, want error containing %q", tt.args, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("run(%v) = %v, want error containing %q", tt.args, err, tt.wantErr)
			}
		})
	}
}

// TestServerPolicyFlags: the identity and workload server policies are
// strict unless the operator widens them, each flag reaches its own policy
// only, and refusals name the flags of their policy.
func TestServerPolicyFlags(t *testing.T) {
	tests := []struct {
		name         string
		args         []string
		want         kubeguard.ServerPolicy
		wantWorkload kubeguard.ServerPolicy
	}{
		{name: "default: https only, no loopback, no allow-lists", want: kubeguard.ServerPolicy{}},
		{
			name: "empty lists, as clusterctl renders unset variables",
			args: []string{`--identity-allowed-cidrs=""`, `--identity-allowed-host-suffixes=""`},
			want: kubeguard.ServerPolicy{},
		},
		{
			name: "every flag",
			args: []string{
				"--identity-allow-http", "--identity-allow-loopback", "--identity-allow-insecure-skip-tls-verify",
				"--identity-allow-proxy-url", "--identity-allowed-cidrs=10.1.2.3/8,fd00::/8", "--identity-allowed-host-suffixes=pools.example.com,.lab",
			},
			want: kubeguard.ServerPolicy{
				AllowHTTP: true, AllowLoopback: true, AllowInsecureSkipTLSVerify: true, AllowProxyURL: true,
				AllowedCIDRs:        []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")},
				AllowedHostSuffixes: []string{"pools.example.com", ".lab"},
			},
		},
		{
			name: "workload flags",
			args: []string{"--workload-allow-loopback", "--workload-allow-http", "--workload-allowed-cidrs=192.168.111.0/24"},
			wantWorkload: kubeguard.ServerPolicy{
				AllowHTTP: true, AllowLoopback: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("192.168.111.0/24")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := parseOptions(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			got, err := opts.remote.policy.serverPolicy()
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Flags = "identity"
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("identity policy = %+v, want %+v", got, tt.want)
			}
			gotWorkload, err := opts.workloadPolicy.serverPolicy()
			if err != nil {
				t.Fatal(err)
			}
			tt.wantWorkload.Flags = "workload"
			if !reflect.DeepEqual(gotWorkload, tt.wantWorkload) {
				t.Fatalf("workload policy = %+v, want %+v", gotWorkload, tt.wantWorkload)
			}
		})
	}
}

// TestProviderNamespace: the provider's namespace comes from
// --provider-namespace, else the pod's (POD_NAMESPACE), else clusterctl's
// default; a manager limited to --namespace still sees the metadata of the
// Secrets of its own namespace, where Metal3ClusterIdentities' Secrets are.
func TestProviderNamespace(t *testing.T) {
	tests := []struct {
		name         string
		podNamespace string
		args         []string
		want         string
		// wantSecretNamespaces are the namespaces the cache holds Secrets
		// of; nil: every namespace (no --namespace).
		wantSecretNamespaces []string
	}{
		{name: "default", want: "capm3-system"},
		{name: "the pod's namespace", podNamespace: "metal3-provider", want: "metal3-provider"},
		{name: "the flag wins", podNamespace: "metal3-provider", args: []string{"--provider-namespace=admins"}, want: "admins"},
		{name: "limited to a namespace", args: []string{"--namespace=tenant-a"}, want: "capm3-system",
			wantSecretNamespaces: []string{"tenant-a", "capm3-system"}},
		{name: "limited to its own namespace", podNamespace: "tenant-a", args: []string{"--namespace=tenant-a"}, want: "tenant-a",
			wantSecretNamespaces: []string{"tenant-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", tt.podNamespace)
			opts, err := parseOptions(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if opts.providerNamespace != tt.want {
				t.Errorf("provider namespace = %q, want %q", opts.providerNamespace, tt.want)
			}
			cache := cacheOptions(opts)
			var got []string
			for obj, byObject := range cache.ByObject {
				if _, ok := obj.(*corev1.Secret); ok {
					for ns := range byObject.Namespaces {
						got = append(got, ns)
					}
				}
			}
			if got == nil {
				for ns := range cache.DefaultNamespaces {
					got = append(got, ns)
				}
			}
			if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(tt.wantSecretNamespaces))) {
				t.Errorf("Secrets cached in %q, want %q", got, tt.wantSecretNamespaces)
			}
		})
	}
	if _, err := parseOptions([]string{"--provider-namespace="}); err == nil {
		t.Error("an empty --provider-namespace is accepted")
	}
}
