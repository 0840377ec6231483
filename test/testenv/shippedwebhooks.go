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
	"net"
	"os"
	"path/filepath"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ShippedWebhooks is where the API server calls a shipped component's
// webhooks once RouteShippedWebhooks has wired them: its webhook server
// must listen on Port with the certificate in CertDir.
type ShippedWebhooks struct {
	// Port is the loopback port the API server calls.
	Port int
	// CertDir holds tls.crt, tls.key and ca.crt: the Certificate's Secret
	// as the kubelet would mount it into the Deployment's Pod.
	CertDir string
}

// injectCAFrom is cert-manager's CA injector annotation: "namespace/name"
// of the Certificate whose CA goes into the object's caBundles.
const injectCAFrom = "cert-manager.io/inject-ca-from"

// RouteShippedWebhooks makes the webhooks and conversion webhooks that
// s's Service serves callable on the environment, after `clusterctl init`
// (or upgrade) installed s: it does what cert-manager, its CA injector and
// the cluster network would. It issues s's cert-manager Certificate (its
// DNS names, and 127.0.0.1) into the Certificate's Secret and into CertDir;
// injects the issuer's CA into the webhook configurations and CRDs
// annotated for that Certificate, as the CA injector does (a configuration
// missing the annotation keeps no CA, and its calls fail as they would in a
// cluster); and, since no kube-proxy routes the Service here, points every
// webhook that calls the Service at https://127.0.0.1:Port instead, with
// the same path. Run it again after anything reinstalls the objects.
func (e *Env) RouteShippedWebhooks(t T, s *Shipped) ShippedWebhooks {
	t.Helper()
	ctx := context.Background()
	c := e.shippedWebhooksClient(t)

	certificate := s.certificate(t)
	certRef := certificate.GetNamespace() + "/" + certificate.GetName()
	secretName, _, _ := unstructured.NestedString(certificate.Object, "spec", "secretName")
	dnsNames, _, _ := unstructured.NestedStringSlice(certificate.Object, "spec", "dnsNames")
	if secretName == "" || len(dnsNames) == 0 {
		t.Fatalf("Certificate %s names no secret or no DNS name", certRef)
	}
	services := map[types.NamespacedName]bool{}
	for _, obj := range s.objects {
		if obj.GetKind() == "Service" && obj.GetAPIVersion() == "v1" {
			services[types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}] = true
		}
	}

	// The issuer: a CA and a serving certificate signed by it.
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(dnsNames[0], []net.IP{net.IPv4(127, 0, 0, 1)}, dnsNames[1:])
	if err != nil {
		t.Fatalf("issue Certificate %s: %v", certRef, err)
	}
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil || len(certs) != 2 {
		t.Fatalf("issue Certificate %s: %d certificates, %v", certRef, len(certs), err)
	}
	caPEM, err := certutil.EncodeCertificates(certs[1])
	if err != nil {
		t.Fatalf("encode the CA of Certificate %s: %v", certRef, err)
	}
	files := map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": caPEM}

	// cert-manager: the Certificate's Secret.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: certificate.GetNamespace(), Name: secretName}}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		err := c.Get(ctx, client.ObjectKeyFromObject(secret), secret)
		if apierrors.IsNotFound(err) {
			secret.Type, secret.Data = corev1.SecretTypeTLS, files
			return c.Create(ctx, secret)
		}
		if err != nil {
			return err
		}
		secret.Data = files
		return c.Update(ctx, secret)
	}); err != nil {
		t.Fatalf("write Secret %s of Certificate %s: %v", secretName, certRef, err)
	}
	// The kubelet: the Secret mounted for the Pod.
	certDir := filepath.Join(t.TempDir(), "webhook-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		t.Fatalf("webhook cert dir: %v", err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
	}

	_, portText, err := net.SplitHostPort(FreeLoopbackAddr(t))
	if err != nil {
		t.Fatalf("webhook port: %v", err)
	}
	port, _ := strconv.Atoi(portText)
	route := func(annotations map[string]string, config *admissionregistrationv1.WebhookClientConfig) bool {
		changed := false
		if config.Service != nil && services[types.NamespacedName{Namespace: config.Service.Namespace, Name: config.Service.Name}] {
			url := "https://" + net.JoinHostPort("127.0.0.1", portText)
			if config.Service.Path != nil {
				url += *config.Service.Path
			}
			config.Service, config.URL = nil, &url
			changed = true
		}
		if annotations[injectCAFrom] == certRef {
			config.CABundle = caPEM
			changed = true
		}
		return changed
	}

	update := func(obj client.Object, routeAll func() bool) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			if !routeAll() {
				return nil
			}
			return c.Update(ctx, obj)
		}); err != nil {
			t.Fatalf("route the webhooks of %T %s: %v", obj, obj.GetName(), err)
		}
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	validating := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	for _, list := range []client.ObjectList{mutating, validating, crds} {
		if err := c.List(ctx, list); err != nil {
			t.Fatalf("list webhooks: %v", err)
		}
	}
	for i := range mutating.Items {
		obj := &mutating.Items[i]
		update(obj, func() bool {
			changed := false
			for j := range obj.Webhooks {
				changed = route(obj.Annotations, &obj.Webhooks[j].ClientConfig) || changed
			}
			return changed
		})
	}
	for i := range validating.Items {
		obj := &validating.Items[i]
		update(obj, func() bool {
			changed := false
			for j := range obj.Webhooks {
				changed = route(obj.Annotations, &obj.Webhooks[j].ClientConfig) || changed
			}
			return changed
		})
	}
	for i := range crds.Items {
		obj := &crds.Items[i]
		update(obj, func() bool {
			conversion := obj.Spec.Conversion
			if conversion == nil || conversion.Strategy != apiextensionsv1.WebhookConverter || conversion.Webhook == nil || conversion.Webhook.ClientConfig == nil {
				return false
			}
			// The CRD's client config is its own type; route it as an
			// admission webhook's and copy the result back.
			crdConfig := conversion.Webhook.ClientConfig
			config := admissionregistrationv1.WebhookClientConfig{URL: crdConfig.URL, CABundle: crdConfig.CABundle}
			if crdConfig.Service != nil {
				config.Service = &admissionregistrationv1.ServiceReference{
					Namespace: crdConfig.Service.Namespace, Name: crdConfig.Service.Name, Path: crdConfig.Service.Path, Port: crdConfig.Service.Port,
				}
			}
			if !route(obj.Annotations, &config) {
				return false
			}
			crdConfig.URL, crdConfig.CABundle = config.URL, config.CABundle
			if config.Service == nil {
				crdConfig.Service = nil
			}
			return true
		})
	}
	return ShippedWebhooks{Port: port, CertDir: certDir}
}

// shippedWebhooksClient is a client for the environment that knows the
// webhook configuration and CRD types, whatever the environment's scheme.
func (e *Env) shippedWebhooksClient(t T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatalf("scheme: %v", err)
		}
	}
	c, err := client.New(e.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c
}

// certificate is the one cert-manager Certificate of s.
func (s *Shipped) certificate(t T) *unstructured.Unstructured {
	t.Helper()
	var found *unstructured.Unstructured
	for _, obj := range s.objects {
		if obj.GetKind() == "Certificate" && obj.GroupVersionKind().Group == "cert-manager.io" {
			if found != nil {
				t.Fatalf("more than one Certificate in the shipped manifests: %s, %s", found.GetName(), obj.GetName())
			}
			found = obj
		}
	}
	if found == nil {
		t.Fatalf("no cert-manager Certificate in the shipped manifests")
	}
	return found
}
