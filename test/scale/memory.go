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

package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/test/testenv"
)

// memoryResult is what the hosts of many identities cost the provider's
// process once their caches are synced and watched.
type memoryResult struct {
	Hosts, Identities int
	// HeapPerHost is the live heap the hosts add to connected identities,
	// divided by their number: what one cached host costs.
	HeapPerHost float64
	// HeapPerIdentity is the live heap one connected identity adds before
	// it caches any host: clients, REST mapper, informer and watches.
	HeapPerIdentity float64
	// HeapAllPerHost is everything the identities and their hosts add,
	// divided by the hosts: what a fleet of 100 hosts per identity costs
	// per host.
	HeapAllPerHost float64
	// IdleHeap is the live heap before any identity connected, HeapTotal
	// the live heap (HeapAlloc) and HeapInuse the heap spans in use at the
	// end; RSS is the process's then, IdleRSS before any identity
	// connected (the binary's pages and the bench's own clients).
	IdleHeap, HeapTotal, HeapInuse, IdleRSS, RSS uint64
	// WatchesPerIdentityKind is the most watches open at once for each
	// identity (its pool namespace) and resource.
	WatchesPerIdentityKind map[string]int
	// ServerWatches are the watches of hosts the pool API server counts
	// (apiserver_longrunning_requests), which the provider's should match.
	ServerWatches int
	// Connect is the time until every identity was usable; Create the
	// time to create every host and write its inspected status (what the
	// pool API server allows); Fill the time from the first create until
	// every identity's cache held them all as inspected.
	Connect, Create, Fill time.Duration
}

// runMemory connects identities tenants, each allowed one namespace of a
// pool API server, in one IdentityCache with the controllers' host
// watches; then creates hostsPerIdentity hosts in each namespace as the
// Bare Metal Operator leaves them after inspection, and measures the live
// heap idle, connected, and with every host cached, and the watches opened.
func runMemory(ctx context.Context, t testenv.T, hostsPerIdentity, identities int) (memoryResult, error) {
	res := memoryResult{Hosts: hostsPerIdentity * identities, Identities: identities}
	f, err := startTenantFleet(ctx, t, identities, 0)
	if err != nil {
		return res, err
	}
	if err := f.startManager(); err != nil {
		return res, err
	}
	idle := settledHeap()
	res.IdleHeap = idle.HeapAlloc
	if res.IdleRSS, err = residentSetSize(); err != nil {
		return res, err
	}

	start := time.Now()
	if err := f.connect(f.ids); err != nil {
		return res, err
	}
	res.Connect = time.Since(start)
	connected := settledHeap()

	// The hosts arrive through the watches: created, then inspected.
	start = time.Now()
	if err := createInspectedHosts(f.ctx, f.pool.Client, f.poolNamespaces, hostsPerIdentity); err != nil {
		return res, err
	}
	res.Create = time.Since(start)
	f.hosts = res.Hosts
	if err := f.waitHostsCached(bmov1alpha1.StateAvailable); err != nil {
		return res, err
	}
	res.Fill = time.Since(start)
	full := settledHeap()

	res.HeapTotal, res.HeapInuse = full.HeapAlloc, full.HeapInuse
	res.HeapPerIdentity = heapDelta(idle, connected) / float64(identities)
	res.HeapPerHost = heapDelta(connected, full) / float64(res.Hosts)
	res.HeapAllPerHost = heapDelta(idle, full) / float64(res.Hosts)
	if res.RSS, err = residentSetSize(); err != nil {
		return res, err
	}
	res.WatchesPerIdentityKind = f.watches.maxByKey()
	if res.ServerWatches, err = serverWatches(ctx, f.pool.Config, "baremetalhosts"); err != nil {
		return res, err
	}
	return res, nil
}

// waitHostsCached waits until every identity's cache holds all its hosts
// in state, and every watch has delivered their creation and inspection.
func (f *tenantFleet) waitHostsCached(state bmov1alpha1.ProvisioningState) error {
	perIdentity := f.hosts / len(f.ids)
	for _, id := range f.ids {
		if err := pollUntil(f.ctx, 5*time.Minute, 50*time.Millisecond, "hosts cached for "+id.Key.String(), func() (bool, error) {
			access, err := f.cache.HostAccess(f.ctx, id)
			if err != nil {
				return false, err
			}
			hosts := &bmov1alpha1.BareMetalHostList{}
			if err := access.Client().List(f.ctx, hosts, client.InNamespace(access.Namespace())); err != nil {
				return false, err
			}
			n := 0
			for i := range hosts.Items {
				if hosts.Items[i].Status.Provisioning.State == state {
					n++
				}
			}
			return n == perIdentity, nil
		}); err != nil {
			return err
		}
	}
	// Created and inspected: two events per host and watch.
	want := int64(2 * f.hosts * len(f.watchers))
	return pollUntil(f.ctx, time.Minute, 20*time.Millisecond, "host events delivered", func() (bool, error) {
		return f.events.Load() >= want, nil
	})
}

