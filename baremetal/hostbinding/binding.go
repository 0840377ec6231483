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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
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

// Host is what a binding tells of the host a machine is bound to, whatever
// the binding reads it from.
type Host struct {
	// Owner is the object the machine is bound through (here the
	// BareMetalHost): the Secrets written next to the host belong to it, and
	// go with it.
	Owner metav1.OwnerReference
	// Namespace and Name of the host in the pool.
	types.NamespacedName
	// UID of the BareMetalHost: the node's image labels its Node
	// metal3.io/uuid=<UID>, which is how the Node is found.
	UID types.UID
	// State is the host's provisioning state ("" while it registers).
	State bmov1alpha1.ProvisioningState
	// ErrorMessage is set while the host reports an operational error.
	ErrorMessage string
	// ProvisioningStarted: the host was given an image or a custom deploy.
	ProvisioningStarted bool
	// BareMetalHost is the host itself, which data templates render from
	// (NICs, labels, annotations); nil where the binding cannot read hosts.
	BareMetalHost *bmov1alpha1.BareMetalHost
}

// Provisioned reports whether the host runs the machine's image.
func (h *Host) Provisioned() bool { return h.State == bmov1alpha1.StateProvisioned }

// String names the host for messages.
func (h *Host) String() string { return h.NamespacedName.String() }
