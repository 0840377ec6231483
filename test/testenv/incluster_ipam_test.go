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

package testenv

import (
	"context"
	"net/netip"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestInClusterIPAMAllocatesAddress proves the in-cluster IPAM provider we
// build runs here and speaks the IPAM API of our CAPI CRDs (v1beta2): it serves
// a claim from an InClusterIPPool and releases the address with the claim.
func TestInClusterIPAMAllocatesAddress(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(clusterv1.AddToScheme(scheme)).To(Succeed())
	g.Expect(ipamv1.AddToScheme(scheme)).To(Succeed())

	env := Start(t, Options{Scheme: scheme, CRDDirectoryPaths: []string{CAPICRDPath(t), InClusterIPAMCRDPath(t)}})
	env.StartInClusterIPAM(t)
	ctx := context.Background()

	// A claim naming a cluster is only served once that Cluster exists and is
	// not paused, so the cluster comes first.
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-0", Namespace: "default"},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "Metal3Cluster", Name: "cluster-0",
		}},
	}
	g.Expect(env.Client.Create(ctx, cluster)).To(Succeed())

	// Unstructured, so the provider's API types stay out of our go.mod.
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2",
		"kind":       "InClusterIPPool",
		"metadata":   map[string]any{"name": "pool-0", "namespace": "default"},
		"spec": map[string]any{
			"addresses": []any{"192.168.111.100-192.168.111.110"},
			"prefix":    int64(24),
			"gateway":   "192.168.111.1",
		},
	}}
	g.Expect(env.Client.Create(ctx, pool)).To(Succeed())

	claim := &ipamv1.IPAddressClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim-0", Namespace: "default"},
		Spec: ipamv1.IPAddressClaimSpec{
			ClusterName: cluster.Name,
			PoolRef: ipamv1.IPPoolReference{
				APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: pool.GetName(),
			},
		},
	}
	g.Expect(env.Client.Create(ctx, claim)).To(Succeed())

	g.Eventually(func() (string, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), claim)
		return claim.Status.AddressRef.Name, err
	}).WithTimeout(60*time.Second).WithPolling(250*time.Millisecond).
		ShouldNot(BeEmpty(), "the provider should allocate an address for the claim")

	address := &ipamv1.IPAddress{}
	addressKey := client.ObjectKey{Namespace: claim.Namespace, Name: claim.Status.AddressRef.Name}
	g.Expect(env.Client.Get(ctx, addressKey, address)).To(Succeed())
	ip, err := netip.ParseAddr(address.Spec.Address)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ip.Compare(netip.MustParseAddr("192.168.111.100"))).To(BeNumerically(">=", 0), "address %s below the pool", ip)
	g.Expect(ip.Compare(netip.MustParseAddr("192.168.111.110"))).To(BeNumerically("<=", 0), "address %s above the pool", ip)
	g.Expect(address.Spec.Prefix).To(HaveValue(BeEquivalentTo(24)))
	g.Expect(address.Spec.Gateway).To(Equal("192.168.111.1"))
	g.Expect(address.Spec.ClaimRef.Name).To(Equal(claim.Name))

	g.Expect(env.Client.Delete(ctx, claim)).To(Succeed())
	for _, obj := range []client.Object{claim, address} {
		g.Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj))
		}).WithTimeout(60*time.Second).WithPolling(250*time.Millisecond).
			Should(BeTrue(), "the provider should release %T %s with the claim", obj, obj.GetName())
	}
}
