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
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1/profile"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

const (
	// fixtureProvisionerID is the provisioner ID test-mode BMO records.
	fixtureProvisionerID = "temporary-fake-id"
	// credentialsRetry is BMO's hostErrorRetryDelay: how soon a host whose
	// BMC Secret is missing or wrong is registered again.
	credentialsRetry = 10 * time.Second
	// errorRecheck is how often a host left alone for its error is looked
	// at again: BMO retries failed hosts on a timer, and clearing an error
	// is a status-only change that wakes nobody.
	errorRecheck = time.Minute
)

// writeKind is what a step changed on the host and how it is saved.
type writeKind int

const (
	writeNone   writeKind = iota
	writeObject           // metadata or spec: an Update of the object
	writeStatus           // the status subresource
)

// step is what one pass over a host decided: at most one write, as each
// pass of BMO's state machine saves at most once.
type step struct {
	write writeKind
	// after, when nothing was written, is when to look again; zero waits
	// for the next change of the host.
	after time.Duration
}

// machine is BMO's host state machine with its fixture provisioner,
// reduced to what shows in the API.
type machine struct {
	// secrets reads BMC credentials while registering.
	secrets client.Reader
	delays  Delays
	now     func() time.Time
}

// advance takes host one step, changing it in memory; the caller saves it
// as the step says.
func (m *machine) advance(ctx context.Context, host *bmov1alpha1.BareMetalHost) (step, error) {
	if _, paused := host.Annotations[bmov1alpha1.PausedAnnotation]; paused {
		return step{}, nil
	}
	deleting := !host.DeletionTimestamp.IsZero()
	switch {
	case !deleting && host.Status.ErrorMessage != "" && !retriesRegistration(host):
		return step{after: errorRecheck}, nil
	case !deleting && controllerutil.AddFinalizer(host, bmov1alpha1.BareMetalHostFinalizer):
		return step{write: writeObject}, nil
	case deleting && !controllerutil.ContainsFinalizer(host, bmov1alpha1.BareMetalHostFinalizer):
		return step{}, nil
	}
	// BMO copies the inspected architecture into the spec once inspection
	// has stored its HardwareData: a spec write the provider races with.
	if hw := host.Status.HardwareDetails; host.Spec.Architecture == "" && hw != nil && hw.CPU.Arch != "" {
		host.Spec.Architecture = hw.CPU.Arch
		return step{write: writeObject}, nil
	}

	conditionsBefore := slices.Clone(host.Status.Conditions)
	s, err := m.reconcileState(ctx, host)
	if err != nil || s.write == writeObject {
		return s, err
	}
	// Like BMO, conditions are computed on every pass and saved when they
	// changed, even with nothing else to save: a new generation alone
	// costs a status write.
	setConditions(host)
	if s.write == writeStatus || !reflect.DeepEqual(conditionsBefore, host.Status.Conditions) {
		now := metav1.NewTime(m.now())
		host.Status.LastUpdated = &now
		s.write = writeStatus
	}
	return s, nil
}

// retriesRegistration: BMO keeps retrying a host whose BMC credentials
// failed, so the driver does not leave it alone for that error.
func retriesRegistration(host *bmov1alpha1.BareMetalHost) bool {
	return host.Status.ErrorType == bmov1alpha1.RegistrationError &&
		host.Status.Provisioning.State == bmov1alpha1.StateRegistering
}

