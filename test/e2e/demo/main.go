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

// The demo (`make demo`): the end-to-end environment of test/e2e/env with a
// pool of hosts, a least-privilege identity for it, and a cluster made with
// `clusterctl generate cluster --flavor identity` from templates/, shown
// live until every Machine runs; then it keeps running until Ctrl-C, or
// exits with --exit-when-ready.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

const (
	tenantNamespace = "tenant-a"
	poolNamespace   = "pool-east"
	clusterName     = "demo"
)

func main() {
	exitWhenReady := flag.Bool("exit-when-ready", false, "Exit (0) once every Machine is Running instead of running until Ctrl-C.")
	controlPlane := flag.Int64("control-plane", 1, "Control-plane Machines.")
	workers := flag.Int64("workers", 2, "Worker Machines (MachineDeployment replicas).")
	timeout := flag.Duration("timeout", 10*time.Minute, "Give up if the Machines are not all Running by then.")
	kubeconfigDir := flag.String("kubeconfig-dir", "demo-kubeconfigs", "Where to write a kubeconfig per API server.")
	flag.Parse()

	ctrl.SetLogger(logr.Discard())
	suite := &testenv.Suite{}
	err := run(suite, *exitWhenReady, *controlPlane, *workers, *timeout, *kubeconfigDir)
	suite.Close(err != nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(suite *testenv.Suite, exitWhenReady bool, controlPlane, workers int64, timeout time.Duration, kubeconfigDir string) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The environment's helpers fail through the suite by panicking; a
	// failure becomes the demo's error.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	root, err := testenv.ModuleRoot()
	if err != nil {
		return err
	}
	out := os.Stdout
	started := time.Now()
	fmt.Fprintln(out, "Starting the API servers (management, pool, workload), Cluster API, the Bare Metal Operator and the provider…")
	e := env.Start(suite)
	fmt.Fprintf(out, "Started in %s.\n", time.Since(started).Round(time.Second))

	hosts := int(controlPlane + workers + 1)
	poolKubeconfig, err := e.AddPool(ctx, suite, poolNamespace, "tenant-a", hosts)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Pool %s: %d hosts registering with the Bare Metal Operator; identity: ServiceAccount tenant-a there, allowed only what the provider needs.\n",
		poolNamespace, hosts)

	paths, err := writeKubeconfigs(suite, e, kubeconfigDir)
	if err != nil {
		return err
	}
	if err := env.CreateNamespace(ctx, e.Management.Client, tenantNamespace); err != nil {
		return err
	}
	objs, err := generateCluster(ctx, root, paths["management"], tenantNamespace, clusterName, controlPlane, workers, demoVariables(poolKubeconfig))
	if err != nil {
		return err
	}
	if objs, err = withoutKubeadm(objs, tenantNamespace, clusterName); err != nil {
		return err
	}
	if err := e.Management.CreateWorkloadKubeconfig(ctx, e.Workload, tenantNamespace, clusterName); err != nil {
		return err
	}
	for i := range objs {
		if err := e.Management.Client.Create(ctx, &objs[i]); err != nil {
			return fmt.Errorf("create %s %s: %w", objs[i].GetKind(), objs[i].GetName(), err)
		}
	}
	fmt.Fprintf(out, "Cluster %s/%s created from templates/cluster-template-identity.yaml (%d control plane, %d workers).\n\n",
		tenantNamespace, clusterName, controlPlane, workers)

	deadline := time.After(timeout)
	ticker := time.NewTicker(2 * time.Second)
	defer ticker.Stop()
	ready, last, lastShown := false, "", time.Now()
	for !ready {
		var rows []machineRow
		rows, ready = observe(ctx, e.Management.Client, e.Pool.Client)
		// The table when something changed; a progress line during long waits.
		if table := renderTable(rows); table != last {
			fmt.Fprintf(out, "— %s —\n%s", time.Since(started).Round(time.Second), table)
			last, lastShown = table, time.Now()
		} else if time.Since(lastShown) >= 10*time.Second {
			fmt.Fprintf(out, "… %s: %s\n", time.Since(started).Round(time.Second), progress(rows))
			lastShown = time.Now()
		}
		if ready {
			break
		}
		select {
		case <-ctx.Done():
			return errors.New("interrupted")
		case <-deadline:
			return fmt.Errorf("not every Machine is Running after %s", timeout)
		case <-ticker.C:
		}
	}
	fmt.Fprintf(out, "\nEvery Machine is Running, %s after start.\n\n", time.Since(started).Round(time.Second))
	for _, name := range []string{"management", "pool", "workload"} {
		fmt.Fprintf(out, "  kubectl --kubeconfig %s get ...\n", paths[name])
	}
	// The provider and the binder run as the release installs them: an API
	// server refusing them anything is a permission config/ lacks.
	forbidden, err := e.Forbidden()
	if err != nil {
		return err
	}
	if len(forbidden) > 0 {
		return fmt.Errorf("requests of the shipped ServiceAccounts answered 403 Forbidden: %v", forbidden)
	}
	if exitWhenReady {
		return nil
	}
	fmt.Fprintln(out, "\nRunning until Ctrl-C.")
	<-ctx.Done()
	return nil
}

// writeKubeconfigs writes an admin kubeconfig per API server into dir and
// returns their paths by server.
func writeKubeconfigs(t testenv.T, e *env.Environment, dir string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	paths := map[string]string{}
	for name, server := range map[string]*testenv.Env{"management": e.Management.Env, "pool": e.Pool, "workload": e.Workload} {
		data, err := os.ReadFile(server.WriteKubeconfig(t))
		if err != nil {
			return nil, err
		}
		path, err := filepath.Abs(filepath.Join(dir, name+".kubeconfig"))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
		paths[name] = path
	}
	return paths, nil
}
