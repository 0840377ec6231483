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
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// UserKubeconfigWithGroups returns a kubeconfig with inline credentials for
// a new certificate user in groups, with the environment's default context.
func (e *Env) UserKubeconfigWithGroups(t T, user string, groups ...string) []byte {
	t.Helper()
	authn, err := e.AddUser(envtest.User{Name: user, Groups: groups}, nil)
	if err != nil {
		t.Fatalf("add user %s: %v", user, err)
	}
	raw, err := authn.KubeConfig()
	if err != nil {
		t.Fatalf("kubeconfig for %s: %v", user, err)
	}
	return raw
}

// UserKubeconfig adds a certificate user to the environment and returns a
// kubeconfig for it with inline credentials, one context named contextName
// whose namespace is namespace (empty: none).
func (e *Env) UserKubeconfig(t T, user, contextName, namespace string) []byte {
	t.Helper()
	authn, err := e.AddUser(envtest.User{Name: user}, nil)
	if err != nil {
		t.Fatalf("add user %s: %v", user, err)
	}
	raw, err := authn.KubeConfig()
	if err != nil {
		t.Fatalf("kubeconfig for %s: %v", user, err)
	}
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		t.Fatalf("load kubeconfig for %s: %v", user, err)
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	delete(cfg.Contexts, cfg.CurrentContext)
	kctx.Namespace = namespace
	cfg.Contexts[contextName] = kctx
	cfg.CurrentContext = contextName
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatalf("write kubeconfig for %s: %v", user, err)
	}
	return out
}

// Rule is one line of a Role.
type Rule struct {
	Group, Resource string
	Verbs           []string
}

// GrantInNamespace creates namespace if needed and a Role with rules bound
// to user there.
func (e *Env) GrantInNamespace(t T, namespace, user string, rules ...Rule) {
	t.Helper()
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", namespace, err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: namespace}}
	for _, r := range rules {
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{r.Group}, Resources: []string{r.Resource}, Verbs: r.Verbs})
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if err := e.Client.Create(ctx, role); err != nil {
		t.Fatalf("create Role %s/%s: %v", namespace, user, err)
	}
	if err := e.Client.Create(ctx, binding); err != nil {
		t.Fatalf("create RoleBinding %s/%s: %v", namespace, user, err)
	}
}

// HostProviderRules is everything the provider needs in a pool namespace:
// the least-privilege Role the identity documentation recommends.
func HostProviderRules() []Rule {
	return []Rule{
		{Group: "metal3.io", Resource: "baremetalhosts", Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{Group: "", Resource: "secrets", Verbs: []string{"get", "create", "update", "delete"}},
	}
}

// HostClaimTenantRules is everything the provider needs in a tenant's pool
// namespace in HostClaim mode, the Role docs/identity.md gives: its
// HostClaims, their Secrets and the HardwareData copies the binder writes.
// Nothing of BareMetalHosts, nothing in the hosts' namespace.
func HostClaimTenantRules() []Rule {
	return []Rule{
		{Group: "metal3.io", Resource: "hostclaims", Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{Group: "metal3.io", Resource: "hardwaredata", Verbs: []string{"get", "list", "watch"}},
		{Group: "", Resource: "secrets", Verbs: []string{"get", "create", "update", "delete"}},
	}
}

// ServiceAccountKubeconfig creates the ServiceAccount name in namespace,
// bound to a Role with rules, and returns a kubeconfig with a token for it
// (TokenRequest, valid for expiry) and one context whose namespace is
// namespace: what a pool admin hands a tenant. Deleting the ServiceAccount
// revokes the token.
func (e *Env) ServiceAccountKubeconfig(t T, namespace, name string, expiry time.Duration, rules ...Rule) []byte {
	t.Helper()
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", namespace, err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	for _, r := range rules {
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{r.Group}, Resources: []string{r.Resource}, Verbs: r.Verbs})
	}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}},
		role,
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}},
		},
	} {
		if err := e.Client.Create(ctx, obj); err != nil {
			t.Fatalf("create %T %s/%s: %v", obj, namespace, name, err)
		}
	}
	clientset, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	seconds := int64(expiry.Seconds())
	token, err := clientset.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for ServiceAccount %s/%s: %v", namespace, name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["pool"] = &clientcmdapi.Cluster{Server: e.Config.Host, CertificateAuthorityData: e.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "pool", AuthInfo: name, Namespace: namespace}
	cfg.CurrentContext = name
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatalf("write kubeconfig for ServiceAccount %s/%s: %v", namespace, name, err)
	}
	return out
}

// IdentitySecret is the Secret a tenant writes for an identityRef: a
// kubeconfig under the "kubeconfig" key.
func IdentitySecret(namespace, name string, kubeconfig []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Data:       map[string][]byte{"kubeconfig": kubeconfig},
	}
}
