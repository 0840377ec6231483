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
	"fmt"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// What a bound host is given to provision: the machine's image or custom
// deploy, and its user data, metadata and network data as Secrets next to
// the host.

// Provision implements Binding: it writes the user data next to the host
// and gives the host its image and Secrets in one update guarded by the
// resourceVersion.
func (m *bmhBinding) Provision(ctx context.Context, view *Host, rendered RenderedSecrets) error {
	host := view.bmh
	refs, err := m.writeHostSecrets(ctx, view)
	if err != nil {
		return err
	}
	if rendered.MetaData != nil {
		refs.metaData = rendered.MetaData
	}
	if rendered.NetworkData != nil {
		refs.networkData = rendered.NetworkData
	}
	updated := host.DeepCopy()
	m.setProvisioningSpec(updated, refs)
	if err := m.patchHost(ctx, host, updated); err != nil {
		return err
	}
	*host = *updated
	*view = *hostView(host)
	m.recordAssociation(host)
	return nil
}

// hostSecrets are the Secrets written next to a host, by purpose.
type hostSecrets struct {
	userData, metaData, networkData *corev1.SecretReference
}

// secretData is the data of one Secret to write next to a host.
type secretData struct {
	purpose string
	data    map[string][]byte
}

// writeHostSecrets copies user data (the machine's own, else the bootstrap
// provider's) and any plain metadata/network data Secrets next to host.
func (m *machineSide) writeHostSecrets(ctx context.Context, host *Host) (hostSecrets, error) {
	secrets, err := m.hostSecretData(ctx)
	if err != nil {
		return hostSecrets{}, err
	}
	return m.writeSecrets(ctx, host, secrets)
}

// hostSecretData reads what writeHostSecrets writes: the user data, and
// the machine's plain metadata and network data Secrets if it names any.
func (m *machineSide) hostSecretData(ctx context.Context) ([]secretData, error) {
	userData, err := m.userData(ctx)
	if err != nil {
		return nil, err
	}
	secrets := []secretData{{purpose: pool.UserDataPurpose, data: userData}}
	for _, s := range []struct {
		ref     *corev1.SecretReference
		purpose string
	}{
		{m.M3Machine.Spec.MetaData, pool.MetaDataPurpose},
		{m.M3Machine.Spec.NetworkData, pool.NetworkDataPurpose},
	} {
		if s.ref == nil {
			continue
		}
		data, err := m.localSecretData(ctx, s.ref.Name)
		if err != nil {
			return nil, err
		}
		secrets = append(secrets, secretData{purpose: s.purpose, data: data})
	}
	return secrets, nil
}

// writeSecrets writes secrets next to host and returns their references.
func (m *machineSide) writeSecrets(ctx context.Context, host *Host, secrets []secretData) (hostSecrets, error) {
	var refs hostSecrets
	for _, s := range secrets {
		ref, err := WriteNewSecret(ctx, m.Access, host, m.M3Machine, "Metal3Machine", s.purpose, s.data)
		if err != nil {
			return hostSecrets{}, err
		}
		refs.set(s.purpose, ref)
	}
	return refs, nil
}

// secretRefsIn are the references writeSecrets returns for secrets
// written in namespace, known before they are written: the names depend
// on the machine and the purpose only.
func (m *machineSide) secretRefsIn(namespace string, secrets []secretData) hostSecrets {
	var refs hostSecrets
	for _, s := range secrets {
		refs.set(s.purpose, &corev1.SecretReference{Namespace: namespace, Name: hostSecretName(m.M3Machine, s.purpose)})
	}
	return refs
}

func (refs *hostSecrets) set(purpose string, ref *corev1.SecretReference) {
	switch purpose {
	case pool.UserDataPurpose:
		refs.userData = ref
	case pool.MetaDataPurpose:
		refs.metaData = ref
	case pool.NetworkDataPurpose:
		refs.networkData = ref
	}
}

// userData is the data of the machine's userData Secret, else of the
// bootstrap Secret: "value" and "format", which the Bare Metal Operator reads.
func (m *machineSide) userData(ctx context.Context) (map[string][]byte, error) {
	name := ""
	switch {
	case m.M3Machine.Spec.UserData != nil:
		name = m.M3Machine.Spec.UserData.Name
	case m.Machine.Spec.Bootstrap.DataSecretName != nil:
		name = *m.Machine.Spec.Bootstrap.DataSecretName
	default:
		return nil, errors.New("the Machine has no bootstrap data yet")
	}
	return m.localSecretData(ctx, name)
}

// localSecretData reads a Secret of the machine's namespace: a machine
// never reads another namespace's Secrets.
func (m *machineSide) localSecretData(ctx context.Context, name string) (map[string][]byte, error) {
	secret := &corev1.Secret{}
	if err := m.Client.Get(ctx, types.NamespacedName{Namespace: m.M3Machine.Namespace, Name: name}, secret); err != nil {
		return nil, fmt.Errorf("read Secret %s/%s: %w", m.M3Machine.Namespace, name, err)
	}
	return secret.Data, nil
}

// setProvisioningSpec asks the host for the machine's image or custom
// deploy and points it at the Secrets next to it.
func (m *bmhBinding) setProvisioningSpec(host *bmov1alpha1.BareMetalHost, refs hostSecrets) {
	spec := m.M3Machine.Spec
	host.Spec.Online = true
	if image := m.image(); image != nil {
		host.Spec.Image = image
	}
	if spec.CustomDeploy.Method != "" {
		host.Spec.CustomDeploy = &bmov1alpha1.CustomDeploy{Method: spec.CustomDeploy.Method}
	}
	host.Spec.UserData = refs.userData
	if refs.metaData != nil {
		host.Spec.MetaData = refs.metaData
	}
	if refs.networkData != nil {
		host.Spec.NetworkData = refs.networkData
	}
	setCleaningMode(host, spec.AutomatedCleaningMode)
}

// image is the machine's image as the Bare Metal Operator reads it; nil
// for a machine that provisions with a custom deploy only.
func (m *machineSide) image() *bmov1alpha1.Image {
	spec := m.M3Machine.Spec
	if spec.Image.IsZero() {
		return nil
	}
	image := &bmov1alpha1.Image{
		URL:          spec.Image.URL,
		Checksum:     ptr.Deref(spec.Image.Checksum, ""),
		ChecksumType: bmov1alpha1.ChecksumType(spec.Image.ChecksumType),
	}
	if spec.Image.DiskFormat != "" {
		image.DiskFormat = ptr.To(spec.Image.DiskFormat)
	}
	return image
}

// deleteHostSecrets removes every Secret this machine may have written in
// namespace. Errors are left for the next attempt: the Secrets are also
// owned by the host, so they cannot outlive it.
func (m *machineSide) deleteHostSecrets(ctx context.Context, namespace string) {
	for _, purpose := range []string{pool.UserDataPurpose, pool.MetaDataPurpose, pool.NetworkDataPurpose} {
		_ = DeleteSecret(ctx, m.Access, namespace, m.M3Machine, purpose)
	}
}
