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

package kubeguard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// MaxSecretSize caps a kubeconfig Secret's data. A kubeconfig with inline
// certificates is a few kilobytes; a megabyte is a mistake or an attack on
// the controller's memory.
const MaxSecretSize = 1 << 20

// Source is a tenant's kubeconfig as it reaches the provider: in a Secret,
// under the first of Keys it has, or as Data.
type Source struct {
	// Secret holds the kubeconfig; it is judged whole (MaxSecretSize).
	Secret *corev1.Secret
	// Keys are read in this order from Secret.
	Keys []string
	// Data is the kubeconfig itself, when there is no Secret.
	Data []byte
	// Context is the context to use; empty: the kubeconfig's current one.
	Context string
}

// Kubeconfig is a validated kubeconfig reduced to what the provider uses,
// and judged by a ServerPolicy: what Load returns, and what Connect needs.
type Kubeconfig struct {
	// RESTConfig carries only inline credentials: no file paths, no plugins.
	RESTConfig *rest.Config
	// Server is the server the kubeconfig names, for messages.
	Server Server
	// Namespace of the chosen context; empty if it sets none.
	Namespace string
	// ProxyURL is the cluster's proxy-url, which RESTConfig holds only as
	// a function: credential fingerprints need it as written.
	ProxyURL string
	// Hash of the kubeconfig and the context chosen in it.
	Hash string
	// policy judged the kubeconfig in Load; Connect dials under it. A
	// Kubeconfig that Load did not return has none, and cannot connect.
	policy *ServerPolicy
}

// Load is the first half of the boundary, where nothing is sent: it reads
// the kubeconfig of src, parses it field by field (parse) and judges its
// server by policy (nil: the zero, strictest, policy). The Kubeconfig it
// returns connects under that policy only. Its errors are *Error, terminal:
// only a new kubeconfig (or another policy) changes them.
func Load(src Source, policy *ServerPolicy) (*Kubeconfig, error) {
	if policy == nil {
		policy = &ServerPolicy{}
	}
	data := src.Data
	if src.Secret != nil {
		var err error
		if data, err = secretData(src.Secret, src.Keys...); err != nil {
			return nil, err
		}
	}
	k, err := parse(data, src.Context)
	if err != nil {
		return nil, err
	}
	if err := policy.check(k); err != nil {
		return nil, err
	}
	k.policy = policy
	return k, nil
}

// secretData returns the kubeconfig a Secret holds under the first of keys
// it has, refusing a Secret larger than MaxSecretSize.
func secretData(secret *corev1.Secret, keys ...string) ([]byte, error) {
	size := 0
	for k, v := range secret.Data {
		size += len(k) + len(v)
	}
	if size > MaxSecretSize {
		return nil, newError(ReasonInvalidKubeconfig, true, nil,
			"Secret holds %d bytes, more than the %d allowed for a kubeconfig", size, MaxSecretSize)
	}
	for _, key := range keys {
		if data, ok := secret.Data[key]; ok {
			return data, nil
		}
	}
	quoted := make([]string, 0, len(keys))
	for _, key := range keys {
		quoted = append(quoted, fmt.Sprintf("%q", key))
	}
	return nil, newError(ReasonInvalidKubeconfig, true, nil, "Secret has no %s key", strings.Join(quoted, " nor "))
}

