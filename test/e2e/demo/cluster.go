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
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/config"
)

// demoVariables are the template variables of the demo cluster
// (templates/README.md documents them).
func demoVariables(poolKubeconfig []byte) map[string]string {
	return map[string]string{
		"CLUSTER_APIENDPOINT_HOST": "192.168.111.249",
		"IMAGE_URL":                "http://172.22.0.1/images/ubuntu-24.04.qcow2",
		"IMAGE_CHECKSUM":           "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"IMAGE_FORMAT":             "qcow2",
		"POOL_KUBECONFIG_B64":      base64.StdEncoding.EncodeToString(poolKubeconfig),
	}
}

// generateCluster renders templates/cluster-template-identity.yaml with the
// clusterctl library, as `clusterctl generate cluster --flavor identity
// --from templates/cluster-template-identity.yaml` does.
func generateCluster(ctx context.Context, root, kubeconfig, namespace, name string, controlPlane, workers int64, variables map[string]string) ([]unstructured.Unstructured, error) {
	reader := config.NewMemoryReader()
	for k, v := range variables {
		reader.Set(k, v)
	}
	cfg, err := config.New(ctx, "", config.InjectReader(reader))
	if err != nil {
		return nil, err
	}
	c, err := client.New(ctx, "", client.InjectConfig(cfg))
	if err != nil {
		return nil, err
	}
	template, err := c.GetClusterTemplate(ctx, client.GetClusterTemplateOptions{
		Kubeconfig:               client.Kubeconfig{Path: kubeconfig},
		URLSource:                &client.URLSourceOptions{URL: filepath.Join(root, "templates", "cluster-template-identity.yaml")},
		TargetNamespace:          namespace,
		ClusterName:              name,
		KubernetesVersion:        "v1.36.0",
		ControlPlaneMachineCount: ptr.To(controlPlane),
		WorkerMachineCount:       ptr.To(workers),
	})
	if err != nil {
		return nil, fmt.Errorf("clusterctl generate cluster --flavor identity: %w", err)
	}
	return template.Objs(), nil
}

// withoutKubeadm replaces what needs kubeadm and a live control plane, which
// this environment has not got, by what Cluster API accepts without them:
// the KubeadmControlPlane by plain control-plane Machines (each with its
// Metal3Machine from the control plane's Metal3MachineTemplate), the
// KubeadmConfigTemplate by bootstrap data in a Secret. Everything else is
// applied as generated.
func withoutKubeadm(objs []unstructured.Unstructured, namespace, name string) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	var controlPlaneReplicas int64
	var controlPlaneSpec map[string]any
	// The Metal3Machines are written in the template's version of our API,
	// which its spec is shaped for.
	var controlPlaneAPIVersion string
	for i := range objs {
		obj := objs[i]
		switch obj.GetKind() {
		case "KubeadmControlPlane":
			// Decoded from YAML, a number may be a float64.
			switch replicas, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas"); r := replicas.(type) {
			case int64:
				controlPlaneReplicas = r
			case float64:
				controlPlaneReplicas = int64(r)
			default:
				return nil, fmt.Errorf("KubeadmControlPlane %s: spec.replicas is %v", obj.GetName(), replicas)
			}
			continue
		case "KubeadmConfigTemplate":
			continue
		case "Cluster":
			unstructured.RemoveNestedField(obj.Object, "spec", "controlPlaneRef")
		case "MachineDeployment":
			if err := unstructured.SetNestedMap(obj.Object, map[string]any{"dataSecretName": name + "-bootstrap"},
				"spec", "template", "spec", "bootstrap"); err != nil {
				return nil, err
			}
		case "Metal3MachineTemplate":
			if obj.GetName() == name+"-control-plane" {
				spec, _, err := unstructured.NestedMap(obj.Object, "spec", "template", "spec")
				if err != nil {
					return nil, err
				}
				controlPlaneSpec = spec
				controlPlaneAPIVersion = obj.GetAPIVersion()
			}
		}
		out = append(out, obj)
	}
	if controlPlaneSpec == nil {
		return nil, fmt.Errorf("the template has no Metal3MachineTemplate %s-control-plane", name)
	}
	out = append(out, unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"namespace": namespace, "name": name + "-bootstrap",
			"labels": map[string]any{"cluster.x-k8s.io/cluster-name": name}},
		"stringData": map[string]any{"value": "#cloud-config\n", "format": "cloud-config"},
	}})
	for i := range controlPlaneReplicas {
		machine := name + "-control-plane-" + strconv.FormatInt(i, 10)
		labels := map[string]any{"cluster.x-k8s.io/cluster-name": name, "cluster.x-k8s.io/control-plane": ""}
		out = append(out,
			unstructured.Unstructured{Object: map[string]any{
				"apiVersion": controlPlaneAPIVersion, "kind": "Metal3Machine",
				"metadata": map[string]any{"namespace": namespace, "name": machine, "labels": labels},
				"spec":     runtimeDeepCopy(controlPlaneSpec),
			}},
			unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
				"metadata": map[string]any{"namespace": namespace, "name": machine, "labels": labels},
				"spec": map[string]any{
					"clusterName": name,
					"bootstrap":   map[string]any{"dataSecretName": name + "-bootstrap"},
					"infrastructureRef": map[string]any{
						"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3Machine", "name": machine,
					},
				},
			}},
		)
	}
	return out, nil
}

func runtimeDeepCopy(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}
