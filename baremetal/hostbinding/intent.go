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

package hostbinding

import (
	"context"
	"errors"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// The host a machine intends to take. The machine's host annotation is
// written with its finalizer, in the machine's first write, before the
// host is claimed: one write of the machine where recording the claim
// afterwards took a second one, on the kind whose requests bound how fast
// many machines associate (docs/performance.md). Until the status written
// with the claim confirms it (infrav1.HostRecordConfirmed), the annotation
// is an intent:
//   - a reconcile that crashed before the claim resumes with that host,
//     if the pool still offers it to the machine;
//   - when another consumer took it first, the claim goes to the next
//     candidate and the annotation follows (the webhook lets an intent
//     move); a machine left without a candidate drops it;
//   - a machine whose intended host names another consumer (or none) is
//     not missing its host (ErrHostNotFound is for confirmed records
//     only): it binds anew, and is let go on deletion without a release;
//   - a claim that landed before a crash is found by its consumerRef, as
//     always, and the annotation is pointed at it.
//
// An intent is only a preference among the hosts the pool offers the
// machine (Choose), so a tenant who writes one gains nothing it could not
// ask for with its hostSelector.

// Intend implements Binding: the host the machine would take now, recorded
// in its host annotation in memory and held for it in this process
// (InFlight), so that concurrent machines intend different hosts. Nothing
// is written; a machine that consumes a host already records that one.
func (m *bmhBinding) Intend(ctx context.Context) error {
	consumed, candidates, err := m.choose(ctx, false)
	switch {
	case errors.Is(err, ErrNoAvailableHost):
		return nil // Bind, which follows, says why
	case err != nil:
		return err
	case consumed != nil:
		m.recordHost(consumed)
		return nil
	}
	for _, candidate := range m.intendedFirst(candidates) {
		if m.InFlight.Hold(m.holdKey(candidate), infrav1.ConsumerID(m.M3Machine), candidate.ResourceVersion) {
			m.recordHost(candidate)
			ctrl.LoggerFrom(ctx).V(1).Info("Intends to take a host", "metal3Machine", klog.KObj(m.M3Machine),
				"host", klog.KObj(candidate))
			return nil
		}
	}
	return nil
}

// intendedFirst is candidates with the host the machine intends to take,
// if it is one of them, first.
func (m *bmhBinding) intendedFirst(candidates []*bmov1alpha1.BareMetalHost) []*bmov1alpha1.BareMetalHost {
	key, ok := recordedKey(m.M3Machine.Annotations[infrav1.HostAnnotation])
	if !ok || infrav1.HostRecordConfirmed(m.M3Machine) {
		return candidates
	}
	for i, candidate := range candidates {
		if candidate.Namespace == key.Namespace && candidate.Name == key.Name {
			ordered := make([]*bmov1alpha1.BareMetalHost, 0, len(candidates))
			ordered = append(ordered, candidate)
			ordered = append(ordered, candidates[:i]...)
			return append(ordered, candidates[i+1:]...)
		}
	}
	return candidates
}

// holdKey names host among the hosts this process's machines are taking.
func (m *bmhBinding) holdKey(host *bmov1alpha1.BareMetalHost) string {
	return m.Access.Key().String() + "/" + host.Namespace + "/" + host.Name
}

// dropIntent removes the machine's host annotation while it is only an
// intent: the host went to someone else and no other is available. Left,
// it would keep the machine's identity and host mode fixed, and clusterctl
// move blocked, for a host it does not have.
func (m *bmhBinding) dropIntent() {
	if !infrav1.HostRecordConfirmed(m.M3Machine) {
		delete(m.M3Machine.Annotations, infrav1.HostAnnotation)
	}
}

// recordAssociation notes host on the machine: its annotation, and the
// Secrets it was given in the status.
func (m *bmhBinding) recordAssociation(host *bmov1alpha1.BareMetalHost) {
	m.recordHost(host)
	m.M3Machine.Status.UserData = host.Spec.UserData
	m.M3Machine.Status.MetaData = host.Spec.MetaData
	m.M3Machine.Status.NetworkData = host.Spec.NetworkData
}

// recordHost sets the machine's host annotation to host, unless it records
// a confirmed one already, which never changes (the webhook refuses it; the
// host's consumerRef, not the annotation, says which host is the
// machine's). Confirmation is read from the machine as it is: a reconcile
// records its host before it writes the status that confirms it.
func (m *bmhBinding) recordHost(host *bmov1alpha1.BareMetalHost) {
	value := host.Namespace + "/" + host.Name
	if infrav1.HostRecordConfirmed(m.M3Machine) {
		recordOnce(m.M3Machine, infrav1.HostAnnotation, value)
		return
	}
	if m.M3Machine.Annotations == nil {
		m.M3Machine.Annotations = map[string]string{}
	}
	m.M3Machine.Annotations[infrav1.HostAnnotation] = value
}

// recordOnce sets annotation on m3m to value unless it has one already.
func recordOnce(m3m *infrav1.Metal3Machine, annotation, value string) {
	if m3m.Annotations[annotation] != "" {
		return
	}
	if m3m.Annotations == nil {
		m3m.Annotations = map[string]string{}
	}
	m3m.Annotations[annotation] = value
}