func heapDelta(from, to runtime.MemStats) float64 {
	return float64(int64(to.HeapAlloc) - int64(from.HeapAlloc))
}

// rows are the scenario's figures for the Markdown table, with the targets
// of the issue.
func (r memoryResult) rows() [][2]string {
	maxWatches, kinds := 0, map[string]bool{}
	for key, n := range r.WatchesPerIdentityKind {
		maxWatches = max(maxWatches, n)
		kinds[key[strings.LastIndex(key, "/")+1:]] = true
	}
	return [][2]string{
		{"hosts cached / identities", fmt.Sprintf("%d / %d", r.Hosts, r.Identities)},
		{"time until all identities are usable", r.Connect.Round(time.Millisecond).String()},
		{"hosts created and inspected / all cached by every identity", fmt.Sprintf("%s (%.0f hosts/s) / %s",
			r.Create.Round(time.Millisecond), float64(r.Hosts)/r.Create.Seconds(), r.Fill.Round(time.Millisecond))},
		{"heap per cached BMH", kib(r.HeapPerHost) + " (target ≤ 4 KiB)"},
		{"heap per connected identity (no hosts)", kib(r.HeapPerIdentity)},
		{"heap per BMH, identities included", fmt.Sprintf("%s (of which the identity's fixed cost spread over its %d hosts: %s)",
			kib(r.HeapAllPerHost), r.Hosts/max(r.Identities, 1), kib(r.HeapPerIdentity*float64(r.Identities)/float64(max(r.Hosts, 1))))},
		{"heap live, idle → all cached (in use at the end)", fmt.Sprintf("%s → %s (%s)",
			mib(r.IdleHeap), mib(r.HeapTotal), mib(r.HeapInuse))},
		{"RSS of the process, idle → all cached", fmt.Sprintf("%s → %s (target ≤ 512 MiB)", mib(r.IdleRSS), mib(r.RSS))},
		{"max open watches per (identity, kind)", fmt.Sprintf("%d over %d (identity, kind) pairs, kinds %s (target ≤ 1)",
			maxWatches, len(r.WatchesPerIdentityKind), strings.Join(slices.Sorted(maps.Keys(kinds)), ", "))},
		{"host watches the pool API server counts", strconv.Itoa(r.ServerWatches)},
	}
}

// settledHeap collects garbage until the live heap stops shrinking and
// returns the memory statistics then.
func settledHeap() runtime.MemStats {
	var stats runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&stats)
	for range 5 {
		previous := stats.HeapAlloc
		runtime.GC()
		runtime.ReadMemStats(&stats)
		if stats.HeapAlloc >= previous*99/100 {
			break
		}
	}
	return stats
}

// residentSetSize is the process's VmRSS, in bytes.
func residentSetSize() (uint64, error) { return processRSS(os.Getpid()) }

// serverWatches reads from the API server's metrics how many watches of
// resource are open.
func serverWatches(ctx context.Context, cfg *rest.Config, resource string) (int, error) {
	n, err := testenv.ServerMetric(ctx, cfg, "apiserver_longrunning_requests", `resource="`+resource+`"`, `verb="WATCH"`)
	return int(n), err
}

// watchCounter counts the watches the identities' clients hold open, per
// namespace (one per identity here) and resource.
type watchCounter struct {
	mu   sync.Mutex
	open map[string]int
	most map[string]int
}

func newWatchCounter() *watchCounter {
	return &watchCounter{open: map[string]int{}, most: map[string]int{}}
}

// wrap is an Options.WrapTransport: a watch is open from its response
// until its body is closed.
func (w *watchCounter) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.URL.Query().Get("watch") != "true" {
			return next.RoundTrip(req)
		}
		resp, err := next.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		key := watchKey(req.URL.Path)
		w.add(key, 1)
		resp.Body = &closeOnce{ReadCloser: resp.Body, onClose: func() { w.add(key, -1) }}
		return resp, nil
	})
}

func (w *watchCounter) add(key string, delta int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.open[key] += delta
	w.most[key] = max(w.most[key], w.open[key])
}

