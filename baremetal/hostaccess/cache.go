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

package hostaccess

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// Cache hands out access to the hosts of each identity and runs, on the
// cluster where they are, the watches controllers register. It is shaped
// like CAPI's ClusterCache: a controller asks for a HostAccess, registers
// its own watches for the identity (Watch), and gets the requests the cache
// raises for it through its own source (Source). A new controller that acts
// on hosts therefore extends the cache without editing it.
//
// NewIdentityCache returns the implementation the manager runs; package
// fake has one for unit tests.
type Cache interface {
	// Resolve returns id with the Secret of its Metal3ClusterIdentity, if
	// it names one and that identity admits id.ObjectNamespace (see
	// identity.ClusterIdentities); any other id as it is. The returned id
	// is what the object uses, also with an error (an *identity.Error
	// saying IdentityNotFound or NamespaceNotAllowed): an unresolved key.
	Resolve(ctx context.Context, id identity.Identity) (identity.Identity, error)

	// HostAccess returns access to the hosts of id, connecting the identity
	// on first use. The error is an *identity.Error when the identity cannot
	// be used; its Reason is the IdentityReady condition's. An id of a
	// Metal3ClusterIdentity must be resolved (Resolve, or Open for both),
	// and still resolve to the same Secret: it is refused otherwise, so no
	// caller can use a cluster identity from a namespace it does not admit.
	// The access's Key is id.Key.
	HostAccess(ctx context.Context, id identity.Identity) (HostAccess, error)

	// Watch has w watch its kind in the hosts' namespace of key, once per
	// watcher name and Secret and context (identity.Key.Connection): w's
	// handler gets the events of the hosts key sees. Identities of other
	// Secrets holding the same credentials share one informer, hence one
	// watch per kind on the API server, each with its own handler. Call it
	// whenever key is used (after a successful HostAccess): a reconnected
	// or rotated identity has none of the watches of its previous
	// connection, and the Source event that follows brings the call back.
	// The in-cluster identity watches through the manager's cache.
	Watch(ctx context.Context, key identity.Key, w Watcher) error

	// Source delivers to one controller the requests mapFunc returns for an
	// identity Secret whenever that Secret changes, appears or goes, and
	// whenever an identity of that Secret connects or disconnects: what
	// the controller's objects must hear to report on their identity.
	Source(name string, mapFunc SecretMapFunc) source.Source

	// Release says leaving no longer uses key (it is deleted, or uses
	// another identity now). The identity stops, its connection and
	// watches with it, once no object records using it (identity.UsedIndex).
	Release(ctx context.Context, key identity.Key, leaving client.Object) error

	// RetryAfter is how long to wait before asking again for an identity
	// that failed.
	RetryAfter(key identity.Key) time.Duration

	// SecretMetadata reads Secret metadata from the management cluster's
	// cache (no data, no request).
	SecretMetadata() client.Reader
}

// Open resolves id and returns its host access: what a controller does
// before it touches hosts. The identity returned is id as resolved, also
// when err is not nil: what the object records in status.identity.
func Open(ctx context.Context, c Cache, id identity.Identity) (identity.Identity, HostAccess, error) {
	id, err := c.Resolve(ctx, id)
	if err != nil {
		return id, nil, err
	}
	access, err := c.HostAccess(ctx, id)
	return id, access, err
}

// SecretMapFunc maps an identity Secret to the requests of a controller's
// objects that use it.
type SecretMapFunc func(ctx context.Context, secret types.NamespacedName) []reconcile.Request

// Watcher is one watch a controller wants on the hosts' cluster of an
// identity.
type Watcher interface {
	// Name identifies the watch: one per name and identity.
	Name() string
	// Object is the kind watched.
	Object() client.Object
	// Watch starts src for the controller (a controller.Controller).
	Watch(src source.Source) error
	// EventHandler maps the events to the controller's requests.
	EventHandler() handler.TypedEventHandler[client.Object, reconcile.Request]
	// Predicates filter the events.
	Predicates() []predicate.TypedPredicate[client.Object]
}

// WatcherOptions describe a Watcher.
type WatcherOptions struct {
	// Name identifies the watch, e.g. "metal3machine-hosts".
	Name string
	// Watcher is the controller the events go to.
	Watcher interface{ Watch(src source.Source) error }
	// Kind is the object watched, e.g. &bmov1alpha1.BareMetalHost{}.
	Kind client.Object
	// EventHandler maps events to the controller's requests.
	EventHandler handler.TypedEventHandler[client.Object, reconcile.Request]
	// Predicates filter the events.
	Predicates []predicate.TypedPredicate[client.Object]
}

// NewWatcher returns a Watcher from its options.
func NewWatcher(opts WatcherOptions) Watcher { return &watcher{opts: opts} }

type watcher struct{ opts WatcherOptions }

func (w *watcher) Name() string                  { return w.opts.Name }
func (w *watcher) Object() client.Object         { return w.opts.Kind }
func (w *watcher) Watch(src source.Source) error { return w.opts.Watcher.Watch(src) }
func (w *watcher) EventHandler() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return w.opts.EventHandler
}
func (w *watcher) Predicates() []predicate.TypedPredicate[client.Object] { return w.opts.Predicates }

// kindSource is the source a Watcher starts on the cache of its hosts.
func kindSource(c cache.Cache, w Watcher) source.Source {
	return source.Kind(c, w.Object(), w.EventHandler(), w.Predicates()...)
}
