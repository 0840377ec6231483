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

package datatemplate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/render"
)

// Keys of the rendered documents in the Secrets next to the host, as the
// Bare Metal Operator reads them.
const (
	metaDataKey    = "metaData"
	networkDataKey = "networkData"
)

// ErrWaitingForAddress: an IP address asked from a pool is not allocated yet.
var ErrWaitingForAddress = errors.New("waiting for IP addresses")

// RenderError means the template cannot be rendered for this machine; the
// message names the template field to fix. Retrying does not help until the
// template or the objects it reads change.
type RenderError struct{ err error }

func (e *RenderError) Error() string { return e.err.Error() }
func (e *RenderError) Unwrap() error { return e.err }

// AsRenderError returns the RenderError in err's chain, if any.
func AsRenderError(err error) (*RenderError, bool) {
	var re *RenderError
	ok := errors.As(err, &re)
	return re, ok
}

// DataManager renders one Metal3Data: it claims the IP addresses its
// template asks for, renders metadata and network data and writes them as
// Secrets next to the machine's host, through the machine's identity.
type DataManager struct {
	// Client reads and writes the management cluster (IP claims live there,
	// next to the Metal3Data).
	Client        client.Client
	Access        hostaccess.HostAccess
	Data          *infrav1.Metal3Data
	Template      *infrav1.Metal3DataTemplate
	Claim         *infrav1.Metal3DataClaim
	Metal3Machine *infrav1.Metal3Machine
	Machine       *clusterv1.Machine
	Host          *hostbinding.Host
	// HostNameIPClaims names Metal3 IPAM claims after the host, so a pool's
	// preAllocations (keyed by claim name) can give each host its address.
	HostNameIPClaims bool
}

// input is what the template renders from. The host's labels and
// annotations are the tenant's view of them in either host mode (see
// hostbinding.Host): a template's fromLabels or fromAnnotations would
// otherwise copy the BMC address or credentials name (BMO's status
// annotation, kubectl's last applied configuration) into the metadata the
// tenant's node boots with.
func (m *DataManager) input() render.Input {
	return render.Input{
		Template: &m.Template.Spec, Index: int(dataIndex(m.Data)), Namespace: m.Data.Namespace,
		Machine: m.Machine, Metal3Machine: m.Metal3Machine, Host: &render.Host{
			Namespace: m.Host.Namespace, Name: m.Host.Name, Labels: m.Host.Labels, Annotations: m.Host.Annotations,
			Hardware: m.Host.Hardware, BootMACAddress: m.Host.BootMACAddress,
		},
	}
}

// Reconcile claims addresses, renders and writes the Secrets. It returns an
// error wrapping ErrWaitingForAddress while addresses are pending, and a
// *RenderError when the template cannot be rendered; in both cases nothing
// is written next to the host.
func (m *DataManager) Reconcile(ctx context.Context) error {
	in := m.input()
	pools, err := render.PoolFields(in)
	if err != nil {
		return &RenderError{err: err}
	}
	addresses, waiting, err := m.addresses(ctx, pools)
	if err != nil {
		return err
	}
	if len(waiting) > 0 {
		return fmt.Errorf("%w from %s", ErrWaitingForAddress, strings.Join(waiting, ", "))
	}
	in.Pools = addresses
	metaData, mdErr := render.MetaData(in)
	networkData, ndErr := render.NetworkData(in)
	if err := errors.Join(mdErr, ndErr); err != nil {
		return &RenderError{err: err}
	}

	if m.Template.Spec.MetaData != nil {
		ref, err := m.writeSecret(m.Data.Status.MetaData)(ctx, m.Access, m.Host, m.Data, "Metal3Data", pool.MetaDataPurpose,
			map[string][]byte{metaDataKey: metaData})
		if err != nil {
			return err
		}
		m.Data.Status.MetaData = &infrav1.SecretReference{Namespace: ref.Namespace, Name: ref.Name}
	}
	if m.Template.Spec.NetworkData != nil {
		ref, err := m.writeSecret(m.Data.Status.NetworkData)(ctx, m.Access, m.Host, m.Data, "Metal3Data", pool.NetworkDataPurpose,
			map[string][]byte{networkDataKey: networkData})
		if err != nil {
			return err
		}
		m.Data.Status.NetworkData = &infrav1.SecretReference{Namespace: ref.Namespace, Name: ref.Name}
	}
	now := metav1.Now()
	m.Data.Status.LastUpdated = &now
	m.Data.Status.ErrorMessage = ""
	m.Data.Status.Ready = ptr.To(true)
	return nil
}

// WroteHostSecrets reports whether Secrets may exist next to the host.
func (m *DataManager) WroteHostSecrets() bool {
	return m.Data.Status.MetaData != nil || m.Data.Status.NetworkData != nil
}

