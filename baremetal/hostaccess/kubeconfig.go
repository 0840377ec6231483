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

package hostaccess

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// MaxSecretSize caps an identity Secret's data. A kubeconfig with inline
// certificates is a few kilobytes; a megabyte is a mistake or an attack on
// the controller's memory.
const MaxSecretSize = 1 << 20

// kubeconfigSecretKeys are read in this order: "kubeconfig" is the usual key,
// "value" is the one CAPI writes workload cluster kubeconfigs under.
var kubeconfigSecretKeys = []string{"kubeconfig", "value"}

// kubeconfig is a validated kubeconfig reduced to what the controller uses.
type kubeconfig struct {
	// restConfig carries only inline credentials: no file paths, no plugins.
	restConfig *rest.Config
	// namespace of the chosen context; empty if it sets none.
	namespace string
	// proxyURL is the cluster's proxy-url, which restConfig holds only as
	// a function: the credential fingerprint needs it as written.
	proxyURL string
	// hash of the Secret content and context: what the identity last
	// read. Rotation is a change of its credentials (credentialFingerprint),
	// not of the text holding them.
	hash string
}

// parseIdentitySecret validates the kubeconfig in secret for key.
func parseIdentitySecret(key identity.Key, secret *corev1.Secret) (*kubeconfig, error) {
	size := 0
	for k, v := range secret.Data {
		size += len(k) + len(v)
	}
	if size > MaxSecretSize {
		return nil, identity.NewError(key, infrav1.IdentityInvalidKubeconfigReason, true, nil,
			"Secret holds %d bytes, more than the %d allowed for a kubeconfig", size, MaxSecretSize)
	}
	for _, dataKey := range kubeconfigSecretKeys {
		if data, ok := secret.Data[dataKey]; ok {
			return parseKubeconfig(key, data)
		}
	}
	return nil, identity.NewError(key, infrav1.IdentityInvalidKubeconfigReason, true, nil,
		"Secret has neither a %q nor a %q key", kubeconfigSecretKeys[0], kubeconfigSecretKeys[1])
}

// parseKubeconfig validates a tenant's kubeconfig and builds the rest.Config
// for the context of key. The rest.Config is assembled field by field from
// inline data, never through clientcmd's ClientConfig, so no code path can
// read a file or run a program the tenant named.
func parseKubeconfig(key identity.Key, data []byte) (*kubeconfig, error) {
	if len(data) > MaxSecretSize {
		return nil, identity.NewError(key, infrav1.IdentityInvalidKubeconfigReason, true, nil,
			"kubeconfig is %d bytes, more than the %d allowed", len(data), MaxSecretSize)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, identity.NewError(key, infrav1.IdentityInvalidKubeconfigReason, true, err, "kubeconfig cannot be parsed: %v", err)
	}

	contextName := key.Context
	if contextName == "" {
		contextName = cfg.CurrentContext
	}
	if contextName == "" {
		return nil, identity.NewError(key, infrav1.IdentityContextNotFoundReason, true, nil,
			"kubeconfig has no current-context and identityRef.context is empty")
	}
	kctx, ok := cfg.Contexts[contextName]
	if !ok || kctx == nil {
		return nil, identity.NewError(key, infrav1.IdentityContextNotFoundReason, true, nil,
			"context %q is not in the kubeconfig (it has: %s)", contextName, strings.Join(sortedKeys(cfg.Contexts), ", "))
	}
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok || cluster == nil {
		return nil, invalidKubeconfig(key, fmt.Sprintf("contexts[%s].cluster", contextName),
			fmt.Sprintf("names cluster %q, which is not in the kubeconfig", kctx.Cluster))
	}
	restConfig, err := restConfigForCluster(key, kctx.Cluster, cluster)
	if err != nil {
		return nil, err
	}
	if kctx.AuthInfo != "" {
		user, ok := cfg.AuthInfos[kctx.AuthInfo]
		if !ok || user == nil {
			return nil, invalidKubeconfig(key, fmt.Sprintf("contexts[%s].user", contextName),
				fmt.Sprintf("names user %q, which is not in the kubeconfig", kctx.AuthInfo))
		}
		if err := applyUser(key, kctx.AuthInfo, user, restConfig); err != nil {
			return nil, err
		}
	}
	// Certificates that cannot be parsed are the tenant's mistake: say so now
	// rather than as an unreachable server later.
	if _, err := rest.TLSConfigFor(restConfig); err != nil {
		return nil, identity.NewError(key, infrav1.IdentityInvalidKubeconfigReason, true, err,
			"kubeconfig certificates of context %q are unusable: %v", contextName, err)
	}

	sum := sha256.New()
	sum.Write(data)
	sum.Write([]byte{0})
	sum.Write([]byte(key.Context))
	return &kubeconfig{restConfig: restConfig, namespace: kctx.Namespace, proxyURL: cluster.ProxyURL, hash: hex.EncodeToString(sum.Sum(nil))}, nil
}

