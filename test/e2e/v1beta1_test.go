//go:build e2e

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

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-cmp/cmp"
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	utilconversion "sigs.k8s.io/cluster-api/util/conversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	infrav1beta1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
)

// The same cluster, applied twice on the same management cluster: once as
// v1beta2 objects (as the rest of the suite builds them), once with our
// kinds written as infrastructure.cluster.x-k8s.io/v1beta1 manifests, as a
// user whose tooling pins v1beta1 writes them (templates/
// cluster-template-v1beta1.yaml). The API server converts those through the
// manager's /convert; the provider only ever sees v1beta2. Both must
// behave identically, down to the bytes of the rendered Secrets, and read
// the same in both versions.
//
// Each twin lives in its own namespace with its own two hosts and its own
// IP pool, so everything is the same but the namespace (host names are
// <namespace>-<i>) and the workers' generated names. The control plane
// gets its rendered data before the workers exist, so that indexes and
// addresses are handed out in the same order in both twins.

const (
	dualCluster = "dual"
	// dualRoleLabel ties each host to the machine meant for it, through
	// the machines' hostSelector.
	dualRoleLabel = "e2e.metal3.io/role"
)

// dualV1beta1Manifests are the twin's Metal3Cluster, Metal3DataTemplate,
// Metal3MachineTemplate and control-plane Metal3Machine in v1beta1
// spelling: image.format, the data template's *FromIPPool, the failure
// domains as a map, dataTemplate as an ObjectReference.
const dualV1beta1Manifests = `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3Cluster
metadata:
  name: dual
  namespace: ${NAMESPACE}
spec:
  controlPlaneEndpoint:
    host: 192.168.111.249
    port: 6443
  cloudProviderEnabled: false
  failureDomains:
    rack-a:
      controlPlane: true
      attributes:
        room: east
    rack-b:
      attributes:
        room: west
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3DataTemplate
metadata:
  name: dual-nodes
  namespace: ${NAMESPACE}
spec:
  clusterName: dual
  metaData:
    strings:
    - key: flavor
      value: dual
    objectNames:
    - key: name
      object: machine
    - key: local-hostname
      object: machine
    - key: host
      object: baremetalhost
    indexes:
    - key: node
      offset: 10
      prefix: node-
    namespaces:
    - key: namespace
    ipAddressesFromIPPool:
    - key: ip
      apiGroup: ipam.metal3.io
      kind: IPPool
      name: dual-nodes
    prefixesFromIPPool:
    - key: prefix
      apiGroup: ipam.metal3.io
      kind: IPPool
      name: dual-nodes
    gatewaysFromIPPool:
    - key: gateway
      apiGroup: ipam.metal3.io
      kind: IPPool
      name: dual-nodes
    dnsServersFromIPPool:
    - key: dns
      apiGroup: ipam.metal3.io
      kind: IPPool
      name: dual-nodes
    fromHostInterfaces:
    - key: mac
      interface: nic-1
    - key: boot-mac
      fromBootMAC: true
    fromLabels:
    - key: rack
      object: baremetalhost
      label: infrastructure.cluster.x-k8s.io/failure-domain
  networkData:
    links:
      ethernets:
      - type: phy
        id: nic-1
        mtu: 1500
        macAddress:
          fromHostInterface: nic-1
    networks:
      ipv4:
      - id: nodes
        link: nic-1
        ipAddressFromIPPool: dual-nodes
        routes:
        - network: 0.0.0.0
          prefix: 0
          gateway:
            fromIPPool: dual-nodes
    services:
      dnsFromIPPool: dual-nodes
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3MachineTemplate
metadata:
  name: dual-workers
  namespace: ${NAMESPACE}
spec:
  template:
    spec:
      dataTemplate:
        name: dual-nodes
      image:
        url: http://172.22.0.1/images/node.qcow2
        checksum: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
        checksumType: sha256
        format: qcow2
      hostSelector:
        matchLabels:
          e2e.metal3.io/role: worker
      automatedCleaningMode: disabled
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3Machine
metadata:
  name: dual-control-plane-0
  namespace: ${NAMESPACE}
  labels:
    cluster.x-k8s.io/cluster-name: dual
    cluster.x-k8s.io/control-plane: ""
spec:
  dataTemplate:
    name: dual-nodes
  image:
    url: http://172.22.0.1/images/node.qcow2
    checksum: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    checksumType: sha256
    format: qcow2
  hostSelector:
    matchLabels:
      e2e.metal3.io/role: control-plane
  automatedCleaningMode: disabled
`

