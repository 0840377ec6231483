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

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestIPAMAllocatesAddress proves the IPAM we build is the real thing and runs
// here: it hands an IPClaim an IPAddress from its IPPool, and on the claim's
// deletion releases the address and lets the claim go.
func TestIPAMAllocatesAddress(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(ipamv1.AddToScheme(scheme)).To(Succeed())

	env := Start(t, Options{Scheme: scheme, CRDDirectoryPaths: []string{IPAMCRDPath(t), CAPICRDPath(t)}})
	env.StartIPAM(t)

	ctx := context.Background()
	start, end := netip.MustParseAddr("192.168.111.100"), netip.MustParseAddr("192.168.111.110")
	gateway := ipamv1.IPAddressStr("192.168.111.1")
	dns := []ipamv1.IPAddressStr{"8.8.8.8"}
	pool := &ipamv1.IPPool{
		ObjectMeta: metav1.ObjectMeta{Name: "pool-0", Namespace: "default"},
		Spec: ipamv1.IPPoolSpec{
			// Required by the CRD; IPAddress names are "<namePrefix>-<address>".
			NamePrefix: "pool-0",
			Pools: []ipamv1.Pool{{
				Start: ptr.To(ipamv1.IPAddressStr(start.String())),
				End:   ptr.To(ipamv1.IPAddressStr(end.String())),
			}},
			Prefix:     24,
			Gateway:    &gateway,
			DNSServers: dns,
		},
	}
	g.Expect(env.Client.Create(ctx, pool)).To(Succeed())
	claim := &ipamv1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim-0", Namespace: "default"},
		Spec:       ipamv1.IPClaimSpec{Pool: corev1.ObjectReference{Name: pool.Name}},
	}
	g.Expect(env.Client.Create(ctx, claim)).To(Succeed())

	g.Eventually(func() (*corev1.ObjectReference, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), claim)
		return claim.Status.Address, err
	}).WithTimeout(90*time.Second).WithPolling(250*time.Millisecond).
		ShouldNot(BeNil(), "IPAM should allocate an address for the claim")

	address := &ipamv1.IPAddress{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: claim.Status.Address.Name}, address)).To(Succeed())
	got, err := netip.ParseAddr(string(address.Spec.Address))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Compare(start) >= 0 && got.Compare(end) <= 0).To(BeTrue(), "address %s outside the pool's range", got)
	g.Expect(address.Spec.Prefix).To(Equal(24))
	g.Expect(address.Spec.Gateway).To(HaveValue(Equal(gateway)))
	g.Expect(address.Spec.DNSServers).To(Equal(dns))
	g.Expect(address.Spec.Claim.Name).To(Equal(claim.Name))
	g.Expect(address.Spec.Pool.Name).To(Equal(pool.Name))

	// The claim carries the IPAM's finalizer, so it only disappears once the
	// IPAM has released the address.
	g.Expect(env.Client.Delete(ctx, claim)).To(Succeed())
	for _, obj := range []client.Object{claim, address} {
		g.Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj))
		}).WithTimeout(60*time.Second).WithPolling(250*time.Millisecond).
			Should(BeTrue(), "IPAM should release %T %s", obj, obj.GetName())
	}
}
