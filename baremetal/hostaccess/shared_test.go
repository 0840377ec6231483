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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"reflect"
	"slices"
	"testing"
	"time"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard/kubeguardtest"
)

var testKey = identity.Key{SecretNamespace: "tenant-a", SecretName: "pool-east"}

// testClientCertificate is a client certificate and its key, PEM-encoded,
// that a kubeconfig's client-certificate-data and client-key-data accept.
func testClientCertificate(t *testing.T, name string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// lenientPolicy lets every kubeconfig field reach the fingerprint.
var lenientPolicy = kubeguard.ServerPolicy{AllowInsecureSkipTLSVerify: true, AllowProxyURL: true}

// fingerprintOf loads cfg for the context of key as remoteAccess does and
// returns its credential fingerprint.
func fingerprintOf(t *testing.T, key identity.Key, cfg *clientcmdapi.Config) string {
	t.Helper()
	parsed, err := kubeguard.Load(kubeguard.Source{Data: kubeguardtest.Write(t, cfg), Context: key.Context}, &lenientPolicy)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	namespace := parsed.Namespace
	if namespace == "" {
		namespace = key.SecretNamespace
	}
	return credentialFingerprint(parsed, namespace)
}

// TestCredentialFingerprint: identities share an accessor exactly when
// their kubeconfigs say the same server, user and hosts' namespace; what
// names things in the kubeconfig, or other contexts, does not matter, and
// every field that changes whom requests are made as, where they go, or
// which hosts are read, does.
func TestCredentialFingerprint(t *testing.T) {
	certA, keyA := testClientCertificate(t, "tenant-a")
	certB, keyB := testClientCertificate(t, "tenant-b")
	base := func() *clientcmdapi.Config {
		cfg := kubeguardtest.Config()
		cfg.AuthInfos["tenant"] = &clientcmdapi.AuthInfo{ClientCertificateData: certA, ClientKeyData: keyA}
		return cfg
	}
	tests := []struct {
		name   string
		key    identity.Key
		mutate func(*clientcmdapi.Config)
		same   bool
	}{
		{name: "another Secret holding the same kubeconfig", key: identity.Key{SecretNamespace: "tenant-b", SecretName: "other"}, same: true},
		{name: "a Metal3ClusterIdentity's Secret holding it", key: identity.Key{ClusterIdentity: "east", SecretNamespace: "capm3-system", SecretName: "east"}, same: true},
		{name: "names of cluster, user and context", key: identity.Key{SecretNamespace: "tenant-a", SecretName: "pool-east", Context: "renamed"}, mutate: func(c *clientcmdapi.Config) {
			c.Clusters["p"], c.AuthInfos["u"] = c.Clusters["pool"], c.AuthInfos["tenant"]
			c.Contexts["renamed"] = &clientcmdapi.Context{Cluster: "p", AuthInfo: "u", Namespace: "pool-east"}
		}, same: true},
		{name: "another context, unused", mutate: func(c *clientcmdapi.Config) {
			c.Contexts["extra"] = &clientcmdapi.Context{Cluster: "pool", AuthInfo: "tenant", Namespace: "elsewhere"}
		}, same: true},
		{name: "server", mutate: func(c *clientcmdapi.Config) { c.Clusters["pool"].Server = "https://pool.example.com:7443" }},
		{name: "TLS server name", mutate: func(c *clientcmdapi.Config) { c.Clusters["pool"].TLSServerName = "api.pool" }},
		{name: "CA", mutate: func(c *clientcmdapi.Config) { c.Clusters["pool"].CertificateAuthorityData = certB }},
		{name: "insecure", mutate: func(c *clientcmdapi.Config) {
			c.Clusters["pool"].CertificateAuthorityData, c.Clusters["pool"].InsecureSkipTLSVerify = nil, true
		}},
		{name: "proxy", mutate: func(c *clientcmdapi.Config) { c.Clusters["pool"].ProxyURL = "http://proxy.example.com:3128" }},
		{name: "compression", mutate: func(c *clientcmdapi.Config) { c.Clusters["pool"].DisableCompression = true }},
		{name: "client certificate", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["tenant"].ClientCertificateData, c.AuthInfos["tenant"].ClientKeyData = certB, keyB
		}},
		{name: "token", mutate: func(c *clientcmdapi.Config) { c.AuthInfos["tenant"] = &clientcmdapi.AuthInfo{Token: "abc.def"} }},
		{name: "basic auth", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["tenant"] = &clientcmdapi.AuthInfo{Username: "u", Password: "p"}
		}},
		{name: "impersonated user", mutate: func(c *clientcmdapi.Config) { c.AuthInfos["tenant"].Impersonate = "system:serviceaccount:pool:capm3" }},
		{name: "impersonated UID", mutate: func(c *clientcmdapi.Config) { c.AuthInfos["tenant"].ImpersonateUID = "1234" }},
		{name: "impersonated groups", mutate: func(c *clientcmdapi.Config) { c.AuthInfos["tenant"].ImpersonateGroups = []string{"admins"} }},
		{name: "impersonated extra", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["tenant"].ImpersonateUserExtra = map[string][]string{"scopes": {"pool"}}
		}},
		{name: "hosts' namespace", mutate: func(c *clientcmdapi.Config) { c.Contexts["east"].Namespace = "pool-west" }},
		{name: "no namespace in the context: the Secret's", key: identity.Key{SecretNamespace: "tenant-b", SecretName: "pool-east"},
			mutate: func(c *clientcmdapi.Config) { c.Contexts["east"].Namespace = "" }},
	}
	want := fingerprintOf(t, testKey, base())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base()
			if tt.mutate != nil {
				tt.mutate(cfg)
			}
			key := testKey
			if tt.key != (identity.Key{}) {
				key = tt.key
			}
			if got := fingerprintOf(t, key, cfg); (got == want) != tt.same {
				t.Errorf("same fingerprint = %v, want %v", got == want, tt.same)
			}
		})
	}

	// Every field kubeguard.Load sets is one the fingerprint covers: a
	// field added there without being added to credentials would let two
	// users share a client.
	t.Run("covers every field kubeguard.Load sets", func(t *testing.T) {
		cfg := base()
		cluster, user := cfg.Clusters["pool"], cfg.AuthInfos["tenant"]
		cluster.TLSServerName, cluster.ProxyURL, cluster.DisableCompression = "api.pool", "http://proxy.example.com:3128", true
		user.Token, user.Username, user.Password = "t", "u", "p"
		user.Impersonate, user.ImpersonateUID, user.ImpersonateGroups = "i", "1", []string{"g"}
		user.ImpersonateUserExtra = map[string][]string{"k": {"v"}}
		parsed, err := kubeguard.Load(kubeguard.Source{Data: kubeguardtest.Write(t, cfg), Context: testKey.Context}, &lenientPolicy)
		if err != nil {
			t.Fatal(err)
		}
		covered := []string{
			"Host", "Proxy", "DisableCompression", "TLSClientConfig.Insecure", "TLSClientConfig.ServerName", "TLSClientConfig.CAData",
			"TLSClientConfig.CertData", "TLSClientConfig.KeyData", "BearerToken", "Username", "Password",
			"Impersonate.UserName", "Impersonate.UID", "Impersonate.Groups", "Impersonate.Extra",
		}
		for _, field := range setFields(reflect.ValueOf(*parsed.RESTConfig), "") {
			if !slices.Contains(covered, field) {
				t.Errorf("rest.Config.%s is set from the kubeconfig but not part of the credential fingerprint", field)
			}
		}
	})
}

// setFields lists the paths of v's non-zero fields, into nested structs.
func setFields(v reflect.Value, prefix string) []string {
	var fields []string
	for i := range v.NumField() {
		field, value := v.Type().Field(i), v.Field(i)
		if !field.IsExported() || value.IsZero() {
			continue
		}
		if value.Kind() == reflect.Struct {
			fields = append(fields, setFields(value, prefix+field.Name+".")...)
			continue
		}
		fields = append(fields, prefix+field.Name)
	}
	return fields
}
