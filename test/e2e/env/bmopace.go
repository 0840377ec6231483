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

// lookAnnotation is the annotation the pacer sets on a host the Bare Metal
// Operator has left waiting.
const lookAnnotation = "e2e.metal3.io/look"

const (
	// lookAfter is how long a host may wait on the operator (see
	// waitingFor) with nothing happening to it before the pacer wakes the
	// operator, and how long between two wakings: with Ironic, the
	// operator looks at a host in progress at least this often.
	lookAfter = 10 * time.Second
	lookPoll  = 2 * time.Second
)

// pacer gives the Bare Metal Operator's test mode the pace Ironic gives it.
//
// Test mode keeps one fixture state for every host of the process: one
// power flag, one image, one "adopted" flag. Hosts that want different
// things take turns at that state: a host asked to be on and one asked to
// be off (a released host is left off) switch the one power flag, each
// switch answered "in progress" with no delay, which the operator turns
// into a rate-limited requeue of the host, whose exponential backoff grows
// with each; a host deprovisioning and one provisioning clear and set the
// one image, each every 10 s, and can do so in step for minutes. And a
// state change asks for a rate-limited requeue too, while a status-only
// write of the operator's own is no event it reconciles: a host's next
// step can wait as long as its backoff. Seen in CI: a machine of the
// shared-pool spec that ran 5 min after its host was provisioned (its
// power-on waiting 41, 82, then 164 s), and that spec's cluster deletion
// waiting more than 5 min for its control-plane Machine (cause not
// recorded; the specs' failure diagnosis now says what each object of a
// stuck deletion waits for). Ironic's provisioner asks to be looked at
// again after a fixed delay, which resets the backoff. The pacer stands in
// for that delay: a host that waits on the operator (waitingFor) with no
// change for lookAfter gets lookAnnotation set to the time, an annotation
// change the operator reconciles at once, and again every lookAfter while
// it waits (a look out of step with the other host's should also end a
// clear-and-set of the one image; not observed here). It never touches a paused host, one
// being rebooted (its reboot annotations keep it off on purpose) or one in
// error (the operator's own backoff, as with Ironic). A powered-on host
// asked to be off is not paced: with one power flag, pacing both sides
// would switch every host every lookAfter; nothing waits for a released
// host to be off.
type pacer struct {
	t     testenv.T
	hosts client.Client
	// waits are the hosts waiting on the operator: for what, and when the
	// pacer wakes the operator for it (lookAfter after the wait was first
	// seen, or after the pacer last woke the operator for it).
	waits map[types.UID]hostWait
}

// hostWait is one host's wait on the operator, as the pacer saw it.
type hostWait struct {
	what  string
	since time.Time
	due   time.Time
	// looks is how many times the pacer woke the operator for it.
	looks int
}

// startPacer paces the Bare Metal Operator running on hosts until t ends.
func startPacer(t testenv.T, hosts *testenv.Env) {
	t.Helper()
	p := &pacer{t: t, hosts: hosts.Client, waits: map[types.UID]hostWait{}}
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	running.Go(func() {
		ticker := time.NewTicker(lookPoll)
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

// look wakes the operator for every host whose look is due, and logs each
// wait it paced once the wait is over: how long it lasted and how many
// looks it took. Errors (a server that is down, a host deleted meanwhile)
// are left to the next round.
func (p *pacer) look(ctx context.Context, now time.Time) {
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := p.hosts.List(ctx, hosts); err != nil {
		return
	}
	names := map[types.UID]string{}
	waiting := map[types.UID]string{}
	for i := range hosts.Items {
		host := &hosts.Items[i]
		names[host.UID] = host.Namespace + "/" + host.Name
		if what := waitingFor(host); what != "" {
			waiting[host.UID] = what
		}
	}
	for uid, w := range p.waits {
		if waiting[uid] != w.what {
			// Progress (another state, or nothing to wait for), or the
			// host is gone.
			if w.looks > 0 {
				p.t.Logf("pacer: host %s waited %s for %s; the pacer woke the Bare Metal Operator %d times",
					names[uid], now.Sub(w.since).Round(time.Second), w.what, w.looks)
			}
			delete(p.waits, uid)
		}
	}
	for i := range hosts.Items {
		host := &hosts.Items[i]
		what := waiting[host.UID]
		if what == "" {
			continue
		}
		w, seen := p.waits[host.UID]
		if !seen {
			p.waits[host.UID] = hostWait{what: what, since: now, due: now.Add(lookAfter)}
			continue
		}
		if now.Before(w.due) {
			continue
		}
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, lookAnnotation, now.UTC().Format(time.RFC3339Nano))
		if err := p.hosts.Patch(ctx, host, client.RawPatch(types.MergePatchType, patch)); err == nil {
			w.due, w.looks = now.Add(lookAfter), w.looks+1
			p.waits[host.UID] = w
		}
	}
}

// waitingFor says what host waits for the Bare Metal Operator to do, in
// its current state ("" if nothing, or if the pacer leaves it alone): to
// power it on once provisioned, to provision it, to deprovision it, or to
// delete it.
func waitingFor(host *bmov1alpha1.BareMetalHost) string {
	for key := range host.Annotations {
		if key == bmov1alpha1.PausedAnnotation || strings.HasPrefix(key, bmov1alpha1.RebootAnnotationPrefix) {
			return ""
		}
	}
	if host.Status.OperationalStatus == bmov1alpha1.OperationalStatusError {
		return ""
	}
	state := host.Status.Provisioning.State
	hasImage := host.Spec.Image != nil || host.Spec.CustomDeploy != nil
	switch {
	case !host.DeletionTimestamp.IsZero():
		return "deletion in " + string(state)
	case hasImage && (state == bmov1alpha1.StateAvailable || state == bmov1alpha1.StatePreparing || state == bmov1alpha1.StateProvisioning):
		return "provisioning in " + string(state)
	case !hasImage && (state == bmov1alpha1.StateProvisioning || state == bmov1alpha1.StateProvisioned || state == bmov1alpha1.StateDeprovisioning):
		return "deprovisioning in " + string(state)
	case state == bmov1alpha1.StateProvisioned && host.Spec.Online && !host.Status.PoweredOn:
		return "power on in " + string(state)
	}
	return ""
}
