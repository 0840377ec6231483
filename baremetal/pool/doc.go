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

// Package pool is the rulebook of a pool of BareMetalHosts: every rule
// that decides which host a consumer may take, written once and used by
// both host modes — the provider's direct mode, where a Metal3Machine takes
// a BareMetalHost itself (package hostbinding), and the pool-side binder of
// HostClaim mode, which binds a HostClaim to one (package hostclaimbinder).
// Both modes may share one pool, so a host must look the same to both.
//
//   - Names and marks (names.go): the annotations and labels a host is
//     judged by, the hash-suffixed names of what is written next to a host.
//   - Availability (availability.go): every reason a host cannot be taken
//     now, and which of them may pass without the pool admin.
//   - Selectors (selector.go): a hostSelector of any age, operators
//     normalised, as one labels.Selector.
//   - Choosing (choose.go): which hosts a consumer is offered, in which
//     order (node reuse first, then its failure domain, then any), and when
//     it waits for the host node reuse keeps for it rather than take one.
//     What "kept for" means differs per mode (a label scoped to a cluster
//     in direct mode, an annotation naming a claim's key for claims); each
//     mode brings it as a Keeper, and the rule that follows is the same.
//   - Holds (holds.go): the hosts a process is taking right now, so its
//     concurrent consumers choose another one instead of racing for it.
//
// A mode only reads hosts and writes its claims; it never decides on its
// own whether a host may be taken. A third mode (say, virtual machines
// behind the HostClaim API) brings its Keeper and calls Choose.
package pool