func restConfigForCluster(key identity.Key, name string, cluster *clientcmdapi.Cluster) (*rest.Config, error) {
	path := fmt.Sprintf("clusters[%s]", name)
	if cluster.Server == "" {
		return nil, invalidKubeconfig(key, path+".server", "is empty")
	}
	server, err := url.Parse(cluster.Server)
	if err != nil || server.Host == "" || (server.Scheme != "https" && server.Scheme != "http") {
		return nil, invalidKubeconfig(key, path+".server", fmt.Sprintf("%q is not an http(s) URL", cluster.Server))
	}
	if cluster.CertificateAuthority != "" {
		return nil, invalidKubeconfig(key, path+".certificate-authority",
			"file paths are not allowed (the controller would read its own file); use certificate-authority-data")
	}
	cfg := &rest.Config{
		Host:               cluster.Server,
		DisableCompression: cluster.DisableCompression,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure:   cluster.InsecureSkipTLSVerify,
			ServerName: cluster.TLSServerName,
			CAData:     cluster.CertificateAuthorityData,
		},
	}
	if cluster.ProxyURL != "" {
		proxy, err := url.Parse(cluster.ProxyURL)
		if err != nil || proxy.Host == "" {
			return nil, invalidKubeconfig(key, path+".proxy-url", fmt.Sprintf("%q is not a URL", cluster.ProxyURL))
		}
		cfg.Proxy = http.ProxyURL(proxy)
	}
	return cfg, nil
}

func applyUser(key identity.Key, name string, user *clientcmdapi.AuthInfo, cfg *rest.Config) error {
	path := fmt.Sprintf("users[%s]", name)
	switch {
	case user.Exec != nil:
		return invalidKubeconfig(key, path+".exec", "exec plugins are not allowed (the controller would run a program the tenant names)")
	case user.AuthProvider != nil:
		return invalidKubeconfig(key, path+".auth-provider", "auth-provider plugins are not allowed")
	case user.TokenFile != "":
		return invalidKubeconfig(key, path+".tokenFile",
			"file paths are not allowed (the controller would read its own file, such as its service account token); use token")
	case user.ClientCertificate != "":
		return invalidKubeconfig(key, path+".client-certificate", "file paths are not allowed; use client-certificate-data")
	case user.ClientKey != "":
		return invalidKubeconfig(key, path+".client-key", "file paths are not allowed; use client-key-data")
	case (len(user.ClientCertificateData) == 0) != (len(user.ClientKeyData) == 0):
		return invalidKubeconfig(key, path, "client-certificate-data and client-key-data must be set together")
	}
	cfg.CertData = user.ClientCertificateData
	cfg.KeyData = user.ClientKeyData
	cfg.BearerToken = user.Token
	cfg.Username = user.Username
	cfg.Password = user.Password
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: user.Impersonate,
		UID:      user.ImpersonateUID,
		Groups:   user.ImpersonateGroups,
		Extra:    user.ImpersonateUserExtra,
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// invalidKubeconfig reports a kubeconfig field that cannot be used.
func invalidKubeconfig(key identity.Key, fieldPath, problem string) *identity.Error {
	return identity.NewError(key, infrav1.IdentityInvalidKubeconfigReason, true, nil, "kubeconfig field %s: %s", fieldPath, problem)
}