func (w *watchCounter) maxByKey() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.most))
	for k, v := range w.most {
		out[k] = v
	}
	return out
}

func (w *watchCounter) maxPerKey() int {
	most := 0
	for _, n := range w.maxByKey() {
		most = max(most, n)
	}
	return most
}

// watchKey is "namespace/resource" of an API path such as
// /apis/metal3.io/v1alpha1/namespaces/pool-00/baremetalhosts.
func watchKey(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "namespaces" {
			return parts[i+1] + "/" + parts[i+2]
		}
	}
	return "(cluster)/" + parts[len(parts)-1]
}

type closeOnce struct {
	io.ReadCloser
	once    sync.Once
	onClose func()
}

func (c *closeOnce) Close() error {
	c.once.Do(c.onClose)
	return c.ReadCloser.Close()
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// createInspectedHosts creates perNamespace hosts in each namespace through
// the API (so the server adds its managedFields), then writes their status
// through the status subresource as the Bare Metal Operator does after
// inspection. Workers share the work, enough of them to keep the API
// server busy while each waits for its answers: one at a time would take
// minutes for thousands.
func createInspectedHosts(ctx context.Context, c client.Client, namespaces []string, perNamespace int) error {
	return parallel(len(namespaces)*perNamespace, hostCreateWorkers, func(index int) error {
		return createInspectedHost(ctx, c, namespaces[index/perNamespace], index)
	})
}

// hostCreateWorkers create hosts at once: more requests in flight than
// the API server has CPUs, so that its CPU, not the round trips, bounds
// the rate (20,000 hosts: 4 to 7 minutes on 2 shared CPUs).
const hostCreateWorkers = 32

func createInspectedHost(ctx context.Context, c client.Client, namespace string, index int) error {
	name := fmt.Sprintf("worker-%04d", index)
	host := &bmov1alpha1.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name,
			Labels: map[string]string{
				"infrastructure.example.com/rack": fmt.Sprintf("r%02d", index%40),
				"infrastructure.example.com/pool": namespace,
			},
			// The Bare Metal Operator's own finalizer.
			Finalizers: []string{bmov1alpha1.BareMetalHostFinalizer},
		},
		Spec: bmov1alpha1.BareMetalHostSpec{
			Online:         true,
			BootMACAddress: hostMAC(index, 0),
			BootMode:       bmov1alpha1.UEFI,
			BMC: bmov1alpha1.BMCDetails{
				Address:                        fmt.Sprintf("redfish-virtualmedia://10.10.%d.%d/redfish/v1/Systems/System.Embedded.1", index/250, index%250),
				CredentialsName:                name + "-bmc-secret",
				DisableCertificateVerification: true,
			},
			RootDeviceHints:       &bmov1alpha1.RootDeviceHints{DeviceName: "/dev/sda"},
			AutomatedCleaningMode: bmov1alpha1.CleaningModeMetadata,
		},
	}
	if err := c.Create(ctx, host); err != nil {
		return fmt.Errorf("create host %s/%s: %w", namespace, name, err)
	}
	host.Status = inspectedStatus(namespace, name, index)
	if err := c.Status().Update(ctx, host); err != nil {
		return fmt.Errorf("status of host %s/%s: %w", namespace, name, err)
	}
	return nil
}

