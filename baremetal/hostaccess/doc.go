// Package remote owns every client that talks to a cluster where
// BareMetalHosts live. Managers never build clients: they ask the Cache for a
// HostAccess for an identity.Identity, and the in-cluster identity is just another
// HostAccess, so provisioning has one code path whatever the tenancy.
//
// Kubeconfigs come from tenants and are treated as untrusted input: anything
// that would make the controller run a program or read one of its own files
// is rejected before a client is built (kubeconfig.go). The network side is
// closed too: a ServerPolicy judges every server before anything is sent and
// every connection when it is dialled (policy.go); the first request to a
// server is a discovery handshake that must be answered as a Kubernetes API
// server does (discovery.go); and a guard between client-go and the
// connection bounds every request and makes sure that nothing a server
// answers reaches a condition or an Event, but the sanitized message of a
// Kubernetes Status from a server that passed the handshake (guard.go).
package hostaccess