// dualV1beta2Objects are the same four objects, built as v1beta2.
func dualV1beta2Objects(ns string) []client.Object {
	fromPool := func(key string) infrav1.FromPool {
		return infrav1.FromPool{Key: key, APIGroup: "ipam.metal3.io", Kind: "IPPool", Name: "dual-nodes"}
	}
	machineSpec := func(role string) infrav1.Metal3MachineSpec {
		return infrav1.Metal3MachineSpec{
			DataTemplate:          &infrav1.Metal3ObjectRef{Name: "dual-nodes"},
			Image:                 env.Image,
			HostSelector:          &infrav1.HostSelector{MatchLabels: map[string]string{dualRoleLabel: role}},
			AutomatedCleaningMode: "disabled",
		}
	}
	return []client.Object{
		&infrav1.Metal3Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dualCluster},
			Spec: infrav1.Metal3ClusterSpec{
				ControlPlaneEndpoint: infrav1.APIEndpoint{Host: "192.168.111.249", Port: 6443},
				CloudProviderEnabled: ptr.To(false),
				FailureDomains: []clusterv1.FailureDomain{
					{Name: "rack-a", ControlPlane: ptr.To(true), Attributes: map[string]string{"room": "east"}},
					{Name: "rack-b", ControlPlane: ptr.To(false), Attributes: map[string]string{"room": "west"}},
				},
			},
		},
		&infrav1.Metal3DataTemplate{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dual-nodes"},
			Spec: infrav1.Metal3DataTemplateSpec{
				ClusterName: dualCluster,
				MetaData: &infrav1.MetaData{
					Strings: []infrav1.MetaDataString{{Key: "flavor", Value: "dual"}},
					ObjectNames: []infrav1.MetaDataObjectName{
						{Key: "name", Object: "machine"}, {Key: "local-hostname", Object: "machine"}, {Key: "host", Object: "baremetalhost"},
					},
					Indexes:             []infrav1.MetaDataIndex{{Key: "node", Offset: ptr.To[int32](10), Prefix: "node-"}},
					Namespaces:          []infrav1.MetaDataNamespace{{Key: "namespace"}},
					IPAddressesFromPool: []infrav1.FromPool{fromPool("ip")},
					PrefixesFromPool:    []infrav1.FromPool{fromPool("prefix")},
					GatewaysFromPool:    []infrav1.FromPool{fromPool("gateway")},
					DNSServersFromPool:  []infrav1.FromPool{fromPool("dns")},
					FromHostInterfaces: []infrav1.MetaDataHostInterface{
						{Key: "mac", Interface: "nic-1"}, {Key: "boot-mac", FromBootMAC: ptr.To(true)},
					},
					FromLabels: []infrav1.MetaDataFromLabel{{Key: "rack", Object: "baremetalhost", Label: pool.FailureDomainLabel}},
				},
				NetworkData: &infrav1.NetworkData{
					Links: &infrav1.NetworkDataLink{Ethernets: []infrav1.NetworkDataLinkEthernet{{
						Type: "phy", ID: "nic-1", MTU: 1500, MACAddress: &infrav1.NetworkLinkEthernetMac{FromHostInterface: "nic-1"},
					}}},
					Networks: &infrav1.NetworkDataNetwork{IPv4: []infrav1.NetworkDataIPv4{{
						ID: "nodes", Link: "nic-1", IPAddressFromIPPool: "dual-nodes",
						Routes: []infrav1.NetworkDataRoutev4{{
							Network: "0.0.0.0", Prefix: ptr.To[int32](0),
							Gateway: infrav1.NetworkGatewayv4{FromIPPool: "dual-nodes"},
						}},
					}}},
					Services: &infrav1.NetworkDataService{DNSFromIPPool: "dual-nodes"},
				},
			},
		},
		&infrav1.Metal3MachineTemplate{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dual-workers"},
			Spec:       infrav1.Metal3MachineTemplateSpec{Template: infrav1.Metal3MachineTemplateResource{Spec: machineSpec("worker")}},
		},
		&infrav1.Metal3Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dual-control-plane-0", Labels: map[string]string{
				clusterv1.ClusterNameLabel: dualCluster, clusterv1.MachineControlPlaneLabel: "",
			}},
			Spec: machineSpec("control-plane"),
		},
	}
}