// reconcileState mirrors BMO's hostStateMachine.ReconcileState.
func (m *machine) reconcileState(ctx context.Context, host *bmov1alpha1.BareMetalHost) (step, error) {
	state := host.Status.Provisioning.State
	if !host.DeletionTimestamp.IsZero() {
		if next, initiate := deletionState(state); initiate {
			return m.transition(host, next), nil
		}
	}
	switch state {
	case bmov1alpha1.StateNone, bmov1alpha1.StateUnmanaged, bmov1alpha1.StateDeleting:
	case bmov1alpha1.StateRegistering:
		return m.registering(ctx, host)
	default:
		// BMO re-registers in every later state; with unchanged
		// credentials only the hardware profile can still change.
		if matchProfile(host) {
			return step{write: writeStatus}, nil
		}
	}

	switch state {
	case bmov1alpha1.StateNone:
		if !host.HasBMCDetails() {
			host.SetOperationalStatus(bmov1alpha1.OperationalStatusDiscovered)
			return m.transition(host, bmov1alpha1.StateUnmanaged), nil
		}
		return m.transition(host, bmov1alpha1.StateRegistering), nil
	case bmov1alpha1.StateUnmanaged:
		if host.HasBMCDetails() {
			return m.transition(host, bmov1alpha1.StateRegistering), nil
		}
	case bmov1alpha1.StateInspecting:
		return m.inspecting(host), nil
	case bmov1alpha1.StatePreparing, bmov1alpha1.StateMatchProfile:
		// The fixture has nothing to clean or configure (no RAID, no
		// firmware): preparing completes at once.
		host.Status.ErrorCount = 0
		return m.transition(host, bmov1alpha1.StateAvailable), nil
	case bmov1alpha1.StateAvailable, bmov1alpha1.StateReady:
		return m.available(host), nil
	case bmov1alpha1.StateProvisioning:
		return m.provisioning(host), nil
	case bmov1alpha1.StateProvisioned:
		if provisioningCancelled(host) {
			return m.transition(host, bmov1alpha1.StateDeprovisioning), nil
		}
		return managePower(host), nil
	case bmov1alpha1.StateExternallyProvisioned:
		switch {
		case host.Spec.ExternallyProvisioned:
			return managePower(host), nil
		case host.NeedsHardwareInspection():
			return m.transition(host, bmov1alpha1.StateInspecting), nil
		}
		return m.transition(host, bmov1alpha1.StatePreparing), nil
	case bmov1alpha1.StateDeprovisioning:
		return m.deprovisioning(host), nil
	case bmov1alpha1.StatePoweringOffBeforeDelete:
		host.Status.ErrorCount = 0
		host.Status.PoweredOn = false
		return m.transition(host, bmov1alpha1.StateDeleting), nil
	case bmov1alpha1.StateDeleting:
		if controllerutil.RemoveFinalizer(host, bmov1alpha1.BareMetalHostFinalizer) {
			return step{write: writeObject}, nil
		}
	}
	return step{}, nil
}

// deletionState is where BMO's checkInitiateDelete sends a host being
// deleted; initiate is false where the state machine carries on.
func deletionState(state bmov1alpha1.ProvisioningState) (next bmov1alpha1.ProvisioningState, initiate bool) {
	switch state {
	case bmov1alpha1.StateRegistering, bmov1alpha1.StateUnmanaged, bmov1alpha1.StateNone:
		return bmov1alpha1.StateDeleting, true
	case bmov1alpha1.StateProvisioning, bmov1alpha1.StateProvisioned:
		return bmov1alpha1.StateDeprovisioning, true
	case bmov1alpha1.StateDeprovisioning, bmov1alpha1.StateDeleting, bmov1alpha1.StatePoweringOffBeforeDelete:
		return state, false
	}
	return bmov1alpha1.StatePoweringOffBeforeDelete, true
}

// registering mirrors BMO's registration against the fixture: record the
// credentials tried and the fake provisioner ID, then the hardware
// profile, then the good credentials together with leaving the state
// (BMO saves those two in one write).
func (m *machine) registering(ctx context.Context, host *bmov1alpha1.BareMetalHost) (step, error) {
	secret, problem, err := m.credentials(ctx, host)
	if err != nil {
		return step{}, err
	}
	if problem != "" {
		setError(host, bmov1alpha1.RegistrationError, problem)
		return step{write: writeStatus, after: credentialsRetry}, nil
	}
	if host.Status.Provisioning.ID == "" || !host.Status.TriedCredentials.Match(*secret) {
		host.UpdateTriedCredentials(*secret)
		host.Status.Provisioning.ID = fixtureProvisionerID
		clearError(host)
		return step{write: writeStatus}, nil
	}
	if matchProfile(host) {
		return step{write: writeStatus}, nil
	}
	if host.Status.ErrorType == bmov1alpha1.RegistrationError || !host.Status.GoodCredentials.Match(*secret) {
		host.UpdateGoodCredentials(*secret)
		clearError(host)
	}
	host.Status.ErrorCount = 0
	switch {
	case host.Spec.ExternallyProvisioned:
		return m.transition(host, bmov1alpha1.StateExternallyProvisioned), nil
	case host.InspectionDisabled():
		return m.transition(host, bmov1alpha1.StatePreparing), nil
	}
	return m.transition(host, bmov1alpha1.StateInspecting), nil
}

