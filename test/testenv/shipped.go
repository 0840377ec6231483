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
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/yamlprocessor"
	utilyaml "sigs.k8s.io/cluster-api/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/metal3-io/cluster-api-provider-metal3/internal/release"
)

// Shipped is a component as its manifests install it, for tests to run its
// binary the way users do: as the ServiceAccount its Deployment names, with
// the Roles and ClusterRoles of its manifests, and its Deployment's
// arguments. A permission missing from config/, or a flag the binary does
// not know, then fails the tests instead of a user's installation.
type Shipped struct {
	objects []*unstructured.Unstructured
}

// ShippedProvider is the provider as `clusterctl init` installs it: the
// release's infrastructure-components.yaml, with clusterctl's variables
// at their defaults (or vars' values).
func ShippedProvider(t T, vars map[string]string) *Shipped {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatalf("%v", err)
	}
	rendered, err := release.Components(root, "")
	if err != nil {
		t.Fatalf("render the provider's components: %v", err)
	}
	return shippedComponents(t, rendered, vars)
}

// shippedComponents is a component as clusterctl installs its rendered
// components: with clusterctl's variables at their defaults (or vars' values).
func shippedComponents(t T, rendered []byte, vars map[string]string) *Shipped {
	t.Helper()
	rendered, err := yamlprocessor.NewSimpleProcessor().Process(rendered, func(name string) (string, error) {
		if v, ok := vars[name]; ok {
			return v, nil
		}
		return "", errors.New("unset")
	})
	if err != nil {
		t.Fatalf("substitute clusterctl variables: %v", err)
	}
	objects, err := utilyaml.ToUnstructured(rendered)
	if err != nil {
		t.Fatalf("parse the components: %v", err)
	}
	shipped := &Shipped{}
	for i := range objects {
		shipped.objects = append(shipped.objects, &objects[i])
	}
	return shipped
}

// ShippedHostClaimBinder is the binder as a pool admin installs it:
// config/hostclaim-binder built with kustomize.
func ShippedHostClaimBinder(t T) *Shipped {
	t.Helper()
	return &Shipped{objects: KustomizeBuild(t, "config/hostclaim-binder")}
}

// ProviderUser and HostClaimBinderUser are the API server users of the
// shipped ServiceAccounts.
const (
	ProviderUser        = "system:serviceaccount:capm3-system:capm3-manager"
	HostClaimBinderUser = "system:serviceaccount:hostclaim-binder-system:hostclaim-binder"
)

// rbacKinds are what InstallRBAC creates: who the component runs as and
// what it may do, not the workloads, Services or webhooks.
var rbacKinds = map[string]bool{
	"Namespace": true, "ServiceAccount": true, "ConfigMap": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
}

// InstallRBAC creates the Namespace, ServiceAccount, ConfigMaps, Roles and
// ClusterRoles of s and their bindings on e; those already there are kept.
func (e *Env) InstallRBAC(t T, s *Shipped) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range s.objects {
		if !rbacKinds[obj.GetKind()] {
			continue
		}
		if err := e.Client.Create(ctx, obj.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("install %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// deployment is the one Deployment of s.
func (s *Shipped) deployment(t T) *appsv1.Deployment {
	t.Helper()
	for _, obj := range s.objects {
		if obj.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, d); err != nil {
			t.Fatalf("Deployment %s: %v", obj.GetName(), err)
		}
		return d
	}
	t.Fatalf("no Deployment in the shipped manifests")
	return nil
}

// RunShipped installs s's RBAC and runs the binary at path as s's
// Deployment would: as its ServiceAccount (a client certificate for the
// ServiceAccount's user and groups, which RBAC treats as the account),
// with its container's arguments and environment. Tests change only what
// cannot be the same here: replace sets flags (--name: value) in place of
// the Deployment's or after them (listen addresses, certificate paths,
// the server policy's loopback switches: every test server is on
// loopback). The Pod's namespace is passed as the Downward API would.
func (e *Env) RunShipped(t T, s *Shipped, path string, replace map[string]string) *Process {
	t.Helper()
	e.InstallRBAC(t, s)
	d := s.deployment(t)
	container := d.Spec.Template.Spec.Containers[0]
	args := replaceFlags(container.Args, replace)
	var environ []string
	for _, v := range container.Env {
		if v.ValueFrom != nil && v.ValueFrom.FieldRef != nil && v.ValueFrom.FieldRef.FieldPath == "metadata.namespace" {
			environ = append(environ, v.Name+"="+d.Namespace)
		} else if v.ValueFrom == nil {
			environ = append(environ, v.Name+"="+v.Value)
		}
	}
	for _, from := range container.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := e.Client.Get(context.Background(), client.ObjectKey{Namespace: d.Namespace, Name: from.ConfigMapRef.Name}, cm); err != nil {
			t.Fatalf("ConfigMap %s of the Deployment's envFrom: %v", from.ConfigMapRef.Name, err)
		}
		for k, v := range cm.Data {
			environ = append(environ, from.Prefix+k+"="+v)
		}
	}
	account := d.Spec.Template.Spec.ServiceAccountName
	user := envtest.User{
		Name:   fmt.Sprintf("system:serviceaccount:%s:%s", d.Namespace, account),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + d.Namespace, "system:authenticated"},
	}
	return e.runProcessAs(t, path, user, environ, args...)
}

// replaceFlags is args with each flag of replace set to its value: in
// place where args has it (as --name=value or a bare --name), else after.
func replaceFlags(args []string, replace map[string]string) []string {
	out := make([]string, 0, len(args)+len(replace))
	done := map[string]bool{}
	for _, arg := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if value, ok := replace[name]; ok {
			if !done[name] {
				out = append(out, "--"+name+"="+value)
				done[name] = true
			}
			continue
		}
		out = append(out, arg)
	}
	for _, name := range slices.Sorted(maps.Keys(replace)) {
		if !done[name] {
			out = append(out, "--"+name+"="+replace[name])
		}
	}
	return out
}