// DeleteHostSecrets deletes the Secrets written next to the host; Access
// must be set when WroteHostSecrets.
func (m *DataManager) DeleteHostSecrets(ctx context.Context) error {
	for _, s := range []struct {
		ref     *infrav1.SecretReference
		purpose string
	}{{m.Data.Status.MetaData, pool.MetaDataPurpose}, {m.Data.Status.NetworkData, pool.NetworkDataPurpose}} {
		if s.ref == nil {
			continue
		}
		// The Secrets are next to the host, in the namespace the identity
		// names: where status says they were written, unless the hosts
		// moved there with them since (the pivot of docs/move.md); the
		// identity may reach no other namespace.
		if err := hostbinding.DeleteSecret(ctx, m.Access, m.Access.Namespace(), m.Data, s.purpose); err != nil {
			return err
		}
	}
	m.Data.Status.MetaData, m.Data.Status.NetworkData = nil, nil
	m.Data.Status.Ready = ptr.To(false)
	return nil
}

// ReleaseAddresses deletes the IP claims owned by the Metal3Data. It returns
// true once none is left.
func (m *DataManager) ReleaseAddresses(ctx context.Context) (bool, error) {
	remaining := 0
	for _, list := range []client.ObjectList{&ipamv1.IPClaimList{}, &capipamv1.IPAddressClaimList{}} {
		if err := m.Client.List(ctx, list, client.InNamespace(m.Data.Namespace)); err != nil {
			if meta.IsNoMatchError(err) {
				continue // that IPAM API is not installed: nothing claimed from it
			}
			return false, fmt.Errorf("list IP claims in %s: %w", m.Data.Namespace, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return false, err
		}
		for _, item := range items {
			obj, ok := item.(client.Object)
			if !ok || !ownedBy(obj, m.Data) {
				continue
			}
			remaining++
			// Upstream CAPM3's Metal3Data controller put its finalizer on
			// the claims it made, and removed it itself; this provider
			// puts none, so nothing else would.
			if controllerutil.ContainsFinalizer(obj, infrav1.DataFinalizer) {
				before, _ := obj.DeepCopyObject().(client.Object)
				controllerutil.RemoveFinalizer(obj, infrav1.DataFinalizer)
				if err := m.Client.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
					return false, fmt.Errorf("remove upstream CAPM3's finalizer from IP claim %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
				}
			}
			if !obj.GetDeletionTimestamp().IsZero() {
				continue
			}
			if err := m.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				return false, fmt.Errorf("delete IP claim %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
			}
		}
	}
	return remaining == 0, nil
}

func ownedBy(obj, owner metav1.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}

// claimName is the name of the Metal3Data's claim on pool: named after the
// Metal3Data, or for Metal3 IPAM pools with HostNameIPClaims after the host,
// as upstream CAPM3's BMH-name-based preallocation does.
func (m *DataManager) claimName(pool render.PoolRef) string {
	if m.HostNameIPClaims && pool.APIGroup == render.Metal3IPAMGroup && m.Host != nil {
		return m.Host.Name + "-" + pool.Name
	}
	return m.Data.Name + "-" + pool.Name
}

// poolFailure is an IP address manager's verdict that a pool cannot give
// the claimed address (exhausted, or the allocation failed).
type poolFailure struct{ reason string }

func (e *poolFailure) Error() string { return e.reason }

// addresses ensures a claim on every pool and returns the allocated
// addresses, and the pools still waiting for one. A pool that cannot give
// an address is a *RenderError naming the template field that uses it.
func (m *DataManager) addresses(ctx context.Context, pools map[render.PoolRef]*field.Path) (map[render.PoolRef]render.PoolAddress, []string, error) {
	out := map[render.PoolRef]render.PoolAddress{}
	var (
		waiting  []string
		failures field.ErrorList
	)
	// Claims are made in a stable order, so a partial failure is repeatable.
	refs := slices.SortedFunc(maps.Keys(pools), func(a, b render.PoolRef) int { return strings.Compare(a.String(), b.String()) })
	for _, pool := range refs {
		var (
			addr *render.PoolAddress
			err  error
		)
		if pool.APIGroup == render.Metal3IPAMGroup {
			addr, err = m.metal3Address(ctx, pool)
		} else {
			addr, err = m.capiAddress(ctx, pool)
		}
		var failure *poolFailure
		if errors.As(err, &failure) {
			failures = append(failures, field.Invalid(pools[pool], pool.String(),
				fmt.Sprintf("IP address claim %s: %s", m.claimName(pool), failure.reason)))
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if addr == nil {
			waiting = append(waiting, pool.String())
			continue
		}
		out[pool] = *addr
	}
	if len(failures) > 0 {
		return nil, nil, &RenderError{err: failures.ToAggregate()}
	}
	return out, waiting, nil
}

// ensureClaim gets the claim named name, creating it with build when it
// does not exist. A claim of that name owned by someone else is an error.
func (m *DataManager) ensureClaim(ctx context.Context, claim client.Object, build func()) error {
	key := client.ObjectKeyFromObject(claim)
	err := m.Client.Get(ctx, key, claim)
	switch {
	case apierrors.IsNotFound(err):
		build()
		if err := controllerutil.SetOwnerReference(m.Data, claim, m.Client.Scheme()); err != nil {
			return err
		}
		if err := m.Client.Create(ctx, claim); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create IP claim %s: %w", key, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get IP claim %s: %w", key, err)
	case !ownedBy(claim, m.Data):
		return fmt.Errorf("IP claim %s exists and is not owned by Metal3Data %s", key, m.Data.Name)
	}
	return nil
}

func (m *DataManager) metal3Address(ctx context.Context, pool render.PoolRef) (*render.PoolAddress, error) {
	claim := &ipamv1.IPClaim{ObjectMeta: metav1.ObjectMeta{Namespace: m.Data.Namespace, Name: m.claimName(pool)}}
	if err := m.ensureClaim(ctx, claim, func() {
		claim.Spec.Pool = corev1.ObjectReference{Name: pool.Name, Namespace: m.Data.Namespace}
	}); err != nil {
		return nil, err
	}
	if claim.Status.Address == nil || claim.Status.Address.Name == "" {
		if msg := claim.Status.ErrorMessage; msg != nil && *msg != "" {
			return nil, &poolFailure{reason: *msg}
		}
		return nil, nil
	}
	address := &ipamv1.IPAddress{}
	key := types.NamespacedName{Namespace: m.Data.Namespace, Name: claim.Status.Address.Name}
	if err := m.Client.Get(ctx, key, address); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get IPAddress %s: %w", key, err)
	}
	out := &render.PoolAddress{Address: string(address.Spec.Address), Prefix: address.Spec.Prefix}
	if address.Spec.Gateway != nil {
		out.Gateway = string(*address.Spec.Gateway)
	}
	for _, dns := range address.Spec.DNSServers {
		out.DNSServers = append(out.DNSServers, string(dns))
	}
	return out, nil
}