// credentials reads the host's BMC Secret as BMO validates it; problem is
// the registration error BMO reports when it is unusable.
func (m *machine) credentials(ctx context.Context, host *bmov1alpha1.BareMetalHost) (*corev1.Secret, string, error) {
	if host.Spec.BMC.CredentialsName == "" {
		return nil, "No BMC CredentialsName defined The BMC secret reference is empty", nil
	}
	secret := &corev1.Secret{}
	key := host.CredentialsKey()
	if err := m.secrets.Get(ctx, key, secret); apierrors.IsNotFound(err) {
		return nil, fmt.Sprintf("BMC CredentialsName secret doesn't exist The BMC secret %s does not exist", key), nil
	} else if err != nil {
		return nil, "", fmt.Errorf("read BMC credentials %s: %w", key, err)
	}
	switch {
	case host.Spec.BMC.Address == "":
		return nil, "Empty BMC address Missing BMC connection detail 'Address'", nil
	case strings.TrimSpace(string(secret.Data["username"])) == "":
		return nil, "Validation error with BMC credentials: Missing BMC connection detail 'username' in credentials", nil
	case strings.TrimSpace(string(secret.Data["password"])) == "":
		return nil, "Validation error with BMC credentials: Missing BMC connection details 'password' in credentials", nil
	}
	return secret, "", nil
}

// matchProfile records the hardware profile and its root device hints
// as BMO does on every registration; true when that changed the host.
func matchProfile(host *bmov1alpha1.BareMetalHost) bool {
	name := host.Status.HardwareProfile
	switch {
	case name != "":
	case host.Spec.HardwareProfile != "":
		name = host.Spec.HardwareProfile
	case strings.HasPrefix(host.Spec.BMC.Address, "libvirt"):
		name = "libvirt"
	default:
		name = profile.DefaultProfileName
	}
	prof, err := profile.GetProfile(name)
	if err != nil {
		return false
	}
	changed := host.SetHardwareProfile(name)
	hints := host.Spec.RootDeviceHints
	if hints == nil {
		hints = &prof.RootDeviceHints
	}
	if !reflect.DeepEqual(hints, host.Status.Provisioning.RootDeviceHints) {
		host.Status.Provisioning.RootDeviceHints = hints.DeepCopy()
		changed = true
	}
	return changed
}

// inspecting: the fixture's inspection starts (dropping the inspect and
// reboot annotations, as a started inspection does), takes the inspect
// delay, and reports the same hardware for every host.
func (m *machine) inspecting(host *bmov1alpha1.BareMetalHost) step {
	if host.InspectionDisabled() {
		return m.transition(host, bmov1alpha1.StatePreparing)
	}
	dropped := clearRebootAnnotations(host)
	if inspectionRefreshRequested(host) {
		delete(host.Annotations, bmov1alpha1.InspectAnnotationPrefix)
		dropped = true
	}
	if dropped {
		return step{write: writeObject}
	}
	if wait := m.remaining(host, bmov1alpha1.StateInspecting, m.delays.Inspect); wait > 0 {
		return step{after: wait}
	}
	clearError(host)
	host.Status.HardwareDetails = fixtureHardware()
	host.Status.ErrorCount = 0
	return m.transition(host, bmov1alpha1.StatePreparing)
}

// available mirrors BMO's handleAvailable.
func (m *machine) available(host *bmov1alpha1.BareMetalHost) step {
	switch {
	case host.Spec.ExternallyProvisioned:
		clearHostProvisioningSettings(host)
		return m.transition(host, bmov1alpha1.StateExternallyProvisioned)
	case inspectionRefreshRequested(host):
		return m.transition(host, bmov1alpha1.StateInspecting)
	case host.NeedsProvisioning():
		clearError(host)
		return m.transition(host, bmov1alpha1.StateProvisioning)
	}
	return managePower(host)
}

// provisioning: the fixture writes the image (or runs the custom deploy)
// in the provision delay; BMO then records what was deployed.
func (m *machine) provisioning(host *bmov1alpha1.BareMetalHost) step {
	if host.Status.ErrorType != "" || provisioningCancelled(host) {
		return m.transition(host, bmov1alpha1.StateDeprovisioning)
	}
	if clearRebootAnnotations(host) {
		return step{write: writeObject}
	}
	if wait := m.remaining(host, bmov1alpha1.StateProvisioning, m.delays.Provision); wait > 0 {
		return step{after: wait}
	}
	if host.Spec.Image != nil {
		host.Status.Provisioning.Image = *host.Spec.Image.DeepCopy()
	}
	if host.Spec.CustomDeploy != nil {
		host.Status.Provisioning.CustomDeploy = host.Spec.CustomDeploy.DeepCopy()
	}
	host.Status.ErrorCount = 0
	return m.transition(host, bmov1alpha1.StateProvisioned)
}

