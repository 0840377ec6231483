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

package env

import (
	"context"
	"fmt"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// AddHosts creates count hosts named <prefix>-<i> with their BMC
// credentials in namespace of c; the Bare Metal Operator running there
// registers them and makes them available.
func AddHosts(ctx context.Context, c client.Client, namespace, prefix string, count int) error {
	return testenv.RegisterHosts(ctx, c, namespace, prefix, count)
}

// AddClaimPool makes hostNamespace of hosts (the pool, or a management
// cluster for HostClaim mode without identityRef) a pool of count hosts
// open to HostClaims from tenantNamespace there, which a HostDeployPolicy
// admits by name, and starts the HostClaim binder on hosts if it is not
// running yet.
func (e *Environment) AddClaimPool(ctx context.Context, t testenv.T, hosts *testenv.Env, hostNamespace, tenantNamespace string, count int) error {
	t.Helper()
	e.startBinder(hosts)
	if err := CreateNamespace(ctx, hosts.Client, hostNamespace); err != nil {
		return err
	}
	policy := &bmov1alpha1.HostDeployPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: hostNamespace, Name: "tenants"},
		Spec: bmov1alpha1.HostDeployPolicySpec{
			HostClaimNamespaces: &bmov1alpha1.HostClaimNamespaces{Names: []string{tenantNamespace}},
		},
	}
	if err := hosts.Client.Create(ctx, policy); err != nil {
		return fmt.Errorf("create HostDeployPolicy %s/%s: %w", hostNamespace, policy.Name, err)
	}
	return AddHosts(ctx, hosts.Client, hostNamespace, hostNamespace, count)
}

// ClaimTenantKubeconfig returns a kubeconfig for the ServiceAccount
// serviceAccount in namespace of the pool, which may only touch HostClaims,
// their Secrets and HardwareData there (testenv.HostClaimTenantRules): the
// identity of HostClaim mode.
func (e *Environment) ClaimTenantKubeconfig(t testenv.T, namespace, serviceAccount string) []byte {
	t.Helper()
	return e.Pool.ServiceAccountKubeconfig(t, namespace, serviceAccount, 24*time.Hour, testenv.HostClaimTenantRules()...)
}

// startBinder runs the HostClaim binder on hosts for as long as the
// environment, once.
func (e *Environment) startBinder(hosts *testenv.Env) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.binders[hosts] {
		return
	}
	hosts.StartHostClaimBinder(e.t)
	e.binders[hosts] = true
}

// AddPool makes namespace a pool of count hosts on the pool API server and
// returns a kubeconfig for the ServiceAccount serviceAccount there, which
// may do only what the provider needs (testenv.HostProviderRules): the
// identity a pool admin hands out.
func (e *Environment) AddPool(ctx context.Context, t testenv.T, namespace, serviceAccount string, count int) ([]byte, error) {
	t.Helper()
	if err := CreateNamespace(ctx, e.Pool.Client, namespace); err != nil {
		return nil, err
	}
	if err := AddHosts(ctx, e.Pool.Client, namespace, namespace, count); err != nil {
		return nil, err
	}
	return e.Pool.ServiceAccountKubeconfig(t, namespace, serviceAccount, 24*time.Hour, testenv.HostProviderRules()...), nil
}

// ClusterSpec is a workload cluster as a tenant declares it, without
// kubeadm: its machines take their bootstrap data from a Secret.
type ClusterSpec struct {
	Namespace, Name string
	// Identity is the pool kubeconfig of the Metal3Cluster's identityRef;
	// empty: the hosts are in the cluster's namespace.
	Identity []byte
	// WorkerIdentity, when set, is the kubeconfig the workers'
	// Metal3MachineTemplate names in its own identityRef.
	WorkerIdentity []byte
	// Workers is the MachineDeployment's replica count.
	Workers int32
	// HostMode is the Metal3Cluster's spec.hostMode; empty: the default,
	// BareMetalHost mode.
	HostMode infrav1.HostMode
	// IPPools each give every machine's metadata an address, under the
	// key ip-<i>.
	IPPools []infrav1.FromPool
	// ClusterIdentity, when set, is the Metal3ClusterIdentity the
	// Metal3Cluster's identityRef names (instead of Identity).
	ClusterIdentity string
}

