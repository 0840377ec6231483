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

package webhooks_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestServedVersionsConvert writes each object in one served version and
// reads it in the other through a real API server, which calls the
// provider's /convert webhook: what a user wrote in v1beta2 reads as the
// same thing in v1beta1 and back, and the reverse.
func TestServedVersionsConvert(t *testing.T) {
	c := apiServerWithWebhooks(t)
	ctx := context.Background()

	for _, tc := range []struct {
		name     string
		manifest string
		// readAs is the other version; want are field paths of the object
		// read in that version, and the values they must hold.
		readAs string
		want   map[string]any
	}{
		{
			name: "v1beta2 Metal3Machine reads as v1beta1",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Machine
metadata: {name: m-v1beta2, namespace: tenant-a}
spec:
  image: {url: "http://images.example/node.qcow2", checksum: "http://images.example/node.qcow2.sha256", checksumType: sha256, diskFormat: qcow2}
  hostSelector: {matchLabels: {rack: r1}}
  dataTemplate: {name: workers}
  automatedCleaningMode: disabled
  identityRef: {name: pool-kubeconfig}
`,
			readAs: "v1beta1",
			want: map[string]any{
				"spec.image.format":                  "qcow2",
				"spec.image.checksumType":            "sha256",
				"spec.hostSelector.matchLabels.rack": "r1",
				"spec.dataTemplate.name":             "workers",
				"spec.automatedCleaningMode":         "disabled",
				"spec.identityRef.name":              "pool-kubeconfig",
			},
		},
		{
			name: "v1beta1 Metal3Machine reads as v1beta2",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3Machine
metadata: {name: m-v1beta1, namespace: tenant-a}
spec:
  image: {url: "http://images.example/node.iso", format: live-iso}
  hostMode: HostClaim
`,
			readAs: "v1beta2",
			want: map[string]any{
				"spec.image.diskFormat": "live-iso",
				"spec.hostMode":         "HostClaim",
			},
		},
		{
			name: "v1beta1 Metal3Cluster's failure domains and noCloudProvider read as v1beta2",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3Cluster
metadata: {name: c-v1beta1, namespace: tenant-a}
spec:
  controlPlaneEndpoint: {host: 192.0.2.10, port: 6443}
  noCloudProvider: true
  failureDomains:
    rack-b: {controlPlane: true}
    rack-a: {attributes: {row: "1"}}
`,
			readAs: "v1beta2",
			want: map[string]any{
				"spec.cloudProviderEnabled":            false,
				"spec.failureDomains.0.name":           "rack-a",
				"spec.failureDomains.0.attributes.row": "1",
				"spec.failureDomains.1.name":           "rack-b",
				"spec.failureDomains.1.controlPlane":   true,
			},
		},
		{
			// retryLimit has no upper bound, in either version, as upstream.
			name: "v1beta2 Metal3Remediation's timeoutSeconds reads as a v1beta1 timeout, its retryLimit of 25 as is",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: Metal3Remediation
metadata: {name: r-v1beta2, namespace: tenant-a}
spec:
  strategy: {type: Reboot, retryLimit: 25, timeoutSeconds: 300}
`,
			readAs: "v1beta1",
			want: map[string]any{
				"spec.strategy.timeout":    "5m0s",
				"spec.strategy.retryLimit": int64(25),
			},
		},
		{
			name: "v1beta1 Metal3RemediationTemplate's retryLimit of 25 reads as v1beta2",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3RemediationTemplate
metadata: {name: rt-v1beta1, namespace: tenant-a}
spec:
  template:
    spec:
      strategy: {type: Reboot, retryLimit: 25, timeout: 5m0s}
`,
			readAs: "v1beta2",
			want: map[string]any{
				"spec.template.spec.strategy.retryLimit":     int64(25),
				"spec.template.spec.strategy.timeoutSeconds": int64(300),
			},
		},
		{
			name: "v1beta1 Metal3DataTemplate's bond parameters and pools read as v1beta2",
			manifest: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3DataTemplate
metadata: {name: dt-v1beta1, namespace: tenant-a}
spec:
  clusterName: c1
  metaData:
    ipAddressesFromIPPool: [{key: ip, name: pool-a, apiGroup: ipam.metal3.io, kind: IPPool}]
  networkData:
    links:
      ethernets: [{type: phy, id: eth0, macAddress: {fromHostInterface: eth0}}]
      bonds:
      - {bondMode: active-backup, id: bond0, macAddress: {fromHostInterface: eth0}, bondLinks: [eth0], parameters: {miimon: 100, updelay: 200}}
`,
			readAs: "v1beta2",
			want: map[string]any{
				"spec.metaData.ipAddressesFromPool.0.name":                        "pool-a",
				"spec.networkData.links.bonds.0.parameters.0.name":                "miimon",
				"spec.networkData.links.bonds.0.parameters.1.name":                "updelay",
				"spec.networkData.links.ethernets.0.macAddress.fromHostInterface": "eth0",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := fromYAML(t, tc.manifest)
			g.Expect(c.Create(ctx, obj)).To(Succeed())

			read := &unstructured.Unstructured{}
			read.SetAPIVersion("infrastructure.cluster.x-k8s.io/" + tc.readAs)
			read.SetKind(obj.GetKind())
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), read)).To(Succeed())
			for path, want := range tc.want {
				g.Expect(fieldAt(read.Object, path)).To(Equal(want), "%s in %s", path, tc.readAs)
			}
			if tc.readAs == "v1beta1" {
				// v1beta2 carries what only v1beta1 can say in an
				// annotation; v1beta1 readers never see it.
				g.Expect(read.GetAnnotations()).NotTo(HaveKey("infrastructure.cluster.x-k8s.io/v1beta1-conversion-data"))
			}
		})
	}
}

// fieldAt is the value at a dotted path of an unstructured object; numeric
// segments index lists.
func fieldAt(obj map[string]any, path string) any {
	var current any = obj
	for _, segment := range splitPath(path) {
		switch node := current.(type) {
		case map[string]any:
			current = node[segment]
		case []any:
			i := 0
			for _, r := range segment {
				i = i*10 + int(r-'0')
			}
			if i >= len(node) {
				return nil
			}
			current = node[i]
		default:
			return nil
		}
	}
	return current
}

func splitPath(path string) []string {
	var segments []string
	start := 0
	for i := range len(path) {
		if path[i] == '.' {
			segments = append(segments, path[start:i])
			start = i + 1
		}
	}
	return append(segments, path[start:])
}