// deprovisioning: the fixture wipes the image in the deprovision delay,
// whatever the cleaning mode; BMO then forgets what was deployed and its
// provisioning settings (registration restores the root device hints).
func (m *machine) deprovisioning(host *bmov1alpha1.BareMetalHost) step {
	if wait := m.remaining(host, bmov1alpha1.StateDeprovisioning, m.delays.Deprovision); wait > 0 {
		return step{after: wait}
	}
	if clearRebootAnnotations(host) {
		return step{write: writeObject}
	}
	host.Status.Provisioning.Image = bmov1alpha1.Image{}
	host.Status.Provisioning.CustomDeploy = nil
	clearHostProvisioningSettings(host)
	host.Status.ErrorCount = 0
	if !host.DeletionTimestamp.IsZero() {
		return m.transition(host, bmov1alpha1.StatePoweringOffBeforeDelete)
	}
	return m.transition(host, bmov1alpha1.StateAvailable)
}

// provisioningCancelled mirrors BMO's: the spec no longer asks for what
// was (or is being) deployed.
func provisioningCancelled(host *bmov1alpha1.BareMetalHost) bool {
	spec, status := host.Spec, host.Status.Provisioning
	if spec.CustomDeploy != nil && spec.CustomDeploy.Method != "" {
		if status.CustomDeploy != nil && status.CustomDeploy.Method != "" && spec.CustomDeploy.Method != status.CustomDeploy.Method {
			return true
		}
		return status.Image.URL != "" && (spec.Image == nil || spec.Image.URL != status.Image.URL)
	}
	if status.CustomDeploy != nil && status.CustomDeploy.Method != "" {
		return true
	}
	switch {
	case spec.Image == nil || spec.Image.URL == "":
		return true
	case status.Image.URL == "":
		return false
	}
	return spec.Image.URL != status.Image.URL
}

// managePower mirrors BMO's manageHostPower with the fixture's power,
// which switches at once: status.poweredOn follows spec.online, off while
// a reboot annotation is present. A suffixless reboot annotation is
// consumed once the host is off, so it powers on again.
func managePower(host *bmov1alpha1.BareMetalHost) step {
	state := host.Status.Provisioning.State
	provisioned := state == bmov1alpha1.StateProvisioned || state == bmov1alpha1.StateExternallyProvisioned
	_, suffixless := host.Annotations[bmov1alpha1.RebootAnnotationPrefix]
	if !host.Status.PoweredOn && suffixless {
		delete(host.Annotations, bmov1alpha1.RebootAnnotationPrefix)
		return step{write: writeObject}
	}
	desired := host.Spec.Online && !hasRebootAnnotation(host, !provisioned)
	if host.Status.PoweredOn == desired {
		return step{}
	}
	if !desired && host.Spec.DisablePowerOff && suffixless {
		// Rebooted rather than powered off: the request is done.
		delete(host.Annotations, bmov1alpha1.RebootAnnotationPrefix)
		return step{write: writeObject}
	}
	host.Status.PoweredOn = desired
	if host.Status.ErrorType == bmov1alpha1.PowerManagementError {
		clearError(host)
	}
	return step{write: writeStatus}
}

// hasRebootAnnotation reports a reboot request; an available host only
// honours forced ones, as in BMO.
func hasRebootAnnotation(host *bmov1alpha1.BareMetalHost, forcedOnly bool) bool {
	for key, value := range host.Annotations {
		if !isRebootAnnotation(key) {
			continue
		}
		var args bmov1alpha1.RebootAnnotationArguments
		_ = json.Unmarshal([]byte(value), &args) // BMO reads a bad value as a soft, unforced reboot
		if !forcedOnly || args.Force {
			return true
		}
	}
	return false
}

func isRebootAnnotation(key string) bool {
	return key == bmov1alpha1.RebootAnnotationPrefix || strings.HasPrefix(key, bmov1alpha1.RebootAnnotationPrefix+"/")
}

func clearRebootAnnotations(host *bmov1alpha1.BareMetalHost) bool {
	dropped := false
	for key := range host.Annotations {
		if isRebootAnnotation(key) {
			delete(host.Annotations, key)
			dropped = true
		}
	}
	return dropped
}