// dualManifests parses the v1beta1 manifests for namespace ns.
func dualManifests(ns string) []*unstructured.Unstructured {
	GinkgoHelper()
	var objects []*unstructured.Unstructured
	text := strings.ReplaceAll(dualV1beta1Manifests, "${NAMESPACE}", ns)
	for _, doc := range regexp.MustCompile(`(?m)^---$`).Split(text, -1) {
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
		Expect(obj.GetAPIVersion()).To(Equal("infrastructure.cluster.x-k8s.io/v1beta1"))
		objects = append(objects, obj)
	}
	return objects
}

// dualTwin is one of the two clusters.
type dualTwin struct {
	version string
	*tenantCluster
}

func (t *dualTwin) key(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: t.namespace, Name: name}
}

// create creates everything of the twin but its workers: hosts, pool,
// Secrets, our kinds in the twin's version, the Cluster and the
// control-plane Machine.
func (t *dualTwin) create() {
	GinkgoHelper()
	mgmt, ns := environment.Management, t.namespace
	Expect(env.CreateNamespace(ctx, mgmt.Client, ns)).To(Succeed())
	Expect(env.AddHosts(ctx, mgmt.Client, ns, ns, 2)).To(Succeed())
	for i, labels := range []map[string]string{
		{dualRoleLabel: "control-plane", pool.FailureDomainLabel: "rack-a"},
		{dualRoleLabel: "worker", pool.FailureDomainLabel: "rack-b"},
	} {
		host := &bmov1alpha1.BareMetalHost{}
		Expect(mgmt.Client.Get(ctx, t.key(fmt.Sprintf("%s-%d", ns, i)), host)).To(Succeed())
		before := host.DeepCopy()
		host.Labels = labels
		Expect(mgmt.Client.Patch(ctx, host, client.MergeFrom(before))).To(Succeed())
	}
	Expect(mgmt.Client.Create(ctx, ipPool("ipam.metal3.io", "v1alpha1", "IPPool", ns, "dual-nodes", map[string]any{
		"namePrefix": "dual-nodes", "prefix": int64(24), "gateway": "192.168.70.1",
		"dnsServers": []any{"192.168.70.2"},
		"pools":      []any{map[string]any{"start": "192.168.70.10", "end": "192.168.70.20"}},
	}))).To(Succeed())
	Expect(mgmt.CreateWorkloadKubeconfig(ctx, environment.Workload, ns, dualCluster)).To(Succeed())

	labels := map[string]string{clusterv1.ClusterNameLabel: dualCluster}
	objects := []client.Object{&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dual-bootstrap", Labels: labels},
		Data:       map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
	}}
	if t.version == "v1beta1" {
		for _, obj := range dualManifests(ns) {
			objects = append(objects, obj)
		}
	} else {
		objects = append(objects, dualV1beta2Objects(ns)...)
	}
	controlPlaneLabels := map[string]string{clusterv1.ClusterNameLabel: dualCluster, clusterv1.MachineControlPlaneLabel: ""}
	objects = append(objects,
		&clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dualCluster},
			Spec:       clusterv1.ClusterSpec{InfrastructureRef: dualInfraRef("Metal3Cluster", dualCluster)},
		},
		&clusterv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dual-control-plane-0", Labels: controlPlaneLabels},
			Spec: clusterv1.MachineSpec{
				ClusterName:       dualCluster,
				Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To("dual-bootstrap")},
				InfrastructureRef: dualInfraRef("Metal3Machine", "dual-control-plane-0"),
				FailureDomain:     "rack-a",
			},
		},
	)
	for _, obj := range objects {
		Expect(mgmt.Client.Create(ctx, obj)).To(Succeed(), "create %T %s/%s", obj, ns, obj.GetName())
	}
}

