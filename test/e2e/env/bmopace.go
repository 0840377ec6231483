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

package env

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// powerLookAnnotation is the annotation the power pacer sets on a host
// whose power-on the Bare Metal Operator has left waiting.
const powerLookAnnotation = "e2e.metal3.io/power-look"

const (
	// powerLookAfter is how long a provisioned host may wait to power on
	// before the pacer wakes the Bare Metal Operator, and how long between
	// two wakings: with Ironic, the operator looks at a powering host at
	// least this often.
	powerLookAfter = 10 * time.Second
	powerLookPoll  = 2 * time.Second
)

// powerPacer gives the Bare Metal Operator's test mode the pace Ironic
// gives it. Its fixture provisioner answers a power-on with "in progress"
// and no delay, which the operator turns into a rate-limited requeue of
// the host; every earlier step of the host (registering, inspecting,
// provisioning) that completed without a delay has raised that host's
// exponential backoff, so the power-on can wait 41, 82, then 164 s with
// nothing else writing the host (seen in CI: a machine of the shared-pool
// spec ran 5 min after its host was provisioned). Ironic's provisioner
// asks to be looked at again after a fixed delay, which resets the
// backoff. The pacer stands in for that delay: a host provisioned, online
// and not powered on for powerLookAfter gets powerLookAnnotation set to
// the time, an annotation change the operator reconciles at once. It
// never touches a paused host, nor one being rebooted (its reboot
// annotations keep it off on purpose).
type powerPacer struct {
	t     testenv.T
	hosts client.Client
	// due is when the pacer wakes the operator for each host waiting to
	// power on: powerLookAfter after it was first seen waiting, or after
	// the pacer last woke the operator for it.
	due map[types.UID]time.Time
}

// startPowerPacer paces the Bare Metal Operator running on hosts until t
// ends.
func startPowerPacer(t testenv.T, hosts *testenv.Env) {
	t.Helper()
	p := &powerPacer{t: t, hosts: hosts.Client, due: map[types.UID]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	running.Go(func() {
		ticker := time.NewTicker(powerLookPoll)
		defer ticker.Stop()
		for {
			p.look(ctx, time.Now())
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		running.Wait()
	})
}

// look wakes the operator for every host whose power-on is due. Errors
// (a server that is down, a host deleted meanwhile) are left to the next
// round.
func (p *powerPacer) look(ctx context.Context, now time.Time) {
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := p.hosts.List(ctx, hosts); err != nil {
		return
	}
	stillWaiting := map[types.UID]bool{}
	for i := range hosts.Items {
		host := &hosts.Items[i]
		if !waitsForPowerOn(host) {
			continue
		}
		stillWaiting[host.UID] = true
		due, seen := p.due[host.UID]
		if !seen {
			p.due[host.UID] = now.Add(powerLookAfter)
			continue
		}
		if now.Before(due) {
			continue
		}
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, powerLookAnnotation, now.UTC().Format(time.RFC3339Nano))
		if err := p.hosts.Patch(ctx, host, client.RawPatch(types.MergePatchType, patch)); err == nil {
			p.due[host.UID] = now.Add(powerLookAfter)
			p.t.Logf("power pacer: host %s/%s provisioned and still off: woke the Bare Metal Operator", host.Namespace, host.Name)
		}
	}
	for uid := range p.due {
		if !stillWaiting[uid] {
			delete(p.due, uid)
		}
	}
}

// waitsForPowerOn reports whether host is provisioned, asked to be online,
// not powered on, and neither paused nor being rebooted.
func waitsForPowerOn(host *bmov1alpha1.BareMetalHost) bool {
	if host.Status.Provisioning.State != bmov1alpha1.StateProvisioned || !host.Spec.Online || host.Status.PoweredOn {
		return false
	}
	for key := range host.Annotations {
		if key == bmov1alpha1.PausedAnnotation || strings.HasPrefix(key, bmov1alpha1.RebootAnnotationPrefix) {
			return false
		}
	}
	return true
}
