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

// Package kubeguard is the boundary between the provider and every API
// server a tenant names: the pools of identities (package hostaccess) and
// the workload clusters whose Nodes the provider reaches (package
// workload). Both come to the provider as kubeconfigs written by tenants,
// so both are untrusted input, and both take the one path through here:
// parse, judge, handshake, guarded transport.
//
//   - Load (kubeconfig.go) is the half where nothing is sent. It reads the
//     kubeconfig of a Source (a Secret, capped at MaxSecretSize, or bytes)
//     field by field into a rest.Config carrying inline credentials only:
//     exec and auth-provider plugins, and every field that would make the
//     provider read one of its own files (tokenFile, client-certificate,
//     client-key, certificate-authority), are refused, naming the field.
//     Nothing can make the provider run a program or hand over its own
//     token. It then judges the server by a ServerPolicy (policy.go): no
//     loopback, link-local, metadata, unspecified or multicast address
//     unless an operator flag allows it (link-local and metadata: never),
//     https only by default. Callers that share connections fingerprint the
//     Kubeconfig it returns before anything connects.
//   - Kubeconfig.Connect (endpoint.go) is the half that talks to the
//     server, only for a Kubeconfig Load judged, under the same policy. It
//     builds the one HTTP client every request goes through: dialled under
//     the policy, on the address actually dialled, never through the
//     environment's proxy, without following redirects, and wrapped by a
//     guard (guard.go) that bounds every request's time, every response's
//     size and the requests in flight, and replaces every error answer by a
//     Status of its own, so no text a server sends reaches a condition, an
//     Event or a log line, but the sanitized message of a Kubernetes Status
//     from a server that passed the discovery handshake (discovery.go),
//     which Connect runs first. The Endpoint it returns carries that client
//     and a rest.Config without credentials of its own, whose transport is
//     the guarded one: no client built from it can go around the guard.
//   - Classify (errors.go) turns any failure into an *Error whose Reason is
//     one of the Reason constants and whose message is the provider's.
//
// What kubeguard does not do is keep connections: hostaccess and workload
// each decide when to connect (on goroutines of their own, so that a slow
// server holds no caller: a caller waits for an attempt with AwaitConnect),
// probe (Endpoint.Probe), back off (Backoff) and forget.
package kubeguard
