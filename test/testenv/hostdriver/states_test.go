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

package hostdriver

import (
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// settled is a host in state with everything BMO would have written on
// the way there, conditions included, changed by mods.
func settled(state bmov1alpha1.ProvisioningState, mods ...func(*bmov1alpha1.BareMetalHost)) *bmov1alpha1.BareMetalHost {
	bmc := &corev1.SecretReference{Namespace: "ns", Name: "host-bmc"}
	h := &bmov1alpha1.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "host", Generation: 2,
			Finalizers: []string{bmov1alpha1.BareMetalHostFinalizer},
		},
		Spec: bmov1alpha1.BareMetalHostSpec{
			Online: true, Architecture: "x86_64",
			BMC: bmov1alpha1.BMCDetails{Address: "ipmi://192.168.122.1:6230", CredentialsName: "host-bmc"},
		},
		Status: bmov1alpha1.BareMetalHostStatus{
			OperationalStatus: bmov1alpha1.OperationalStatusOK,
			HardwareProfile:   "unknown",
			HardwareDetails:   fixtureHardware(),
			PoweredOn:         true,
			Provisioning: bmov1alpha1.ProvisionStatus{
				State: state, ID: fixtureProvisionerID, BootMode: bmov1alpha1.UEFI,
				RootDeviceHints: &bmov1alpha1.RootDeviceHints{DeviceName: "/dev/sda"},
			},
			GoodCredentials:  bmov1alpha1.CredentialsStatus{Reference: bmc, Version: "7"},
			TriedCredentials: bmov1alpha1.CredentialsStatus{Reference: bmc, Version: "7"},
		},
	}
	for _, mod := range mods {
		mod(h)
	}
	setConditions(h)
	return h
}

func withImage(h *bmov1alpha1.BareMetalHost) {
	h.Spec.Image = &bmov1alpha1.Image{URL: "http://images.example.com/node.qcow2", Checksum: "abc"}
	h.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "Metal3Machine", Namespace: "ns", Name: "machine"}
}

func deployed(h *bmov1alpha1.BareMetalHost) {
	withImage(h)
	h.Status.Provisioning.Image = *h.Spec.Image
}

func annotated(key, value string) func(*bmov1alpha1.BareMetalHost) {
	return func(h *bmov1alpha1.BareMetalHost) { metav1.SetMetaDataAnnotation(&h.ObjectMeta, key, value) }
}

func poweredOff(h *bmov1alpha1.BareMetalHost) { h.Status.PoweredOn = false }

func deleted(h *bmov1alpha1.BareMetalHost) {
	h.DeletionTimestamp = &metav1.Time{Time: now}
}

func fresh(h *bmov1alpha1.BareMetalHost) {
	h.Spec.Architecture = ""
	h.Status = bmov1alpha1.BareMetalHostStatus{}
}

