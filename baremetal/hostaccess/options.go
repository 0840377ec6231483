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
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
)

// Options configure a Cache. Zero durations take the defaults.
type Options struct {
	// SecretReader reads identity Secrets from the management cluster,
	// uncached (the manager's API reader): they are read only when their
	// metadata says they changed.
	SecretReader client.Reader
	// ManagementCache is the manager's cache. The Cache keeps a
	// metadata-only informer on Secrets in it, to notice rotation and
	// deletion without reading every Secret's data.
	ManagementCache cache.Cache
	// ClusterIdentityReader reads Metal3ClusterIdentities and Namespace
	// metadata to resolve cluster identities; defaults to ManagementCache.
	ClusterIdentityReader client.Reader
	// ProviderNamespace is the namespace the provider runs in, where a
	// Metal3ClusterIdentity's secretRef without a namespace points;
	// defaults to identity.DefaultProviderNamespace. With a manager limited
	// to namespaces (--namespace), Secrets of ManagementCache must include it.
	ProviderNamespace string
	// InClusterClient is the manager's client, used for the in-cluster identity.
	InClusterClient client.Client
	// InClusterReader reads from the management API server without cache
	// (the manager's API reader); defaults to SecretReader.
	InClusterReader client.Reader
	Scheme          *runtime.Scheme

	// ProbeInterval is how often a connected identity's API server is probed.
	ProbeInterval time.Duration
	// ProbeTimeout bounds one probe.
	ProbeTimeout time.Duration
	// FailureThreshold consecutive failed probes disconnect an identity.
	FailureThreshold int
	// ConnectTimeout bounds connecting (discovery handshake, access review
	// and the first list of hosts), which runs on a goroutine of the cache,
	// and every single request but watches.
	ConnectTimeout time.Duration
	// ConnectWait is how long a caller waits for a connection under way
	// before it is told the identity is still connecting (reason
	// Connecting, retried): long enough for a healthy server to connect
	// within the call, short enough that a slow server holds no reconcile
	// worker for its whole ConnectTimeout.
	ConnectWait time.Duration
	// MinBackoff and MaxBackoff bound the wait between connection attempts
	// of an identity that failed; it doubles with each failure.
	MinBackoff, MaxBackoff time.Duration
	// QPS and Burst limit each remote client: one per set of credentials,
	// shared by every identity holding them.
	QPS   float32
	Burst int
	// UserAgent identifies the provider to remote API servers.
	UserAgent string
	// WrapTransport, if set, wraps every remote client's transport (for
	// request accounting or tracing).
	WrapTransport func(http.RoundTripper) http.RoundTripper

	// Policy says which servers identities may point at; the zero value is
	// the strict default (https only, no loopback, link-local or metadata).
	Policy kubeguard.ServerPolicy
	// MaxResponseBytes caps each response body read from an identity's
	// server (for a watch: per connection, which is then reopened).
	MaxResponseBytes int64
	// MaxRequestsInFlight bounds the requests but watches in flight to one
	// connection's server: a slow server holds at most that many workers.
	MaxRequestsInFlight int
	// MaxCachedObjects and MaxCachedBytes bound what one connection's
	// informers may hold (budget.go); over either, it is disconnected with
	// reason LimitExceeded and retried after backoff.
	MaxCachedObjects int
	MaxCachedBytes   int64

	// Users list the kinds whose objects use identities, each indexed by
	// identity.UsedIndex in ManagementCache: an identity stops once none
	// records using it (Cache.Release).
	Users []func() client.ObjectList
	// Recorder, when set, records Events on identity Secrets: connected,
	// disconnected, and why an identity cannot be used.
	Recorder events.EventRecorder
}

func (o *Options) setDefaults() {
	setDefault := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	setDefault(&o.ProbeInterval, 10*time.Second)
	setDefault(&o.ProbeTimeout, 5*time.Second)
	setDefault(&o.ConnectTimeout, 15*time.Second)
	setDefault(&o.ConnectWait, 2*time.Second)
	setDefault(&o.MinBackoff, 5*time.Second)
	setDefault(&o.MaxBackoff, 2*time.Minute)
	if o.FailureThreshold == 0 {
		o.FailureThreshold = 3
	}
	if o.QPS == 0 {
		o.QPS = 20
	}
	if o.Burst == 0 {
		o.Burst = 30
	}
	if o.MaxResponseBytes == 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.MaxRequestsInFlight == 0 {
		o.MaxRequestsInFlight = DefaultMaxRequestsInFlight
	}
	if o.MaxCachedObjects == 0 {
		o.MaxCachedObjects = DefaultMaxCachedObjects
	}
	if o.MaxCachedBytes == 0 {
		o.MaxCachedBytes = DefaultMaxCachedBytes
	}
	if o.ClusterIdentityReader == nil {
		o.ClusterIdentityReader = o.ManagementCache
	}
	if o.ProviderNamespace == "" {
		o.ProviderNamespace = identity.DefaultProviderNamespace
	}
}

// DefaultMaxResponseBytes bounds a response from an identity's server: a
// list of a thousand BareMetalHosts is a few tens of megabytes at most.
const DefaultMaxResponseBytes = 64 << 20

// DefaultMaxRequestsInFlight bounds the requests in flight to one
// connection's server: a healthy server answers in milliseconds, so a burst
// of reconciles rarely has more than a few at once; a slow one holds no more
// than this many of the manager's workers.
const DefaultMaxRequestsInFlight = 4

// DefaultMaxCachedObjects and DefaultMaxCachedBytes bound what one
// connection caches. A host as the cache keeps it (TransformHost) is under
// 2 KiB of JSON (TestDefaultBudgetFitsLargePools): 25,000 of them, more
// than any pool namespace we know of, take some 40 MiB, with room left in
// 64 MiB for the larger HostClaims and HardwareData of HostClaim mode. In
// memory, a connection at its budget costs the process about twice as
// much (make bench-scale, "A hostile identity").
const (
	DefaultMaxCachedObjects = 25000
	DefaultMaxCachedBytes   = 64 << 20
)

// clientOptions are what kubeguard bounds every identity's client by.
func (o *Options) clientOptions() kubeguard.ClientOptions {
	return kubeguard.ClientOptions{
		RequestTimeout: o.ConnectTimeout, MaxResponseBytes: o.MaxResponseBytes, MaxRequestsInFlight: o.MaxRequestsInFlight,
		QPS: o.QPS, Burst: o.Burst, UserAgent: o.UserAgent, WrapTransport: o.WrapTransport,
	}
}