func inspectionRefreshRequested(host *bmov1alpha1.BareMetalHost) bool {
	value, ok := host.Annotations[bmov1alpha1.InspectAnnotationPrefix]
	return ok && value != bmov1alpha1.InspectAnnotationValueDisabled //nolint:staticcheck // BMO v0.13.2 still honours the legacy value
}

func clearHostProvisioningSettings(host *bmov1alpha1.BareMetalHost) {
	host.Status.Provisioning.RootDeviceHints = nil
	if host.Status.Provisioning.RAID != nil {
		host.Status.Provisioning.RAID.SoftwareRAIDVolumes = nil
	}
	host.Status.Provisioning.Firmware = nil
}

func clearError(host *bmov1alpha1.BareMetalHost) {
	host.SetOperationalStatus(bmov1alpha1.OperationalStatusOK)
	host.Status.ErrorType = ""
	host.Status.ErrorMessage = ""
}

func setError(host *bmov1alpha1.BareMetalHost, errType bmov1alpha1.ErrorType, message string) {
	host.Status.OperationalStatus = bmov1alpha1.OperationalStatusError
	host.Status.ErrorType = errType
	host.Status.ErrorMessage = message
	host.Status.ErrorCount++
}

// transition moves host to next as BMO's updateHostStateFrom does,
// timing the operations in status.operationHistory.
func (m *machine) transition(host *bmov1alpha1.BareMetalHost, next bmov1alpha1.ProvisioningState) step {
	now := metav1.NewTime(m.now())
	if metric := host.OperationMetricForState(host.Status.Provisioning.State); metric != nil && !metric.Start.IsZero() && metric.End.IsZero() {
		metric.End = now
	}
	if metric := host.OperationMetricForState(next); metric != nil && (metric.Start.IsZero() || !metric.End.IsZero()) {
		*metric = bmov1alpha1.OperationMetric{Start: now}
	}
	host.Status.Provisioning.State = next
	switch next {
	case bmov1alpha1.StateRegistering, bmov1alpha1.StateInspecting, bmov1alpha1.StateProvisioning:
		host.Status.Provisioning.BootMode = host.BootMode()
	}
	return step{write: writeStatus}
}

// remaining is how much longer host stays in state, which it entered at
// the start its operation history records.
func (m *machine) remaining(host *bmov1alpha1.BareMetalHost, state bmov1alpha1.ProvisioningState, delay time.Duration) time.Duration {
	metric := host.OperationMetricForState(state)
	if delay <= 0 || metric == nil || metric.Start.IsZero() {
		return 0
	}
	return max(0, metric.Start.Add(delay).Sub(m.now()))
}

// fixtureHardware is what BMO's fixture provisioner reports for every
// host: the same NICs, MACs and IPs everywhere, and no hostname.
func fixtureHardware() *bmov1alpha1.HardwareDetails {
	disk := func(name string) bmov1alpha1.Storage {
		return bmov1alpha1.Storage{Name: name, SizeBytes: 93 * bmov1alpha1.TebiByte, Model: "Dell CFJ61"}
	}
	return &bmov1alpha1.HardwareDetails{
		RAMMebibytes: 128 * 1024,
		NIC: []bmov1alpha1.NIC{
			{
				Name: "nic-1", Model: "virt-io", MAC: "ab:cd:12:34:56:78", IP: "192.168.100.1", SpeedGbps: 1, PXE: true,
				LLDP: &bmov1alpha1.LLDP{SwitchID: "aa:bb:cc:dd:ee:ff", PortID: "Ethernet1/1", SwitchSystemName: "switch01.example.com"},
			},
			{
				Name: "nic-2", Model: "e1000", MAC: "12:34:56:78:ab:cd", IP: "192.168.100.2", SpeedGbps: 1,
				LLDP: &bmov1alpha1.LLDP{SwitchID: "ff:ee:dd:cc:bb:aa", PortID: "Ethernet1/2", SwitchSystemName: "switch02.example.com"},
			},
		},
		Storage: []bmov1alpha1.Storage{disk("disk-1 (boot)"), disk("disk-2")},
		CPU: bmov1alpha1.CPU{
			Arch: "x86_64", Model: "FancyPants CPU", ClockMegahertz: 3 * bmov1alpha1.GigaHertz,
			Flags: []string{"fpu", "hypervisor", "sse", "vmx"}, Count: 1,
		},
	}
}
