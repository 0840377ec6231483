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

package chaos

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
)

// episode is one time a host went into provisioning.
type episode struct {
	// consumer is the host's consumerRef then, "namespace/name (uid)".
	consumer    string
	consumerUID types.UID
	at          time.Time
}

// hostHistory is what was seen of one host since the run started.
type hostHistory struct {
	// claimed is when the host was first seen with a consumer.
	claimed     time.Time
	state       bmov1alpha1.ProvisioningState
	consumerUID types.UID
	episodes    []episode
	// consumers is every consumer the host ever had, by consumer ID.
	consumers map[types.UID]string
}

// historian watches the hosts of the run's pool namespaces from before they
// exist, so that each time a host enters provisioning, and for whom, is
// known however briefly the final state would show it. Final state alone
// cannot tell a host provisioned once from one provisioned, released and
// provisioned again for another machine.
type historian struct {
	namespaces sets.Set[string]
	// firstClaim is closed when a host is first seen with a consumer.
	firstClaim     chan struct{}
	firstClaimOnce sync.Once

	mu    sync.Mutex
	hosts map[types.NamespacedName]*hostHistory
}

// watchHosts starts recording the hosts of namespaces on the pool server at
// cfg; the watch ends with ctx.
func watchHosts(ctx context.Context, cfg *rest.Config, namespaces sets.Set[string]) (*historian, error) {
	h := &historian{namespaces: namespaces, firstClaim: make(chan struct{}), hosts: map[types.NamespacedName]*hostHistory{}}
	byNamespace := map[string]cache.Config{}
	for ns := range namespaces {
		byNamespace[ns] = cache.Config{}
	}
	hostCache, err := cache.New(cfg, cache.Options{
		Scheme: env.Scheme(), DefaultNamespaces: byNamespace, DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, fmt.Errorf("host cache: %w", err)
	}
	informer, err := hostCache.GetInformer(ctx, &bmov1alpha1.BareMetalHost{})
	if err != nil {
		return nil, fmt.Errorf("host informer: %w", err)
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    h.saw,
		UpdateFunc: func(_, obj any) { h.saw(obj) },
	}); err != nil {
		return nil, fmt.Errorf("host informer: %w", err)
	}
	go func() { _ = hostCache.Start(ctx) }()
	if !hostCache.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("host cache did not sync: %w", ctx.Err())
	}
	return h, nil
}

// inProvisioning: the host is being, or has been, given an image.
func inProvisioning(state bmov1alpha1.ProvisioningState) bool {
	return state == bmov1alpha1.StateProvisioning || state == bmov1alpha1.StateProvisioned
}

// saw records one observed version of a host. A host counts as entering
// provisioning when it is seen provisioning (or already provisioned, should
// a watch gap have hidden the step) and was not in provisioning for the
// same consumer when last seen.
func (h *historian) saw(obj any) {
	host, ok := obj.(*bmov1alpha1.BareMetalHost)
	if !ok || !h.namespaces.Has(host.Namespace) {
		return
	}
	key := types.NamespacedName{Namespace: host.Namespace, Name: host.Name}
	state := host.Status.Provisioning.State
	consumer, consumerUID := "", types.UID("")
	if ref := host.Spec.ConsumerRef; ref != nil {
		consumer, consumerUID = fmt.Sprintf("%s/%s (%s)", ref.Namespace, ref.Name, ref.UID), ref.UID
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	seen := h.hosts[key]
	if seen == nil {
		seen = &hostHistory{consumers: map[types.UID]string{}}
		h.hosts[key] = seen
	}
	if consumerUID != "" {
		seen.consumers[consumerUID] = consumer
		if seen.claimed.IsZero() {
			seen.claimed = time.Now()
			h.firstClaimOnce.Do(func() { close(h.firstClaim) })
		}
	}
	if inProvisioning(state) && (!inProvisioning(seen.state) || seen.consumerUID != consumerUID) {
		seen.episodes = append(seen.episodes, episode{consumer: consumer, consumerUID: consumerUID, at: time.Now()})
	}
	seen.state, seen.consumerUID = state, consumerUID
}

// hostRecord is a copy of one host's history.
type hostRecord struct {
	host      types.NamespacedName
	claimed   time.Time
	episodes  []episode
	consumers map[types.UID]string
}

// records returns a copy of every host's history, ordered by host.
func (h *historian) records() []hostRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]hostRecord, 0, len(h.hosts))
	for key, seen := range h.hosts {
		consumers := make(map[types.UID]string, len(seen.consumers))
		for uid, name := range seen.consumers {
			consumers[uid] = name
		}
		out = append(out, hostRecord{host: key, claimed: seen.claimed, episodes: append([]episode(nil), seen.episodes...), consumers: consumers})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].host.String() < out[j].host.String() })
	return out
}