// createWorkers creates the MachineDeployment of one worker.
func (t *dualTwin) createWorkers() {
	GinkgoHelper()
	selector := map[string]string{"nodepool": "dual-workers"}
	Expect(environment.Management.Client.Create(ctx, &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: t.namespace, Name: "dual-workers"},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: dualCluster,
			Replicas:    ptr.To[int32](1),
			Selector:    metav1.LabelSelector{MatchLabels: selector},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: selector},
				Spec: clusterv1.MachineSpec{
					ClusterName:       dualCluster,
					Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To("dual-bootstrap")},
					InfrastructureRef: dualInfraRef("Metal3MachineTemplate", "dual-workers"),
					FailureDomain:     "rack-b",
				},
			},
		},
	})).To(Succeed())
}

func dualInfraRef(kind, name string) clusterv1.ContractVersionedObjectReference {
	return clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: kind, Name: name}
}

// controlPlaneRendered checks that the control plane's data is rendered.
func (t *dualTwin) controlPlaneRendered(g Gomega) {
	m3m := &infrav1.Metal3Machine{}
	g.Expect(t.hosts.Get(ctx, t.key("dual-control-plane-0"), m3m)).To(Succeed())
	g.Expect(m3m.Status.RenderedData).NotTo(BeNil(), "%s: the control plane has its Metal3Data", t.version)
	data := &infrav1.Metal3Data{}
	g.Expect(t.hosts.Get(ctx, t.key(m3m.Status.RenderedData.Name), data)).To(Succeed())
	g.Expect(data.Status.Ready).To(HaveValue(BeTrue()), "%s: the control plane's data is rendered", t.version)
}

// dualNormalizer replaces what tells the twins apart: the namespace (and with
// it the host names), the workers' generated names, UIDs.
type dualNormalizer struct{ *strings.Replacer }

var (
	dualUUID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	// dualHashed are the hashes of a consumer's UID that end the names of
	// the Secrets next to its host (pool.HashedName).
	dualHashed = regexp.MustCompile(`-(user-data|metadata|network-data)-[0-9a-f]{10}\b`)
	// dualTemplateHash is Cluster API's label on a MachineSet's machines:
	// the template's hash, then the MachineSet's generated suffix.
	dualTemplateHash = regexp.MustCompile(`("machine-template-hash": "[0-9]+)-[a-z0-9]+"`)
)

func (n dualNormalizer) string(s string) string {
	s = dualHashed.ReplaceAllString(n.Replace(s), "-$1-<hash>")
	s = dualTemplateHash.ReplaceAllString(s, `$1-<suffix>"`)
	return dualUUID.ReplaceAllString(s, "<uid>")
}

// dualDropped are keys whose values differ between any two objects: times,
// generations, UIDs, resource versions.
var dualDropped = map[string]bool{
	"lastTransitionTime": true, "lastUpdated": true, "observedGeneration": true,
	"uid": true, "resourceVersion": true, "creationTimestamp": true,
}

// json renders v without dualDropped keys, normalized, indented.
func (n dualNormalizer) json(g Gomega, v any) string {
	raw, err := json.Marshal(v)
	g.Expect(err).NotTo(HaveOccurred())
	var generic any
	g.Expect(json.Unmarshal(raw, &generic)).To(Succeed())
	var drop func(any) any
	drop = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k := range v {
				if dualDropped[k] {
					delete(v, k)
				} else {
					v[k] = drop(v[k])
				}
			}
		case []any:
			for i := range v {
				v[i] = drop(v[i])
			}
		}
		return v
	}
	var out bytes.Buffer
	encoder := json.NewEncoder(&out)
	encoder.SetEscapeHTML(false)
	encoder.SetIndent("", "  ")
	g.Expect(encoder.Encode(drop(generic))).To(Succeed())
	return n.string(strings.TrimSuffix(out.String(), "\n"))
}

