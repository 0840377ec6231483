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

import "strings"

// hostClaimBinder is the pool-side binder of HostClaim mode.
var hostClaimBinder = &TreeBinary{Package: "./cmd/hostclaim-binder", Name: "hostclaim-binder"}

// Manager is the provider's manager.
var Manager = &TreeBinary{Package: ".", Name: "capm3-manager"}

// StartHostClaimBinder runs the HostClaim binder built from this tree
// against the environment until the test ends, as config/hostclaim-binder
// installs it (RunShipped): its ServiceAccount and RBAC, its Deployment's
// arguments, with metrics and probes on free loopback ports and args in
// place of the Deployment's flags of the same names. Its output is shown if
// the test fails.
func (e *Env) StartHostClaimBinder(t T, args ...string) *Process {
	t.Helper()
	path, err := hostClaimBinder.Path()
	if err != nil {
		t.Fatalf("%v", err)
	}
	replace := map[string]string{
		"metrics-bind-address":      FreeLoopbackAddr(t),
		"health-probe-bind-address": FreeLoopbackAddr(t),
	}
	AddFlags(replace, args)
	return e.RunShipped(t, ShippedHostClaimBinder(t), path, replace)
}

// AddFlags adds args (--name=value, or --name for true) to flags, the
// replacements of RunShipped.
func AddFlags(flags map[string]string, args []string) {
	for _, arg := range args {
		name, value, ok := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if !ok {
			value = "true"
		}
		flags[name] = value
	}
}
