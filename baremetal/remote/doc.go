// Package remote owns every client that talks to a cluster where
// BareMetalHosts live. Managers never build clients: they ask the Cache for a
// HostAccess for an Identity, and the in-cluster identity is just another
// HostAccess, so provisioning has one code path whatever the tenancy.
//
// Kubeconfigs come from tenants and are treated as untrusted input: anything
// that would make the controller run a program or read one of its own files
// is rejected before a client is built.
package remote