// dualKinds are our namespaced kinds the twins have objects of.
var dualKinds = []string{"Metal3Cluster", "Metal3MachineTemplate", "Metal3Machine", "Metal3DataTemplate", "Metal3DataClaim", "Metal3Data"}

// observe returns what the twin looks like from outside, normalized, by
// what it is: our objects read in both versions, the hosts, the Secrets
// next to them, the Machines, Nodes and the Cluster.
func (t *dualTwin) observe(g Gomega) map[string]string {
	c := t.hosts
	machines := &clusterv1.MachineList{}
	g.Expect(c.List(ctx, machines, client.InNamespace(t.namespace))).To(Succeed())
	g.Expect(machines.Items).To(HaveLen(2))
	// Longest first: a worker's name begins with its MachineSet's.
	var pairs []string
	for _, m := range machines.Items {
		if _, cp := m.Labels[clusterv1.MachineControlPlaneLabel]; cp {
			continue
		}
		pairs = append(pairs, m.Name, "<worker>", m.Spec.InfrastructureRef.Name, "<worker>")
		for _, owner := range m.OwnerReferences {
			if owner.Kind == "MachineSet" {
				pairs = append(pairs, owner.Name, "<workers>")
			}
		}
	}
	pairs = append(pairs, t.namespace, "<namespace>")
	n := dualNormalizer{strings.NewReplacer(pairs...)}
	out := map[string]string{}

	for _, kind := range dualKinds {
		for _, version := range []string{"v1beta1", "v1beta2"} {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(schema.GroupVersionKind{Group: infrav1.GroupVersion.Group, Version: version, Kind: kind + "List"})
			g.Expect(c.List(ctx, list, client.InNamespace(t.namespace))).To(Succeed(), "list %s as %s", kind, version)
			g.Expect(list.Items).NotTo(BeEmpty(), "%s as %s", kind, version)
			for _, obj := range list.Items {
				g.Expect(obj.GetAPIVersion()).To(Equal(infrav1.GroupVersion.Group + "/" + version))
				annotations := obj.GetAnnotations()
				// Cluster API's stash of the v1beta2 object, on every
				// v1beta1 read: the v1beta2 read is compared.
				delete(annotations, utilconversion.DataAnnotation)
				out[fmt.Sprintf("%s %s %s", kind, version, n.string(obj.GetName()))] = n.json(g, map[string]any{
					"labels": obj.GetLabels(), "annotations": annotations, "finalizers": obj.GetFinalizers(),
					"ownerReferences": dualOwners(obj.GetOwnerReferences()),
					"spec":            obj.Object["spec"], "status": obj.Object["status"],
				})
			}
		}
	}

	hosts := &bmov1alpha1.BareMetalHostList{}
	g.Expect(c.List(ctx, hosts, client.InNamespace(t.namespace))).To(Succeed())
	g.Expect(hosts.Items).To(HaveLen(2))
	for _, h := range hosts.Items {
		name := n.string(h.Name)
		out["BareMetalHost "+name] = n.json(g, map[string]any{
			"labels": h.Labels, "spec": h.Spec,
			"state": h.Status.Provisioning.State, "image": h.Status.Provisioning.Image, "poweredOn": h.Status.PoweredOn,
		})
		for part, ref := range map[string]*corev1.SecretReference{"userData": h.Spec.UserData, "metaData": h.Spec.MetaData, "networkData": h.Spec.NetworkData} {
			g.Expect(ref).NotTo(BeNil(), "%s: host %s has its %s", t.version, h.Name, part)
			secret := &corev1.Secret{}
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: ref.Name}, secret)).To(Succeed())
			data := map[string]string{}
			for k, v := range secret.Data {
				data[k] = string(v)
			}
			out[fmt.Sprintf("Secret %s of %s", part, name)] = n.json(g, map[string]any{
				"name": secret.Name, "labels": secret.Labels, "type": secret.Type, "data": data,
			})
		}
	}

	for _, m := range machines.Items {
		conditions := make([]string, 0, len(m.Status.Conditions))
		for _, cond := range m.Status.Conditions {
			conditions = append(conditions, fmt.Sprintf("%s=%s %s", cond.Type, cond.Status, cond.Reason))
		}
		sort.Strings(conditions)
		node := &corev1.Node{}
		g.Expect(m.Status.NodeRef.IsDefined()).To(BeTrue())
		g.Expect(environment.Workload.Client.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, node)).To(Succeed())
		out["Machine "+n.string(m.Name)] = n.json(g, map[string]any{
			"phase": m.Status.Phase, "providerID": m.Spec.ProviderID, "failureDomain": m.Spec.FailureDomain,
			"conditions": conditions, "addresses": m.Status.Addresses, "nodeRef": m.Status.NodeRef,
			"nodeProviderID": node.Spec.ProviderID,
		})
	}

	cluster := t.cluster()
	out["Cluster"] = n.json(g, map[string]any{
		"phase": cluster.Status.Phase, "initialization": cluster.Status.Initialization,
		"failureDomains": cluster.Status.FailureDomains,
	})
	return out
}