func (m *DataManager) capiAddress(ctx context.Context, pool render.PoolRef) (*render.PoolAddress, error) {
	claim := &capipamv1.IPAddressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: m.Data.Namespace, Name: m.claimName(pool)}}
	if err := m.ensureClaim(ctx, claim, func() {
		claim.Spec.PoolRef = capipamv1.IPPoolReference{APIGroup: pool.APIGroup, Kind: pool.Kind, Name: pool.Name}
		if m.Machine != nil {
			claim.Spec.ClusterName = m.Machine.Spec.ClusterName
		}
	}); err != nil {
		return nil, err
	}
	if claim.Status.AddressRef.Name == "" {
		// PoolNotReady may pass (a pool being created or paused); an
		// exhausted pool or a failed allocation needs someone to act.
		for _, cond := range claim.Status.Conditions {
			if cond.Type == capipamv1.IPAddressClaimReadyCondition && cond.Status == metav1.ConditionFalse &&
				(cond.Reason == capipamv1.IPAddressClaimReadyPoolExhaustedReason || cond.Reason == capipamv1.IPAddressClaimReadyAllocationFailedReason) {
				return nil, &poolFailure{reason: cond.Reason + ": " + cond.Message}
			}
		}
		return nil, nil
	}
	address := &capipamv1.IPAddress{}
	key := types.NamespacedName{Namespace: m.Data.Namespace, Name: claim.Status.AddressRef.Name}
	if err := m.Client.Get(ctx, key, address); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get IPAddress %s: %w", key, err)
	}
	out := &render.PoolAddress{Address: address.Spec.Address, Gateway: address.Spec.Gateway}
	if address.Spec.Prefix != nil {
		out.Prefix = int(*address.Spec.Prefix)
	}
	return out, nil
}

// writeSecret is how to write a Secret the data's status references as
// recorded: read first once it was written (re-rendering finds it), create
// first before.
func (m *DataManager) writeSecret(recorded *infrav1.SecretReference) func(context.Context, hostaccess.HostAccess, *hostbinding.Host,
	metav1.Object, string, string, map[string][]byte) (*corev1.SecretReference, error) {
	if recorded == nil {
		return hostbinding.WriteNewSecret
	}
	return hostbinding.WriteSecret
}
