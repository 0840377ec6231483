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

// hostClaimBinder is the pool-side binder of HostClaim mode.
var hostClaimBinder = &TreeBinary{Package: "./cmd/hostclaim-binder", Name: "hostclaim-binder"}

// StartHostClaimBinder runs the HostClaim binder built from this tree
// against the environment until the test ends, as a system:masters user,
// with metrics and probes on free loopback ports and args after them (a
// later flag wins). Its output is shown if the test fails.
func (e *Env) StartHostClaimBinder(t T, args ...string) *Process {
	t.Helper()
	return e.StartHostClaimBinderAs(t, "", args...)
}

// StartHostClaimBinderAs is StartHostClaimBinder with the kubeconfig at
// kubeconfigPath instead (when not empty): to run the binder with the
// rights a pool admin would give it, not system:masters.
func (e *Env) StartHostClaimBinderAs(t T, kubeconfigPath string, args ...string) *Process {
	t.Helper()
	path, err := hostClaimBinder.Path()
	if err != nil {
		t.Fatalf("%v", err)
	}
	var env []string
	if kubeconfigPath != "" {
		// Set after RunProcess's own KUBECONFIG, so it wins.
		env = []string{"KUBECONFIG=" + kubeconfigPath}
	}
	return e.RunProcess(t, path, env, append([]string{
		"--metrics-bind-address=" + FreeLoopbackAddr(t),
		"--health-probe-bind-address=" + FreeLoopbackAddr(t),
	}, args...)...)
}
