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

package hostbinding

import (
	"context"
	"fmt"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// hostsRead is what a BareMetalHost binding read of its identity's hosts.
// A binding lives for one reconcile, and the reconcile that associates a
// machine asks three questions of the same hosts: which it would take
// (Intend), whether one is its own already (Host) and which to claim
// (Bind). Each read copies every host of the namespace out of the cache,
// and choosing ranks them all: with N machines associating against N
// hosts, that was 3 N² host copies and 2 N² rankings, most of the
// provider's CPU (docs/performance.md). They are read and ranked once per
// reconcile instead. Only the cache is read this way: a host another
// consumer took since is found out by the claim, guarded by the host's
// resourceVersion (claim), exactly as when the cache itself lags; the
// binding's own claim is not in it, so a claim empties it.
type hostsRead struct {
	hosts  []bmov1alpha1.BareMetalHost
	listed bool
	// selection ranks hosts for the machine, once chosen.
	selection *pool.Selection
}

// listHosts reads every host of access's namespace through reader. The
// hosts share their maps with the cache (UnsafeDisableDeepCopy): they are
// only read, and a host that is changed is copied first (consumedAmong,
// claim).
func listHosts(ctx context.Context, access hostaccess.HostAccess, reader client.Reader) ([]bmov1alpha1.BareMetalHost, error) {
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := reader.List(ctx, hosts, client.InNamespace(access.Namespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list hosts in namespace %s: %w", access.Namespace(), err)
	}
	return hosts.Items, nil
}

// cachedHosts is the identity's hosts in the cache, as the binding first
// read them.
func (m *bmhBinding) cachedHosts(ctx context.Context) ([]bmov1alpha1.BareMetalHost, error) {
	if !m.read.listed {
		hosts, err := listHosts(ctx, m.Access, m.Access.Client())
		if err != nil {
			return nil, err
		}
		m.read.hosts, m.read.listed = hosts, true
	}
	return m.read.hosts, nil
}

// choose reads the identity's hosts from the cache: the one the machine
// consumes already, else the candidates it may take, best first.
// ErrNoAvailableHost when there is none, saying why when a host is kept
// for the machine.
func (m *bmhBinding) choose(ctx context.Context, logMarks bool) (*bmov1alpha1.BareMetalHost, []*bmov1alpha1.BareMetalHost, error) {
	hosts, err := m.cachedHosts(ctx)
	if err != nil {
		return nil, nil, err
	}
	if host := consumedAmong(hosts, m.M3Machine); host != nil {
		return host, nil, nil
	}
	if m.read.selection == nil {
		selection, err := Choose(hosts, m.M3Machine, m.failureDomain(), m.Reuse)
		if err != nil {
			return nil, nil, err
		}
		m.read.selection = selection
	}
	selection := m.read.selection
	if logMarks {
		selection.LogDeprecatedMarks(ctrl.LoggerFrom(ctx))
	}
	if host := selection.WaitFor; host != nil {
		// Node reuse: the owner's released host comes back to it; the
		// machine does not take another one meanwhile.
		return nil, nil, fmt.Errorf("%w: host %s/%s is kept for %s and is %s", ErrNoAvailableHost, host.Namespace, host.Name,
			m.Reuse.Owner, stateName(host.Status.Provisioning.State))
	}
	if len(selection.Candidates) == 0 {
		return nil, nil, ErrNoAvailableHost
	}
	return nil, selection.Candidates, nil
}