// parse validates a tenant's kubeconfig and builds the rest.Config of
// contextName (empty: the current context). The rest.Config is assembled
// field by field from inline data, never through clientcmd's ClientConfig,
// so no code path can read a file or run a program the tenant named.
func parse(data []byte, contextName string) (*Kubeconfig, error) {
	if len(data) > MaxSecretSize {
		return nil, newError(ReasonInvalidKubeconfig, true, nil,
			"kubeconfig is %d bytes, more than the %d allowed", len(data), MaxSecretSize)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, newError(ReasonInvalidKubeconfig, true, err, "kubeconfig cannot be parsed: %v", err)
	}

	chosen := contextName
	if chosen == "" {
		chosen = cfg.CurrentContext
	}
	if chosen == "" {
		return nil, newError(ReasonContextNotFound, true, nil, "kubeconfig has no current-context and no context is named")
	}
	kctx, ok := cfg.Contexts[chosen]
	if !ok || kctx == nil {
		return nil, newError(ReasonContextNotFound, true, nil,
			"context %q is not in the kubeconfig (it has: %s)", chosen, strings.Join(slices.Sorted(maps.Keys(cfg.Contexts)), ", "))
	}
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok || cluster == nil {
		return nil, invalidField(fmt.Sprintf("contexts[%s].cluster", chosen),
			fmt.Sprintf("names cluster %q, which is not in the kubeconfig", kctx.Cluster))
	}
	restConfig, err := restConfigForCluster(kctx.Cluster, cluster)
	if err != nil {
		return nil, err
	}
	if kctx.AuthInfo != "" {
		user, ok := cfg.AuthInfos[kctx.AuthInfo]
		if !ok || user == nil {
			return nil, invalidField(fmt.Sprintf("contexts[%s].user", chosen),
				fmt.Sprintf("names user %q, which is not in the kubeconfig", kctx.AuthInfo))
		}
		if err := applyUser(kctx.AuthInfo, user, restConfig); err != nil {
			return nil, err
		}
	}
	// Certificates that cannot be parsed are the tenant's mistake: say so now
	// rather than as an unreachable server later.
	if _, err := rest.TLSConfigFor(restConfig); err != nil {
		return nil, newError(ReasonInvalidKubeconfig, true, err,
			"kubeconfig certificates of context %q are unusable: %v", chosen, err)
	}

	sum := sha256.New()
	sum.Write(data)
	sum.Write([]byte{0})
	sum.Write([]byte(contextName))
	// restConfigForCluster checked the URL.
	srv, _ := ParseServer(restConfig.Host)
	return &Kubeconfig{
		RESTConfig: restConfig, Server: srv, Namespace: kctx.Namespace, ProxyURL: cluster.ProxyURL,
		Hash: hex.EncodeToString(sum.Sum(nil)),
	}, nil
}

func restConfigForCluster(name string, cluster *clientcmdapi.Cluster) (*rest.Config, error) {
	path := fmt.Sprintf("clusters[%s]", name)
	if cluster.Server == "" {
		return nil, invalidField(path+".server", "is empty")
	}
	server, err := url.Parse(cluster.Server)
	if err != nil || server.Host == "" || (server.Scheme != "https" && server.Scheme != "http") {
		return nil, invalidField(path+".server", fmt.Sprintf("%q is not an http(s) URL", cluster.Server))
	}
	if cluster.CertificateAuthority != "" {
		return nil, invalidField(path+".certificate-authority",
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
			return nil, invalidField(path+".proxy-url", fmt.Sprintf("%q is not a URL", cluster.ProxyURL))
		}
		cfg.Proxy = http.ProxyURL(proxy)
	}
	return cfg, nil
}

func applyUser(name string, user *clientcmdapi.AuthInfo, cfg *rest.Config) error {
	path := fmt.Sprintf("users[%s]", name)
	switch {
	case user.Exec != nil:
		return invalidField(path+".exec", "exec plugins are not allowed (the controller would run a program the tenant names)")
	case user.AuthProvider != nil:
		return invalidField(path+".auth-provider", "auth-provider plugins are not allowed")
	case user.TokenFile != "":
		return invalidField(path+".tokenFile",
			"file paths are not allowed (the controller would read its own file, such as its service account token); use token")
	case user.ClientCertificate != "":
		return invalidField(path+".client-certificate", "file paths are not allowed; use client-certificate-data")
	case user.ClientKey != "":
		return invalidField(path+".client-key", "file paths are not allowed; use client-key-data")
	case (len(user.ClientCertificateData) == 0) != (len(user.ClientKeyData) == 0):
		return invalidField(path, "client-certificate-data and client-key-data must be set together")
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

// invalidField reports a kubeconfig field that cannot be used.
func invalidField(fieldPath, problem string) *Error {
	return newError(ReasonInvalidKubeconfig, true, nil, "kubeconfig field %s: %s", fieldPath, problem)
}