func TestAdvance(t *testing.T) {
	bmcSecret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "host-bmc", ResourceVersion: "7"},
		Data:       map[string][]byte{"username": []byte("admin"), "password": []byte("password")},
	}
	noPassword := bmcSecret.DeepCopy()
	noPassword.Name, noPassword.Data = "no-password", map[string][]byte{"username": []byte("admin")}
	secrets := fake.NewClientBuilder().WithObjects(bmcSecret, noPassword).Build()

	tests := []struct {
		name   string
		host   *bmov1alpha1.BareMetalHost
		delays Delays
		write  writeKind
		after  time.Duration
		expect func(g Gomega, h *bmov1alpha1.BareMetalHost)
	}{
		{
			name:  "a new host gets BMO's finalizer first",
			host:  settled("", fresh, func(h *bmov1alpha1.BareMetalHost) { h.Finalizers = nil }),
			write: writeObject,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Finalizers).To(ConsistOf(bmov1alpha1.BareMetalHostFinalizer))
			},
		},
		{
			name: "a host with a BMC starts registering",
			host: settled("", fresh), write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateRegistering))
				g.Expect(h.Status.Provisioning.BootMode).To(Equal(bmov1alpha1.UEFI))
				g.Expect(h.Status.OperationHistory.Register.Start.Time).To(Equal(now))
				g.Expect(h.Status.LastUpdated.Time).To(Equal(now))
				g.Expect(h.Status.Conditions).To(HaveLen(6))
			},
		},
		{
			name:  "a host without a BMC is unmanaged",
			host:  settled("", fresh, func(h *bmov1alpha1.BareMetalHost) { h.Spec.BMC = bmov1alpha1.BMCDetails{} }),
			write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateUnmanaged))
				g.Expect(h.Status.OperationalStatus).To(Equal(bmov1alpha1.OperationalStatusDiscovered))
			},
		},
		{
			name: "registering records the credentials tried and the fixture's ID",
			host: settled(bmov1alpha1.StateRegistering, fresh, func(h *bmov1alpha1.BareMetalHost) {
				h.Status.Provisioning.State = bmov1alpha1.StateRegistering
			}),
			write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.ID).To(Equal(fixtureProvisionerID))
				g.Expect(h.Status.TriedCredentials.Version).To(Equal("7"))
				g.Expect(h.Status.GoodCredentials.Reference).To(BeNil())
				g.Expect(h.Status.OperationalStatus).To(Equal(bmov1alpha1.OperationalStatusOK))
			},
		},
		{
			name: "registering then records the hardware profile and its root device hints",
			host: settled(bmov1alpha1.StateRegistering, func(h *bmov1alpha1.BareMetalHost) {
				h.Status.HardwareProfile, h.Status.Provisioning.RootDeviceHints = "", nil
			}),
			write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.HardwareProfile).To(Equal("unknown"))
				g.Expect(h.Status.Provisioning.RootDeviceHints).To(Equal(&bmov1alpha1.RootDeviceHints{DeviceName: "/dev/sda"}))
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateRegistering))
			},
		},
		{
			name: "registered: inspecting, with the good credentials in the same write",
			host: settled(bmov1alpha1.StateRegistering, func(h *bmov1alpha1.BareMetalHost) {
				h.Status.GoodCredentials = bmov1alpha1.CredentialsStatus{}
			}),
			write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateInspecting))
				g.Expect(h.Status.GoodCredentials.Version).To(Equal("7"))
			},
		},
		{
			name: "registered without inspection: preparing",
			host: settled(bmov1alpha1.StateRegistering, func(h *bmov1alpha1.BareMetalHost) {
				h.Spec.InspectionMode = bmov1alpha1.InspectionModeDisabled
			}),
			write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StatePreparing))
			},
		},
		{
			name:  "a missing BMC Secret is a registration error, retried",
			host:  settled(bmov1alpha1.StateRegistering, func(h *bmov1alpha1.BareMetalHost) { h.Spec.BMC.CredentialsName = "gone" }),
			write: writeStatus, after: credentialsRetry,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.ErrorType).To(Equal(bmov1alpha1.RegistrationError))
				g.Expect(h.Status.ErrorMessage).To(ContainSubstring("The BMC secret ns/gone does not exist"))
				g.Expect(h.Status.OperationalStatus).To(Equal(bmov1alpha1.OperationalStatusError))
				g.Expect(h.Status.ErrorCount).To(Equal(1))
			},
		},
		{
			name:  "credentials without a password are a registration error",
			host:  settled(bmov1alpha1.StateRegistering, func(h *bmov1alpha1.BareMetalHost) { h.Spec.BMC.CredentialsName = "no-password" }),
			write: writeStatus, after: credentialsRetry,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.ErrorMessage).To(ContainSubstring("'password'"))
			},
		},
		{
			name: "inspection takes the inspect delay",
			host: settled(bmov1alpha1.StateInspecting, func(h *bmov1alpha1.BareMetalHost) {
				h.Status.HardwareDetails = nil
				h.Status.OperationHistory.Inspect.Start = metav1.NewTime(now.Add(-time.Second))
			}),
			delays: Delays{Inspect: 3 * time.Second}, after: 2 * time.Second,
		},
		{
			name: "inspected: the fixture's hardware, preparing",
			host: settled(bmov1alpha1.StateInspecting, func(h *bmov1alpha1.BareMetalHost) {
				h.Status.HardwareDetails = nil
				h.Status.OperationHistory.Inspect.Start = metav1.NewTime(now.Add(-time.Minute))
			}),
			delays: Delays{Inspect: 3 * time.Second}, write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StatePreparing))
				g.Expect(h.Status.HardwareDetails.NIC).To(HaveLen(2))
				g.Expect(h.Status.HardwareDetails.Hostname).To(BeEmpty(), "the fixture reports no hostname")
				g.Expect(h.Status.OperationHistory.Inspect.End.Time).To(Equal(now))
			},
		},
		{
			name:   "a started inspection drops reboot requests",
			host:   settled(bmov1alpha1.StateInspecting, annotated("reboot.metal3.io/x", "")),
			write:  writeObject,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) { g.Expect(h.Annotations).To(BeEmpty()) },
		},
		{
			name:   "inspected hardware's architecture goes into the spec",
			host:   settled(bmov1alpha1.StatePreparing, func(h *bmov1alpha1.BareMetalHost) { h.Spec.Architecture = "" }),
			write:  writeObject,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) { g.Expect(h.Spec.Architecture).To(Equal("x86_64")) },
		},
		{
			name: "prepared: available",
			host: settled(bmov1alpha1.StatePreparing), write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateAvailable))
			},
		},
		{
			name: "an available host powers on when online",
			host: settled(bmov1alpha1.StateAvailable, poweredOff), write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) { g.Expect(h.Status.PoweredOn).To(BeTrue()) },
		},
		{
			name: "an available host ignores an unforced reboot request",
			host: settled(bmov1alpha1.StateAvailable, annotated("reboot.metal3.io/x", "")),
		},
		{
			name:   "an available host powers off for a forced reboot request",
			host:   settled(bmov1alpha1.StateAvailable, annotated("reboot.metal3.io/x", `{"force":true}`)),
			write:  writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) { g.Expect(h.Status.PoweredOn).To(BeFalse()) },
		},
		{
			name: "an image for an online host starts provisioning",
			host: settled(bmov1alpha1.StateAvailable, withImage), write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateProvisioning))
				g.Expect(h.Status.OperationHistory.Provision.Start.Time).To(Equal(now))
			},
		},
		{
			name:  "an image for an offline host waits, powered off",
			host:  settled(bmov1alpha1.StateAvailable, withImage, func(h *bmov1alpha1.BareMetalHost) { h.Spec.Online = false }),
			write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateAvailable))
				g.Expect(h.Status.PoweredOn).To(BeFalse())
			},
		},
		{
			name: "provisioned: the image is recorded",
			host: settled(bmov1alpha1.StateProvisioning, withImage), write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateProvisioned))
				g.Expect(h.Status.Provisioning.Image).To(Equal(*h.Spec.Image))
			},
		},
		{
			name: "provisioned: the custom deploy is recorded",
			host: settled(bmov1alpha1.StateProvisioning, func(h *bmov1alpha1.BareMetalHost) {
				h.Spec.CustomDeploy = &bmov1alpha1.CustomDeploy{Method: "install_coreos"}
			}),
			write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateProvisioned))
				g.Expect(h.Status.Provisioning.CustomDeploy).To(Equal(&bmov1alpha1.CustomDeploy{Method: "install_coreos"}))
			},
		},
		{
			name:   "provisioning drops reboot requests",
			host:   settled(bmov1alpha1.StateProvisioning, withImage, annotated("reboot.metal3.io", "")),
			write:  writeObject,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) { g.Expect(h.Annotations).To(BeEmpty()) },
		},
		{
			name: "provisioning takes the provision delay",
			host: settled(bmov1alpha1.StateProvisioning, withImage, func(h *bmov1alpha1.BareMetalHost) {
				h.Status.OperationHistory.Provision.Start = metav1.NewTime(now)
			}),
			delays: Delays{Provision: 10 * time.Second}, after: 10 * time.Second,
		},
		{
			name: "a provisioning host whose image is taken away deprovisions",
			host: settled(bmov1alpha1.StateProvisioning), write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateDeprovisioning))
			},
		},
		{
			name: "a provisioned host stays",
			host: settled(bmov1alpha1.StateProvisioned, deployed),
		},
		{
			name:   "a provisioned host is off while a reboot annotation is there",
			host:   settled(bmov1alpha1.StateProvisioned, deployed, annotated("reboot.metal3.io/capm3-remediation-x", "")),
			write:  writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) { g.Expect(h.Status.PoweredOn).To(BeFalse()) },
		},
		{
			name:   "once off, a suffixless reboot annotation is consumed",
			host:   settled(bmov1alpha1.StateProvisioned, deployed, poweredOff, annotated("reboot.metal3.io", "")),
			write:  writeObject,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) { g.Expect(h.Annotations).To(BeEmpty()) },
		},
		{
			name: "a host whose power off is disabled reboots: the request is consumed",
			host: settled(bmov1alpha1.StateProvisioned, deployed, annotated("reboot.metal3.io", ""), func(h *bmov1alpha1.BareMetalHost) {
				h.Spec.DisablePowerOff = true
			}),
			write: writeObject,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Annotations).To(BeEmpty())
				g.Expect(h.Status.PoweredOn).To(BeTrue())
			},
		},
		{
			name:  "a provisioned host whose image is taken away deprovisions",
			host:  settled(bmov1alpha1.StateProvisioned, deployed, func(h *bmov1alpha1.BareMetalHost) { h.Spec.Image = nil }),
			write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateDeprovisioning))
				g.Expect(h.Status.OperationHistory.Deprovision.Start.Time).To(Equal(now))
			},
		},
		{
			name: "deprovisioned: available, without the image and provisioning settings",
			host: settled(bmov1alpha1.StateDeprovisioning, func(h *bmov1alpha1.BareMetalHost) {
				h.Status.Provisioning.Image = bmov1alpha1.Image{URL: "http://images.example.com/node.qcow2"}
			}),
			write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateAvailable))
				g.Expect(h.Status.Provisioning.Image).To(BeZero())
				g.Expect(h.Status.Provisioning.RootDeviceHints).To(BeNil())
			},
		},
		{
			name:  "registration restores the root device hints deprovisioning cleared",
			host:  settled(bmov1alpha1.StateAvailable, func(h *bmov1alpha1.BareMetalHost) { h.Status.Provisioning.RootDeviceHints = nil }),
			write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.RootDeviceHints).NotTo(BeNil())
			},
		},
		{
			name: "a new generation alone is a conditions write",
			host: func() *bmov1alpha1.BareMetalHost {
				h := settled(bmov1alpha1.StateAvailable)
				h.Generation++
				return h
			}(),
			write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				for _, c := range h.Status.Conditions {
					if c.Type != bmov1alpha1.HealthyCondition { // set once, as BMO does
						g.Expect(c.ObservedGeneration).To(Equal(h.Generation), c.Type)
					}
				}
			},
		},
		{
			name: "a paused host is left alone",
			host: settled("", fresh, annotated(bmov1alpha1.PausedAnnotation, "")),
		},
		{
			name: "a host with an error is left alone, and looked at again later",
			host: settled(bmov1alpha1.StateProvisioning, withImage, func(h *bmov1alpha1.BareMetalHost) {
				setError(h, bmov1alpha1.ProvisioningError, "injected")
			}),
			after: errorRecheck,
		},
		{
			name: "deleting an available host powers it off first",
			host: settled(bmov1alpha1.StateAvailable, deleted), write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StatePoweringOffBeforeDelete))
			},
		},
		{
			name: "deleting a provisioned host deprovisions it",
			host: settled(bmov1alpha1.StateProvisioned, deployed, deleted), write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateDeprovisioning))
			},
		},
		{
			name: "a deleted host, deprovisioned, powers off",
			host: settled(bmov1alpha1.StateDeprovisioning, deleted), write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StatePoweringOffBeforeDelete))
			},
		},
		{
			name: "powered off before delete: deleting",
			host: settled(bmov1alpha1.StatePoweringOffBeforeDelete, deleted), write: writeStatus,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) {
				g.Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateDeleting))
				g.Expect(h.Status.PoweredOn).To(BeFalse())
			},
		},
		{
			name: "deleting lets the host go",
			host: settled(bmov1alpha1.StateDeleting, deleted), write: writeObject,
			expect: func(g Gomega, h *bmov1alpha1.BareMetalHost) { g.Expect(h.Finalizers).To(BeEmpty()) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			m := &machine{secrets: secrets, delays: tt.delays, now: func() time.Time { return now }}
			host := tt.host.DeepCopy()
			s, err := m.advance(t.Context(), host)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s).To(Equal(step{write: tt.write, after: tt.after}))
			if s.write == writeNone {
				g.Expect(host).To(Equal(tt.host), "nothing written, nothing changed")
			}
			if tt.expect != nil {
				tt.expect(g, host)
			}
		})
	}
}
