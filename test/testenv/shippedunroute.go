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

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// UnrouteShippedWebhooks gives the webhook configurations and CRDs of s on
// e back the Service calls of s's manifests that RouteShippedWebhooks
// replaced with loopback URLs, keeping the CA bundles it injected: the
// objects as a cluster has them, where cert-manager's CA injector wrote
// the CA and the Service routes the calls. Run it before anything patches
// them from a release as `clusterctl upgrade` does: its JSON merge patch
// of a release's CRD (which calls the Service) would keep the loopback URL
// beside the Service, which the API server refuses. Objects no longer
// there, or no longer routed, are left alone.
func (e *Env) UnrouteShippedWebhooks(t T, s *Shipped) {
	t.Helper()
	ctx := context.Background()
	c := e.shippedWebhooksClient(t)
	update := func(obj client.Object, unroute func() bool) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			if !unroute() {
				return nil
			}
			return c.Update(ctx, obj)
		}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("unroute the webhooks of %T %s: %v", obj, obj.GetName(), err)
		}
	}
	// unroute puts service back in live in place of a URL.
	unroute := func(live *admissionregistrationv1.WebhookClientConfig, service *admissionregistrationv1.ServiceReference) bool {
		if service == nil || live.URL == nil {
			return false
		}
		live.URL, live.Service = nil, service.DeepCopy()
		return true
	}
	for _, obj := range s.objects {
		switch obj.GetKind() {
		case "MutatingWebhookConfiguration":
			shipped := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, shipped); err != nil {
				t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
			services := map[string]*admissionregistrationv1.ServiceReference{}
			for _, w := range shipped.Webhooks {
				services[w.Name] = w.ClientConfig.Service
			}
			live := &admissionregistrationv1.MutatingWebhookConfiguration{}
			live.Name = shipped.Name
			update(live, func() bool {
				changed := false
				for i := range live.Webhooks {
					changed = unroute(&live.Webhooks[i].ClientConfig, services[live.Webhooks[i].Name]) || changed
				}
				return changed
			})
		case "ValidatingWebhookConfiguration":
			shipped := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, shipped); err != nil {
				t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
			services := map[string]*admissionregistrationv1.ServiceReference{}
			for _, w := range shipped.Webhooks {
				services[w.Name] = w.ClientConfig.Service
			}
			live := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			live.Name = shipped.Name
			update(live, func() bool {
				changed := false
				for i := range live.Webhooks {
					changed = unroute(&live.Webhooks[i].ClientConfig, services[live.Webhooks[i].Name]) || changed
				}
				return changed
			})
		case "CustomResourceDefinition":
			shipped := &apiextensionsv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, shipped); err != nil {
				t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
			conversion := shipped.Spec.Conversion
			if conversion == nil || conversion.Webhook == nil || conversion.Webhook.ClientConfig == nil || conversion.Webhook.ClientConfig.Service == nil {
				continue
			}
			service := conversion.Webhook.ClientConfig.Service
			live := &apiextensionsv1.CustomResourceDefinition{}
			live.Name = shipped.Name
			update(live, func() bool {
				liveConversion := live.Spec.Conversion
				if liveConversion == nil || liveConversion.Webhook == nil || liveConversion.Webhook.ClientConfig == nil || liveConversion.Webhook.ClientConfig.URL == nil {
					return false
				}
				liveConversion.Webhook.ClientConfig.URL = nil
				liveConversion.Webhook.ClientConfig.Service = service.DeepCopy()
				return true
			})
		}
	}
}
