// Package identity says which credentials a Metal3 object uses to reach its
// hosts: its own identityRef, its cluster's, or the provider's own
// (in-cluster). It resolves them (Key, Identity), reports their state on the
// objects (the IdentityReady condition, status.identity, Error with its
// reason), and protects the kubeconfig Secrets in use from deletion.
// Reaching the hosts with those credentials is package hostaccess's job.
package identity
