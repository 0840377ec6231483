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
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// KustomizeBuild renders a kustomization directory of the repository (e.g.
// "config/crd") exactly as `kustomize build` would, so tests install what
// users install rather than the raw controller-gen output.
func KustomizeBuild(t T, dir string) []*unstructured.Unstructured {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatalf("%v", err)
	}
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	objs := make([]*unstructured.Unstructured, 0, resMap.Size())
	for _, res := range resMap.Resources() {
		m, err := res.Map()
		if err != nil {
			t.Fatalf("kustomize build %s: %v", dir, err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs
}

// ProviderCRDs returns the provider's CRDs built from config/crd, labels included.
func ProviderCRDs(t T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, obj := range KustomizeBuild(t, "config/crd") {
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
			t.Fatalf("decode CRD %s: %v", obj.GetName(), err)
		}
		crds = append(crds, crd)
	}
	if len(crds) == 0 {
		t.Fatal("config/crd produced no CRDs")
	}
	return crds
}
