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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
)

// A machine with a dataTemplate is provisioned in two steps. Rendering
// needs the host (its NICs, labels and annotations), so the host is first
// claimed with only a consumerRef (hostbinding.Binding.Bind); the machine
// then claims its data here, and once the Metal3Data has written its
// Secrets next to the host, the host is given its image, user data,
// metadata and network data in one update (Binding.Provision).

// MachineManager handles the data of one Metal3Machine: its
// Metal3DataClaim and the Metal3Data rendered for it. Its host is the
// hostbinding.Binding's business.
type MachineManager struct {
	// Client reads and writes the management cluster.
	Client    client.Client
	Cluster   *clusterv1.Cluster
	M3Machine *infrav1.Metal3Machine
}

// RenderedSecrets are the Secrets data wrote next to the host.
func RenderedSecrets(data *infrav1.Metal3Data) hostbinding.RenderedSecrets {
	var rendered hostbinding.RenderedSecrets
	if s := data.Status.MetaData; s != nil {
		rendered.MetaData = &corev1.SecretReference{Namespace: s.Namespace, Name: s.Name}
	}
	if s := data.Status.NetworkData; s != nil {
		rendered.NetworkData = &corev1.SecretReference{Namespace: s.Namespace, Name: s.Name}
	}
	return rendered
}

var (
	// ErrDataTemplateNotFound: the machine's dataTemplate does not exist.
	ErrDataTemplateNotFound = errors.New("Metal3DataTemplate not found")
	// ErrDataNotReady: the machine's Metal3Data is not rendered yet.
	ErrDataNotReady = errors.New("rendered data not ready")
	// ErrDataFailed: the machine's Metal3Data cannot be rendered; the error
	// carries the message naming the template field.
	ErrDataFailed = errors.New("rendering the machine's data failed")
)

// dataClaimName is the name of the machine's Metal3DataClaim: the machine's
// own, so a claim names its machine, as upstream does.
func (m *MachineManager) dataClaimName() string { return m.M3Machine.Name }

// EnsureDataClaim creates the machine's Metal3DataClaim on its dataTemplate,
// owned by the machine, unless it exists. A claim of that name owned by
// another object is an error: it is never taken over.
func (m *MachineManager) EnsureDataClaim(ctx context.Context) (*infrav1.Metal3DataClaim, error) {
	ref := m.M3Machine.Spec.DataTemplate
	templateKey := types.NamespacedName{Namespace: m.M3Machine.Namespace, Name: ref.Name}
	template := &infrav1.Metal3DataTemplate{}
	if err := m.Client.Get(ctx, templateKey, template); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: spec.dataTemplate names %s", ErrDataTemplateNotFound, templateKey)
		}
		return nil, fmt.Errorf("get Metal3DataTemplate %s: %w", templateKey, err)
	}

	claim := &infrav1.Metal3DataClaim{}
	key := types.NamespacedName{Namespace: m.M3Machine.Namespace, Name: m.dataClaimName()}
	err := m.Client.Get(ctx, key, claim)
	switch {
	case err == nil:
		if !metav1.IsControlledBy(claim, m.M3Machine) {
			return nil, fmt.Errorf("Metal3DataClaim %s exists and is not owned by this Metal3Machine", key)
		}
		return claim, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get Metal3DataClaim %s: %w", key, err)
	}
	claim = &infrav1.Metal3DataClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{clusterv1.ClusterNameLabel: m.Cluster.Name},
		},
		Spec: infrav1.Metal3DataClaimSpec{
			Template: &infrav1.Metal3ObjectRef{Namespace: template.Namespace, Name: template.Name},
		},
	}
	if err := controllerutil.SetControllerReference(m.M3Machine, claim, m.Client.Scheme()); err != nil {
		return nil, err
	}
	if err := m.Client.Create(ctx, claim); err != nil {
		return nil, fmt.Errorf("create Metal3DataClaim %s: %w", key, err)
	}
	return claim, nil
}

// RenderedData returns the machine's Metal3Data once it has written its
// Secrets next to host, and records it in the machine's status. Until then
// it returns an error wrapping ErrDataNotReady (or ErrDataFailed, with the
// message naming the template field).
func (m *MachineManager) RenderedData(ctx context.Context, claim *infrav1.Metal3DataClaim, host *hostbinding.Host) (*infrav1.Metal3Data, error) {
	if msg := claim.Status.ErrorMessage; msg != "" {
		return nil, fmt.Errorf("%w: Metal3DataClaim %s: %s", ErrDataFailed, claim.Name, msg)
	}
	ref := claim.Status.RenderedData
	if ref == nil || ref.Name == "" {
		return nil, fmt.Errorf("%w: Metal3DataTemplate %s has not allocated Metal3DataClaim %s an index yet",
			ErrDataNotReady, refName(claim.Spec.Template), claim.Name)
	}
	data := &infrav1.Metal3Data{}
	key := types.NamespacedName{Namespace: m.M3Machine.Namespace, Name: ref.Name}
	if err := m.Client.Get(ctx, key, data); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: Metal3Data %s not found yet", ErrDataNotReady, key)
		}
		return nil, fmt.Errorf("get Metal3Data %s: %w", key, err)
	}
	m.M3Machine.Status.RenderedData = &infrav1.Metal3ObjectRef{Namespace: data.Namespace, Name: data.Name}
	if !ptr.Deref(data.Status.Ready, false) {
		msg := "not rendered yet"
		if cond := conditions.Get(data, infrav1.Metal3DataSecretsRenderedCondition); cond != nil && cond.Message != "" {
			msg = cond.Message
		}
		return nil, fmt.Errorf("%w: Metal3Data %s: %s", ErrDataNotReady, key, msg)
	}
	// The Secrets must be the ones written next to this host: data rendered
	// for an earlier host of the same name elsewhere would not be readable.
	for _, s := range []*infrav1.SecretReference{data.Status.MetaData, data.Status.NetworkData} {
		if s != nil && s.Namespace != host.Namespace {
			return nil, fmt.Errorf("%w: Metal3Data %s wrote its Secrets in namespace %s, not next to host %s/%s",
				ErrDataNotReady, key, s.Namespace, host.Namespace, host.Name)
		}
	}
	return data, nil
}

// ReleaseDataClaim deletes the machine's Metal3DataClaim. It returns true
// once the claim is gone: its Metal3Data, the Secrets next to the host and
// the IP address claims go first, through the machine's identity, which the
// machine keeps protected until then.
func (m *MachineManager) ReleaseDataClaim(ctx context.Context) (bool, error) {
	claim := &infrav1.Metal3DataClaim{}
	key := types.NamespacedName{Namespace: m.M3Machine.Namespace, Name: m.dataClaimName()}
	if err := m.Client.Get(ctx, key, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("get Metal3DataClaim %s: %w", key, err)
	}
	if !metav1.IsControlledBy(claim, m.M3Machine) {
		return true, nil
	}
	// Upstream CAPM3's Metal3Machine controller put its own finalizer on
	// the claims it created and removed it after their deletion; nothing
	// else would, and the claim would never go.
	if controllerutil.ContainsFinalizer(claim, infrav1.Metal3MachineFinalizer) {
		before := claim.DeepCopy()
		controllerutil.RemoveFinalizer(claim, infrav1.Metal3MachineFinalizer)
		if err := m.Client.Patch(ctx, claim, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("remove upstream CAPM3's finalizer from Metal3DataClaim %s: %w", key, err)
		}
	}
	if claim.DeletionTimestamp.IsZero() {
		if err := m.Client.Delete(ctx, claim); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("delete Metal3DataClaim %s: %w", key, err)
		}
	}
	return false, nil
}