// inspectedStatus is a host's status as the Bare Metal Operator leaves it
// after registration and inspection of a typical two-socket server: four
// NICs, two disks, the CPU flags Ironic reports, and the operation history.
func inspectedStatus(namespace, name string, index int) bmov1alpha1.BareMetalHostStatus {
	at := func(minutes int) metav1.Time {
		return metav1.NewTime(time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC).Add(time.Duration(index+minutes) * time.Minute))
	}
	nics := make([]bmov1alpha1.NIC, 4)
	for n := range nics {
		nics[n] = bmov1alpha1.NIC{
			Name: fmt.Sprintf("eno%d", n+1), Model: "0x8086 0x1593", MAC: hostMAC(index, n), SpeedGbps: 25, PXE: n == 0,
			PCIAddress: fmt.Sprintf("0000:%02x:00.%d", 0x31+n/2, n%2),
			LLDP: &bmov1alpha1.LLDP{
				SwitchID: fmt.Sprintf("0c:42:a1:%02x:%02x:00", index/250%256, n), PortID: fmt.Sprintf("Ethernet1/%d", index%48+1),
				SwitchSystemName: fmt.Sprintf("leaf-%02d-%d.dc1.example.com", index/48%100, n%2),
			},
		}
		if n < 2 {
			nics[n].IP = fmt.Sprintf("10.%d.%d.%d", 20+n, index/250, index%250+2)
		}
	}
	disk := func(d int) bmov1alpha1.Storage {
		serial := fmt.Sprintf("S4EMNX0R%06dA%d", index, d)
		return bmov1alpha1.Storage{
			Name: fmt.Sprintf("/dev/sd%c", 'a'+d), HCTL: fmt.Sprintf("%d:0:0:0", d),
			AlternateNames: []string{fmt.Sprintf("/dev/disk/by-path/pci-0000:65:00.0-scsi-0:2:%d:0", d), "/dev/disk/by-id/wwn-0x5002538e" + serial[8:]},
			Type:           bmov1alpha1.SSD, SizeBytes: 960 * bmov1alpha1.GigaByte, Vendor: "ATA", Model: "SAMSUNG MZ7LH960HAJR-00005",
			SerialNumber: serial, WWN: "0x5002538e" + serial[8:14], WWNWithExtension: "0x5002538e" + serial[8:14],
		}
	}
	credentials := bmov1alpha1.CredentialsStatus{
		Reference: &corev1.SecretReference{Namespace: namespace, Name: name + "-bmc-secret"}, Version: strconv.Itoa(1000 + index),
	}
	lastUpdated := at(30)
	return bmov1alpha1.BareMetalHostStatus{
		OperationalStatus: bmov1alpha1.OperationalStatusOK,
		LastUpdated:       &lastUpdated,
		HardwareProfile:   "unknown",
		HardwareDetails: &bmov1alpha1.HardwareDetails{
			SystemVendor: bmov1alpha1.HardwareSystemVendor{Manufacturer: "Dell Inc.", ProductName: "PowerEdge R650 (SKU=0A2B;ModelName=PowerEdge R650)", SerialNumber: fmt.Sprintf("7XK%04d", index)},
			Firmware:     bmov1alpha1.Firmware{BIOS: bmov1alpha1.BIOS{Date: "03/15/2024", Vendor: "Dell Inc.", Version: "1.13.2"}},
			RAMMebibytes: 512 * 1024,
			NIC:          nics,
			Storage:      []bmov1alpha1.Storage{disk(0), disk(1)},
			CPU: bmov1alpha1.CPU{
				Arch: "x86_64", Model: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", ClockMegahertz: 2000, Count: 128,
				Flags: strings.Fields(xeonFlags),
			},
			Hostname: fmt.Sprintf("%s.%s.dc1.example.com", name, namespace),
		},
		Provisioning: bmov1alpha1.ProvisionStatus{
			State:           bmov1alpha1.StateAvailable,
			ID:              fmt.Sprintf("3f2b6c1e-8d4a-4c7b-9e21-%012d", index),
			BootMode:        bmov1alpha1.UEFI,
			RootDeviceHints: &bmov1alpha1.RootDeviceHints{DeviceName: "/dev/sda"},
		},
		GoodCredentials:  credentials,
		TriedCredentials: credentials,
		OperationHistory: bmov1alpha1.OperationHistory{
			Register: bmov1alpha1.OperationMetric{Start: at(0), End: at(2)},
			Inspect:  bmov1alpha1.OperationMetric{Start: at(2), End: at(12)},
		},
	}
}

func hostMAC(index, nic int) string {
	return fmt.Sprintf("b4:96:91:%02x:%02x:%02x", index>>8&0xff, index&0xff, nic)
}

// xeonFlags are the CPU flags inspection reports for an Ice Lake Xeon.
const xeonFlags = `fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe
syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf pni pclmulqdq
dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes
xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault epb cat_l3 invpcid_single intel_ppin ssbd mba ibrs ibpb stibp ibrs_enhanced
tpr_shadow vnmi flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid cqm rdt_a avx512f avx512dq rdseed adx
smap avx512ifma clflushopt clwb intel_pt avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc
cqm_mbm_total cqm_mbm_local split_lock_detect wbnoinvd dtherm ida arat pln pts avx512vbmi umip pku ospke avx512_vbmi2 gfni vaes
vpclmulqdq avx512_vnni avx512_bitalg tme avx512_vpopcntdq la57 rdpid fsrm md_clear pconfig flush_l1d arch_capabilities`

func kib(bytes float64) string { return fmt.Sprintf("%.2f KiB", bytes/1024) }

func mib(bytes uint64) string { return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20)) }
