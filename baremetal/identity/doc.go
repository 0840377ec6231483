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

// Package identity says which credentials a Metal3 object uses to reach its
// hosts: its own identityRef, its cluster's, or the provider's own
// (in-cluster); an identityRef names a tenant's kubeconfig Secret or a
// Metal3ClusterIdentity, which ClusterIdentities resolves to its admin's
// Secret for the namespaces it admits. It resolves them (Key, Identity),
// reports their state on the objects (the IdentityReady condition,
// status.identity, Error with its reason), and protects the tenants'
// kubeconfig Secrets in use from deletion.
// Reaching the hosts with those credentials is package hostaccess's job.
package identity
