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

// Package hostbinding binds a Metal3Machine to a host of its identity's
// pool: find and claim one, have it provisioned, keep it in line with the
// machine, pause it, and release it. Binding is the seam: today's
// implementation claims BareMetalHosts directly (ForBareMetalHosts); a
// HostClaim mode, where a pool-side binder chooses the host, is a second
// implementation, not a fork of the machine controller.
//
// Host selection (selection.go) and the Secrets written next to a host
// (secrets.go) are plain functions, table-tested.
package hostbinding

import (
	"context"
	"errors"
	"fmt"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

var (
	// ErrNoAvailableHost: no host is free and matches the machine.
	ErrNoAvailableHost = errors.New("no available host matches the machine")
	// ErrHostNotFound: the machine records a host (or claim) and none that
	// names it as consumer can be found through its identity. The machine
	// waits; it never takes another host, and is never deleted without
	// releasing its host unless an operator says it is lost (HostLost).
	ErrHostNotFound = errors.New("associated host not found")
)

// Binding binds one Metal3Machine to a host. Every call goes through the
// machine's identity; none takes another host for a machine that had one.
type Binding interface {
	// Host is the machine's host: nil while it has none, an error wrapping
	// ErrHostNotFound when it had one that is gone or taken.
	Host(ctx context.Context) (*Host, error)
	// Intend records on the machine, in memory, the host Bind would take
	// now, so that the write adding the machine's finalizer carries it
	// (see intent.go): Bind then tries that host first. It writes nothing.
	// HostClaim mode records nothing: its claim's record is written once
	// the claim exists.
	Intend(ctx context.Context) error
	// Bind finds the machine a host and claims it (also recovering a claim
	// that succeeded without being recorded); ErrNoAvailableHost when none
	// matches. A machine without a dataTemplate is given what to provision
	// in the same step; one with a dataTemplate only takes the host, and
	// Provision follows once its data is rendered next to it.
	Bind(ctx context.Context) (*Host, error)
	// Provision gives host the machine's image (or custom deploy) and user
	// data, with the rendered metadata and network data Secrets, which are
	// already next to it.
	Provision(ctx context.Context, host *Host, rendered RenderedSecrets) error
	// Sync keeps host in line with the machine (cleaning mode, no pause of
	// the provider's) and reports whether it is provisioned; once it is,
	// the machine gets its provider ID, addresses and failure domain.
	Sync(ctx context.Context, host *Host) (bool, error)
	// Release deprovisions and frees the machine's host, and deletes the
	// Secrets written next to it for the machine; true once it is free (or
	// gone, or someone else's).
	Release(ctx context.Context) (bool, error)
	// Pause sets or clears the provider's pause on host; a pause set by
	// someone else is never cleared.
	Pause(ctx context.Context, host *Host, paused bool) error
}

// Lookup is the host m3m is bound to through access, for callers that only
// read it (the Metal3Data controller renders from it): nil while it has
// none, an error wrapping ErrHostNotFound when the host it had is gone. It
// never writes, unlike a Binding's Host, which may finish a step a crash
// interrupted.
func Lookup(ctx context.Context, mode infrav1.HostMode, access hostaccess.HostAccess, m3m *infrav1.Metal3Machine) (*Host, error) {
	side := machineSide{Options{Access: access, M3Machine: m3m}}
	if mode == infrav1.HostModeHostClaim {
		return (&claimBinding{side}).lookup(ctx)
	}
	bmh, err := ConsumedHost(ctx, access, m3m, access.Client())
	if err != nil || bmh == nil {
		return nil, err
	}
	return hostView(bmh), nil
}

// HostLost reports whether an operator said m3m's host is lost
// (infrav1.HostLostAnnotation): Release then lets a machine whose host
// cannot be found go without releasing one.
func HostLost(m3m *infrav1.Metal3Machine) bool {
	_, lost := m3m.Annotations[infrav1.HostLostAnnotation]
	return lost
}

// RenderedSecrets are the Secrets a Metal3Data wrote next to the host.
type RenderedSecrets struct {
	MetaData, NetworkData *corev1.SecretReference
}

// Host is what a binding tells of the host a machine is bound to, in
// neither host mode's terms: the same facts whether the binding read a
// BareMetalHost or a HostClaim and its HardwareData copy.
type Host struct {
	// Owner is the object the machine is bound through (a BareMetalHost or
	// a HostClaim): the Secrets written next to the host belong to it, and
	// go with it.
	Owner metav1.OwnerReference
	// Namespace and Name of the host (or claim) in the pool.
	types.NamespacedName
	// UID of the BareMetalHost, or of the claim in HostClaim mode: the
	// node's image labels its Node metal3.io/uuid=<UID>, which is how the
	// Node is found.
	UID types.UID
	// State is the host's provisioning state ("" while it registers).
	State bmov1alpha1.ProvisioningState
	// ErrorMessage is set while the host reports an operational error, or
	// the binder refuses to pass the machine's wishes to it.
	ErrorMessage string
	// ProvisioningStarted: the host was given an image or a custom deploy.
	ProvisioningStarted bool
	// PoweredOn is the host's reported power.
	PoweredOn bool
	// Labels and Annotations are the host's as its tenant may read them
	// (hostclaim.TenantLabels, TenantAnnotations): nothing that quotes the
	// BMC. Data templates and the Node's label sync read them.
	Labels, Annotations map[string]string
	// Hardware is the host's inspected hardware (NICs, hostname); nil
	// before inspection.
	Hardware *bmov1alpha1.HardwareDetails
	// BootMACAddress is the host's boot NIC; empty where the binding cannot
	// see it (a HostClaim does not tell it).
	BootMACAddress string
	// UserData, MetaData and NetworkData are the Secrets next to the host
	// it was given to provision.
	UserData, MetaData, NetworkData *corev1.SecretReference

	// bmh is the BareMetalHost a direct-mode view was read from: that
	// binding's writes are guarded by the resourceVersion it read.
	bmh *bmov1alpha1.BareMetalHost
}

// Provisioned reports whether the host runs the machine's image.
func (h *Host) Provisioned() bool { return h.State == bmov1alpha1.StateProvisioned }

// String names the host for messages.
func (h *Host) String() string { return h.NamespacedName.String() }

// FailureDomain is the failure domain the host is in, if any.
func (h *Host) FailureDomain() string { return h.Labels[pool.FailureDomainLabel] }

// Addresses are the machine addresses the host's inspection found: each
// NIC's IP, and its hostname.
func (h *Host) Addresses() []clusterv1.MachineAddress {
	hw := h.Hardware
	if hw == nil {
		return nil
	}
	var addresses []clusterv1.MachineAddress
	for _, nic := range hw.NIC {
		if nic.IP != "" {
			addresses = append(addresses, clusterv1.MachineAddress{Type: clusterv1.MachineInternalIP, Address: nic.IP})
		}
	}
	if hw.Hostname != "" {
		addresses = append(addresses,
			clusterv1.MachineAddress{Type: clusterv1.MachineHostName, Address: hw.Hostname},
			clusterv1.MachineAddress{Type: clusterv1.MachineInternalDNS, Address: hw.Hostname})
	}
	return addresses
}

// ProviderID is the provider ID a machine bound to the host gets.
func (h *Host) ProviderID(m3m *infrav1.Metal3Machine) string {
	return ProviderID(h.NamespacedName, m3m)
}

// ProviderID is metal3://<host namespace>/<host name>/<Metal3Machine name>,
// as upstream CAPM3 writes it (in HostClaim mode, the claim's).
func ProviderID(host types.NamespacedName, m3m *infrav1.Metal3Machine) string {
	return fmt.Sprintf("metal3://%s/%s/%s", host.Namespace, host.Name, m3m.Name)
}

// MachineProviderID is the provider ID m3m records, else the one the host
// gives it.
func (h *Host) MachineProviderID(m3m *infrav1.Metal3Machine) string {
	if id := m3m.Spec.ProviderID; id != "" {
		return id
	}
	return h.ProviderID(m3m)
}