// dualAsV1beta1Says is the observation key of the twin written as v1beta2,
// less what v1beta1 cannot say, so that its twin written as v1beta1 cannot
// store it either. One thing only: a route's prefix is an omitempty int in
// v1beta1, so the default route's "prefix: 0" is no prefix there (as in
// upstream CAPM3's conversion), where v1beta2 (*int32) keeps the 0. Both
// render the same route, which the Secrets compared show.
func dualAsV1beta1Says(g Gomega, key, observed string) string {
	if key != "Metal3DataTemplate v1beta2 dual-nodes" {
		return observed
	}
	var obj map[string]any
	g.Expect(json.Unmarshal([]byte(observed), &obj)).To(Succeed())
	networks := obj["spec"].(map[string]any)["networkData"].(map[string]any)["networks"].(map[string]any)
	route := networks["ipv4"].([]any)[0].(map[string]any)["routes"].([]any)[0].(map[string]any)
	g.Expect(route).To(HaveKeyWithValue("prefix", float64(0)))
	delete(route, "prefix")
	var out bytes.Buffer
	encoder := json.NewEncoder(&out)
	encoder.SetEscapeHTML(false)
	encoder.SetIndent("", "  ")
	g.Expect(encoder.Encode(obj)).To(Succeed())
	return strings.TrimSuffix(out.String(), "\n")
}

// dualOwners are owner references by kind and name.
func dualOwners(refs []metav1.OwnerReference) []string {
	var out []string
	for _, ref := range refs {
		out = append(out, ref.Kind+"/"+ref.Name)
	}
	slices.Sort(out)
	return out
}

// dualContains checks that got holds every field of want, as written.
func dualContains(g Gomega, path string, want, got any) {
	switch w := want.(type) {
	case map[string]any:
		gm, ok := got.(map[string]any)
		g.Expect(ok).To(BeTrue(), "%s: a map, got %v", path, got)
		for k, v := range w {
			dualContains(g, path+"."+k, v, gm[k])
		}
	case []any:
		gl, ok := got.([]any)
		g.Expect(ok).To(BeTrue(), "%s: a list, got %v", path, got)
		g.Expect(gl).To(HaveLen(len(w)), path)
		for i := range w {
			dualContains(g, fmt.Sprintf("%s[%d]", path, i), w[i], gl[i])
		}
	default:
		// v1beta1's omitempty fields read a written zero (prefix: 0) back
		// as absent: the same value in that version.
		if got == nil && (want == float64(0) || want == false || want == "") {
			return
		}
		g.Expect(got).To(Equal(want), path)
	}
}

// dualGeneric is v as JSON decodes it, numbers as float64.
func dualGeneric(v any) any {
	raw, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	var out any
	Expect(json.Unmarshal(raw, &out)).To(Succeed())
	return out
}

