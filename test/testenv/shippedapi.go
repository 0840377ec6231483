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

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// shippedAPIKinds are what InstallShippedAPI writes: the component's API
// and how the API server reaches its webhooks.
var shippedAPIKinds = map[string]bool{
	"CustomResourceDefinition": true, "Service": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
}

// InstallShippedAPI installs s's CRDs, webhook configurations and webhook
// Service on e as `clusterctl upgrade` does: an object already there gets
// s's spec (a CRD keeps its status, so its storedVersions), others are
// created. RouteShippedWebhooks then makes the webhooks callable.
func (e *Env) InstallShippedAPI(t T, s *Shipped) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range s.objects {
		if !shippedAPIKinds[obj.GetKind()] {
			continue
		}
		if obj.GetKind() == "CustomResourceDefinition" {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
				t.Fatalf("CRD %s: %v", obj.GetName(), err)
			}
			e.installCRD(t, crd)
			continue
		}
		desired := obj.DeepCopy()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			existing := desired.DeepCopy()
			err := e.Client.Get(ctx, client.ObjectKeyFromObject(desired), existing)
			if apierrors.IsNotFound(err) {
				return e.Client.Create(ctx, desired.DeepCopy())
			}
			if err != nil {
				return err
			}
			update := desired.DeepCopy()
			update.SetResourceVersion(existing.GetResourceVersion())
			return e.Client.Update(ctx, update)
		}); err != nil {
			t.Fatalf("install %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

func (e *Env) installCRD(t T, desired *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := context.Background()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		existing := &apiextensionsv1.CustomResourceDefinition{}
		err := e.Client.Get(ctx, client.ObjectKeyFromObject(desired), existing)
		if apierrors.IsNotFound(err) {
			return e.Client.Create(ctx, desired.DeepCopy())
		}
		if err != nil {
			return err
		}
		existing.Labels, existing.Annotations = desired.Labels, desired.Annotations
		existing.Spec = desired.Spec
		return e.Client.Update(ctx, existing)
	}); err != nil {
		t.Fatalf("install CRD %s: %v", desired.Name, err)
	}
}
