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

package controllers

import (
	"context"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostaccess"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// How events reach a Metal3Machine: besides its own, its Machine's and its
// Cluster's, those of its bootstrap data, its data claim and Metal3Data,
// its identity's Secret, and its host, through the watch the identity
// cache runs on the hosts' cluster for each identity.

// hostWatcher is the Metal3Machine controller's watch on the hosts of id.
// The identity cache starts it once per connection of the identity, on
// the cluster where the hosts are; the in-cluster identity's runs on the
// manager's cache.
func (r *Metal3MachineReconciler) hostWatcher(id identity.Identity) hostaccess.Watcher {
	return modeHostWatcher("metal3machine", r.controller, id, r.hostToMetal3Machine(id.Key))
}

// modeHostWatcher is a controller's watch on what stands for the hosts in
// id's host mode: its BareMetalHosts, or in HostClaim mode its HostClaims,
// named "<controller>-hosts" or "<controller>-hostclaims", each event
// mapped to requests by toRequests.
func modeHostWatcher(controllerName string, c controller.Controller, id identity.Identity, toRequests handler.MapFunc) hostaccess.Watcher {
	name, kind := controllerName+"-hosts", client.Object(&bmov1alpha1.BareMetalHost{})
	if id.UsesHostClaims() {
		name, kind = controllerName+"-hostclaims", &bmov1alpha1.HostClaim{}
	}
	return hostaccess.NewWatcher(hostaccess.WatcherOptions{
		Name:         name,
		Watcher:      c,
		Kind:         kind,
		EventHandler: handler.EnqueueRequestsFromMapFunc(toRequests),
	})
}

// hostToMetal3Machine maps a host (or HostClaim) seen through key to the
// Metal3Machine its consumerRef names, but only if that machine records
// using key: a host never wakes another tenant's machine, even one with
// the same name.
func (r *Metal3MachineReconciler) hostToMetal3Machine(key identity.Key) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []ctrl.Request {
		m3m := hostConsumer(ctx, r.Client, key, obj)
		if m3m == nil {
			return nil
		}
		return []ctrl.Request{{NamespacedName: client.ObjectKeyFromObject(m3m)}}
	}
}

// hostConsumer is the Metal3Machine obj's consumerRef names, if obj is a
// host (or HostClaim) seen through key and that machine records using key:
// how every controller's host watch keeps a host from waking another
// tenant's objects, even ones with the same names.
func hostConsumer(ctx context.Context, c client.Reader, key identity.Key, obj client.Object) *infrav1.Metal3Machine {
	var ref *corev1.ObjectReference
	switch host := obj.(type) {
	case *bmov1alpha1.BareMetalHost:
		ref = host.Spec.ConsumerRef
	case *bmov1alpha1.HostClaim:
		ref = host.Spec.ConsumerRef
	default:
		return nil
	}
	if ref == nil || ref.Kind != "Metal3Machine" || ref.Name == "" {
		return nil
	}
	name := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	if name.Namespace == "" {
		name.Namespace = obj.GetNamespace()
	}
	m3m := &infrav1.Metal3Machine{}
	if err := c.Get(ctx, name, m3m); err != nil {
		return nil
	}
	// Connections, not keys, are compared: a connection serves every
	// identity on its Secret and context, and its watch was registered by
	// whichever came first.
	if used, ok := identity.KeyFromStatus(m3m.Status.Identity, m3m.Namespace); !ok || !used.SameConnection(key) {
		return nil
	}
	return m3m
}

// secretToMachines maps an identity Secret to the Metal3Machines that use
// it, in every namespace: a Metal3ClusterIdentity's Secret is used from
// other namespaces than its own.
func (r *Metal3MachineReconciler) secretToMachines(ctx context.Context, secret types.NamespacedName) []ctrl.Request {
	machines := &infrav1.Metal3MachineList{}
	if err := r.Client.List(ctx, machines,
		client.MatchingFields{identity.UsedIndex: identity.UsedSecret(secret)}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List the Metal3Machines using an identity Secret", "secret", secret)
		return nil
	}
	requests := make([]ctrl.Request, 0, len(machines.Items))
	for _, m := range machines.Items {
		requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&m)})
	}
	return requests
}

// clusterIdentityToMachines maps a Metal3ClusterIdentity or a namespace to
// the Metal3Machines using cluster identities, through their own
// identityRef or, as recorded, their cluster's.
func (r *Metal3MachineReconciler) clusterIdentityToMachines(ctx context.Context, value, namespace string) []ctrl.Request {
	return listIdentityUsers(ctx, r.Client, func() client.ObjectList { return &infrav1.Metal3MachineList{} },
		value, namespace, r.WatchFilterValue)
}

// bootstrapSecretToMetal3Machines maps a bootstrap data Secret to the
// Metal3Machines of the Machines that use it.
func (r *Metal3MachineReconciler) bootstrapSecretToMetal3Machines(ctx context.Context, obj client.Object) []ctrl.Request {
	clusterName := obj.GetLabels()[clusterv1.ClusterNameLabel]
	if clusterName == "" {
		return nil
	}
	machines := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(obj.GetNamespace()),
		client.MatchingLabels{clusterv1.ClusterNameLabel: clusterName}); err != nil {
		return nil
	}
	var requests []ctrl.Request
	for _, machine := range machines.Items {
		ref := machine.Spec.InfrastructureRef
		if ptr.Deref(machine.Spec.Bootstrap.DataSecretName, "") == obj.GetName() && ref.Kind == "Metal3Machine" {
			requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: machine.Namespace, Name: ref.Name}})
		}
	}
	return requests
}

// dataToMetal3Machine maps a Metal3Data to the Metal3Machine controlling
// its claim.
func (r *Metal3MachineReconciler) dataToMetal3Machine(ctx context.Context, obj client.Object) []ctrl.Request {
	data, ok := obj.(*infrav1.Metal3Data)
	if !ok || data.Spec.Claim.Name == "" {
		return nil
	}
	claim := &infrav1.Metal3DataClaim{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: data.Namespace, Name: data.Spec.Claim.Name}, claim); err != nil {
		return nil
	}
	owner := metav1.GetControllerOf(claim)
	if owner == nil || owner.Kind != "Metal3Machine" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: claim.Namespace, Name: owner.Name}}}
}

// metal3ClusterToMachines maps a Metal3Cluster to the Metal3Machines of its
// Cluster, which CAPI labels with the Cluster's name.
func (r *Metal3MachineReconciler) metal3ClusterToMachines(ctx context.Context, obj client.Object) []ctrl.Request {
	clusterName := obj.GetLabels()[clusterv1.ClusterNameLabel]
	if clusterName == "" {
		return nil
	}
	machines := &infrav1.Metal3MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(obj.GetNamespace()),
		client.MatchingLabels{clusterv1.ClusterNameLabel: clusterName}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List the Metal3Machines of a Metal3Cluster", "metal3Cluster", klog.KObj(obj))
		return nil
	}
	requests := make([]ctrl.Request, 0, len(machines.Items))
	for _, m := range machines.Items {
		requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&m)})
	}
	return requests
}