var _ = Describe("A cluster written as v1beta1 manifests", func() {
	It("provisions, renders, reports and releases exactly as the same cluster written as v1beta2 objects", func() {
		mgmt := environment.Management
		var twins []*dualTwin
		for _, version := range []string{"v1beta2", "v1beta1"} {
			ns := "dual-" + version
			twins = append(twins, &dualTwin{version: version, tenantCluster: &tenantCluster{
				proxy: management, namespace: ns, name: dualCluster, hosts: mgmt.Client, hostNamespaces: []string{ns},
			}})
			diagnoseOnFailure(mgmt.Name, mgmt.Client, ns)
		}
		v1beta2Twin, v1beta1Twin := twins[0], twins[1]

		By("Creating both clusters' control planes, one from v1beta2 objects, one from v1beta1 manifests")
		for _, t := range twins {
			t.create()
		}
		By("Reading the v1beta1 manifests back as v1beta1, as written")
		for _, written := range dualManifests(v1beta1Twin.namespace) {
			read := &unstructured.Unstructured{}
			read.SetGroupVersionKind(written.GroupVersionKind())
			Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(written), read)).To(Succeed())
			dualContains(Default, written.GetKind()+".spec", dualGeneric(written.Object["spec"]), dualGeneric(read.Object["spec"]))
			Expect(read.GetLabels()).To(Equal(written.GetLabels()), written.GetKind())
		}
		By("Waiting for the control planes' data, then adding a worker to each")
		// In the same order in both twins: indexes and addresses too.
		Eventually(func(g Gomega) {
			for _, t := range twins {
				t.controlPlaneRendered(g)
			}
		}, intervals("wait-machines-running")...).Should(Succeed())
		for _, t := range twins {
			t.createWorkers()
		}
		for _, t := range twins {
			t.waitMachinesRunning(2)
		}

		By("Checking that the hosts run the image as written, in the failure domains asked for")
		for _, t := range twins {
			for _, h := range t.boundHosts(Default) {
				Expect(h.Spec.Image).NotTo(BeNil())
				Expect(*h.Spec.Image).To(Equal(bmov1alpha1.Image{
					URL: env.Image.URL, Checksum: *env.Image.Checksum,
					ChecksumType: bmov1alpha1.SHA256, DiskFormat: ptr.To("qcow2"),
				}), "%s: host %s", t.version, h.Name)
				Expect(h.Spec.AutomatedCleaningMode).To(Equal(bmov1alpha1.CleaningModeDisabled))
				Expect(h.Status.Provisioning.State).To(Equal(bmov1alpha1.StateProvisioned))
			}
			machines := &infrav1.Metal3MachineList{}
			Expect(mgmt.Client.List(ctx, machines, client.InNamespace(t.namespace))).To(Succeed())
			Expect(machines.Items).To(HaveLen(2))
			for _, m3m := range machines.Items {
				host, domain := t.namespace+"-1", "rack-b"
				if _, cp := m3m.Labels[clusterv1.MachineControlPlaneLabel]; cp {
					host, domain = t.namespace+"-0", "rack-a"
				}
				Expect(m3m.Status.FailureDomain).To(Equal(domain), "%s: %s", t.version, m3m.Name)
				Expect(m3m.Spec.ProviderID).To(Equal("metal3://"+t.namespace+"/"+host+"/"+m3m.Name), t.version)
			}
		}

		By("Checking that both clusters look the same, object by object, in v1beta1 and v1beta2")
		var seen [2]map[string]string
		Eventually(func(g Gomega) {
			for i, t := range twins {
				seen[i] = t.observe(g)
			}
			g.Expect(slices.Sorted(maps.Keys(seen[1]))).To(Equal(slices.Sorted(maps.Keys(seen[0]))), "the same objects")
			var diffs []string
			for _, key := range slices.Sorted(maps.Keys(seen[0])) {
				want := dualAsV1beta1Says(g, key, seen[0][key])
				if seen[1][key] != want {
					diffs = append(diffs, fmt.Sprintf("%s (-written as v1beta2 +written as v1beta1):\n%s", key,
						cmp.Diff(strings.Split(want, "\n"), strings.Split(seen[1][key], "\n"))))
				}
			}
			g.Expect(diffs).To(BeEmpty(), "what differs between the twins:\n%s", strings.Join(diffs, "\n"))
		}).Should(Succeed())
		// What was compared: 6 kinds of ours (9 objects) in 2 versions, 2
		// hosts and their 6 Secrets, 2 Machines, the Cluster; and it holds
		// what a user checks by hand.
		Expect(seen[0]).To(HaveLen(29))
		for _, want := range []string{
			`ip: 192.168.70.10`, `gateway: 192.168.70.1`, `prefix: \"24\"`, `node: node-10`, `rack: rack-a`,
			`mac: ab:cd:12:34:56:78`, `namespace: <namespace>`, `name: dual-control-plane-0`,
			`providerid: <namespace>/<namespace>-0/dual-control-plane-0`,
		} {
			Expect(seen[0]["Secret metaData of <namespace>-0"]).To(ContainSubstring(want))
		}
		Expect(seen[0]["Secret metaData of <namespace>-1"]).To(ContainSubstring(`ip: 192.168.70.11`))
		Expect(seen[0]["Secret networkData of <namespace>-1"]).To(ContainSubstring(`192.168.70.11`))
		Expect(seen[0]["Metal3Machine v1beta1 dual-control-plane-0"]).To(ContainSubstring(`"format": "qcow2"`))
		Expect(seen[0]["Metal3Machine v1beta2 dual-control-plane-0"]).To(ContainSubstring(`"diskFormat": "qcow2"`))

		By("Checking each Metal3Machine's status in both versions")
		for _, t := range twins {
			machines := &infrav1.Metal3MachineList{}
			Expect(mgmt.Client.List(ctx, machines, client.InNamespace(t.namespace))).To(Succeed())
			Expect(machines.Items).To(HaveLen(2))
			for _, m3m := range machines.Items {
				old := &infrav1beta1.Metal3Machine{}
				Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(&m3m), old)).To(Succeed())
				Expect(m3m.Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
				Expect(old.Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
				Expect(m3m.Spec.ProviderID).To(MatchRegexp(`^metal3://` + t.namespace + `/` + t.namespace + `-[01]/` + m3m.Name + `$`))
				Expect(old.Spec.ProviderID).To(HaveValue(Equal(m3m.Spec.ProviderID)))
				Expect(old.Spec.Image.DiskFormat).To(HaveValue(Equal("qcow2")))
				for _, condition := range []string{"Ready", infrav1.HostAssociatedCondition, infrav1.HostProvisionedCondition, infrav1.DataReadyCondition} {
					Expect(m3m.Status.Conditions).To(ContainElement(And(
						HaveField("Type", condition), HaveField("Status", metav1.ConditionTrue))), "%s: %s", t.version, m3m.Name)
				}
				Expect(old.Status.Conditions).To(Equal(m3m.Status.Conditions))
			}
		}

		By("Deleting both clusters: every host is released")
		Expect(mgmt.Client.Delete(ctx, v1beta1Twin.cluster())).To(Succeed())
		v1beta2Twin.deleteAndWaitReleased()
		v1beta1Twin.deleteAndWaitReleased()
		for _, t := range twins {
			Eventually(func(g Gomega) {
				claims := &unstructured.UnstructuredList{}
				claims.SetGroupVersionKind(schema.GroupVersionKind{Group: "ipam.metal3.io", Version: "v1alpha1", Kind: "IPClaimList"})
				g.Expect(mgmt.Client.List(ctx, claims, client.InNamespace(t.namespace))).To(Succeed())
				g.Expect(claims.Items).To(BeEmpty(), t.version)
				for _, kind := range dualKinds {
					list := &unstructured.UnstructuredList{}
					list.SetGroupVersionKind(infrav1.GroupVersion.WithKind(kind + "List"))
					g.Expect(mgmt.Client.List(ctx, list, client.InNamespace(t.namespace))).To(Succeed())
					// The templates are left to the garbage collector,
					// which these API servers do not run.
					if kind != "Metal3MachineTemplate" && kind != "Metal3DataTemplate" {
						g.Expect(list.Items).To(BeEmpty(), "%s: %s", t.version, kind)
					}
				}
			}, intervals("wait-deleted")...).Should(Succeed())
		}
	})
})
