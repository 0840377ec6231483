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

// Package hostaccess owns every client that talks to a cluster where
// BareMetalHosts live. Nothing else builds one: controllers ask the Cache
// for a HostAccess for an identity.Identity, and the in-cluster identity is
// just another HostAccess, so provisioning has one code path whatever the
// tenancy.
//
// The Cache (cache.go) is the interface controllers program against, shaped
// like CAPI's ClusterCache: Resolve for an identity of a
// Metal3ClusterIdentity (its Secret, if it admits the object's namespace;
// Open does both steps), HostAccess for a client, Watch to run their own
// watches on the hosts' cluster of an identity, Source for the requests an
// identity Secret raises, Release when an object stops using an identity.
// IdentityCache implements it: connection.go reads each identity's Secret,
// reports failures and backs off; shared.go keeps one accessor per set of
// credentials (server, user, hosts' namespace), shared by every identity
// whose kubeconfig holds them, whatever Secret or Metal3ClusterIdentity it
// comes from, moves an identity whose credentials rotate to another, and
// connects: as Cluster API's ClusterCache does, on a goroutine of the
// cache (IdentityCache.attempt), never in a caller's reconcile. A caller
// starts or joins the attempt for its credentials and waits for it
// Options.ConnectWait at most; past that it is told Connecting (or the
// last failure of the same credentials, which stands until the attempt
// says otherwise), and the attempt, bounded by ConnectTimeout and by the
// cache's lifetime alone, tells the identity's users through their
// sources when it ends. So a tenant's server that answers slowly, or never,
// holds no worker of another tenant's. Preparing a connection for a second
// host mode goes the same way (accessor.prepare). routing.go delivers
// Secret changes to the controllers' sources, starts their watches, and
// finds who still uses an identity through identity.UsedIndex; watches.go
// runs each identity's watches on the accessor's shared informers;
// accessor.go is one connection's client, informer cache and probe, kept
// small since dozens run at once: its REST mapper discovers only the hosts'
// group (mapper.go), and its cache keeps only the host fields the provider
// reads (transform.go). Package fake implements the Cache for unit tests.
//
// Kubeconfigs come from tenants and are treated as untrusted input, by
// package kubeguard, whose one path this package and package workload
// both take: kubeguard.Load reads the Secret field by field, with nothing
// that would make the controller run a program or read one of its own
// files, and judges its server by the Options' ServerPolicy, before
// anything is sent (the credential fingerprint is computed from what it
// returns); Kubeconfig.Connect then runs the discovery handshake through
// kubeguard's client, which every later request goes through: dialled
// under the policy, bounded in time, size and requests in flight, with
// nothing a server answers reaching a condition, an Event or a log line
// but the sanitized message of a Kubernetes Status.
package hostaccess