// Image is what every machine of these clusters is provisioned with; the
// Bare Metal Operator's test mode does not download it.
var Image = infrav1.Image{
	URL: "http://172.22.0.1/images/node.qcow2", Checksum: ptr.To("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
	ChecksumType: "sha256", DiskFormat: "qcow2",
}

// CreateCluster creates spec's cluster on m: its Secrets (identities, the
// workload kubeconfig Cluster API reaches nodes with, bootstrap data), the
// Cluster and Metal3Cluster, one control-plane Machine and a
// MachineDeployment of workers, all through one Metal3DataTemplate.
func (m *Management) CreateCluster(ctx context.Context, t testenv.T, workload *testenv.Env, spec ClusterSpec) error {
	t.Helper()
	ns, name := spec.Namespace, spec.Name
	labels := map[string]string{clusterv1.ClusterNameLabel: name}
	if err := m.CreateWorkloadKubeconfig(ctx, workload, ns, name); err != nil {
		return err
	}
	objects := []client.Object{
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-bootstrap", Labels: movable(labels)},
			Data:       map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
		},
	}
	m3c := &infrav1.Metal3Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: infrav1.Metal3ClusterSpec{
			ControlPlaneEndpoint: infrav1.APIEndpoint{Host: "192.168.111.249", Port: 6443},
			CloudProviderEnabled: ptr.To(false),
			HostMode:             spec.HostMode,
		},
	}
	if len(spec.Identity) > 0 {
		objects = append(objects, testenv.IdentitySecret(ns, name+"-pool-identity", spec.Identity))
		m3c.Spec.IdentityRef = &infrav1.IdentityRef{Name: name + "-pool-identity"}
	}
	if spec.ClusterIdentity != "" {
		m3c.Spec.IdentityRef = &infrav1.IdentityRef{Kind: infrav1.IdentityKindMetal3ClusterIdentity, Name: spec.ClusterIdentity}
	}
	machineSpec := infrav1.Metal3MachineSpec{Image: Image, DataTemplate: &infrav1.Metal3ObjectRef{Name: name + "-nodes"}}
	workerSpec := *machineSpec.DeepCopy()
	if len(spec.WorkerIdentity) > 0 {
		objects = append(objects, testenv.IdentitySecret(ns, name+"-workers-identity", spec.WorkerIdentity))
		workerSpec.IdentityRef = &infrav1.IdentityRef{Name: name + "-workers-identity"}
	}
	infraRef := func(kind, ref string) clusterv1.ContractVersionedObjectReference {
		return clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: kind, Name: ref}
	}
	controlPlaneLabels := map[string]string{clusterv1.ClusterNameLabel: name, clusterv1.MachineControlPlaneLabel: ""}
	objects = append(objects,
		&clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       clusterv1.ClusterSpec{InfrastructureRef: infraRef("Metal3Cluster", name)},
		},
		m3c,
		&infrav1.Metal3DataTemplate{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-nodes"},
			Spec: infrav1.Metal3DataTemplateSpec{ClusterName: name, MetaData: &infrav1.MetaData{
				ObjectNames:         []infrav1.MetaDataObjectName{{Key: "name", Object: "machine"}},
				IPAddressesFromPool: spec.IPPools,
			}},
		},
		&infrav1.Metal3MachineTemplate{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-workers"},
			Spec:       infrav1.Metal3MachineTemplateSpec{Template: infrav1.Metal3MachineTemplateResource{Spec: workerSpec}},
		},
		// KubeadmControlPlane needs a live control plane (etcd, the API
		// server's pods): the control plane is a plain Machine with the
		// control-plane label, as Cluster API allows.
		&infrav1.Metal3Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-control-plane-0", Labels: controlPlaneLabels},
			Spec:       machineSpec,
		},
		&clusterv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-control-plane-0", Labels: controlPlaneLabels},
			Spec: clusterv1.MachineSpec{
				ClusterName:       name,
				Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To(name + "-bootstrap")},
				InfrastructureRef: infraRef("Metal3Machine", name+"-control-plane-0"),
			},
		},
		&clusterv1.MachineDeployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-workers"},
			Spec: clusterv1.MachineDeploymentSpec{
				ClusterName: name,
				Replicas:    ptr.To(spec.Workers),
				Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"nodepool": name + "-workers"}},
				Template: clusterv1.MachineTemplateSpec{
					ObjectMeta: clusterv1.ObjectMeta{Labels: map[string]string{"nodepool": name + "-workers"}},
					Spec: clusterv1.MachineSpec{
						ClusterName:       name,
						Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To(name + "-bootstrap")},
						InfrastructureRef: infraRef("Metal3MachineTemplate", name+"-workers"),
					},
				},
			},
		},
	)
	for _, obj := range objects {
		if err := m.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("create %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

// CreateWorkloadKubeconfig creates the Secret <name>-kubeconfig through
// which Cluster API (and the provider, for Nodes' providerIDs) reach the
// cluster's nodes: an admin of workload. Create it before the cluster's
// infrastructure is ready, so that Cluster API connects at once.
func (m *Management) CreateWorkloadKubeconfig(ctx context.Context, workload *testenv.Env, namespace, name string) error {
	admin, err := workload.AddUser(envtest.User{Name: "cluster-admin-" + namespace + "-" + name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name + "-kubeconfig",
			Labels: movable(map[string]string{clusterv1.ClusterNameLabel: name}),
		},
		Type: clusterv1.ClusterSecretType, Data: map[string][]byte{"value": kubeconfig},
	}
	if err := m.Client.Create(ctx, secret); err != nil {
		return fmt.Errorf("create the workload kubeconfig Secret %s/%s: %w", namespace, secret.Name, err)
	}
	return nil
}

// movable adds clusterctl's move label to labels: Secrets that no Cluster
// API object owns (a bootstrap provider or Cluster API would own these)
// move only with it.
func movable(labels map[string]string) map[string]string {
	out := map[string]string{clusterctlv1.ClusterctlMoveLabel: ""}
	for k, v := range labels {
		out[k] = v
	}
	return out
}
