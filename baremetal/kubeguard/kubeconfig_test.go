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
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/kubeguard/kubeguardtest"
)

func TestParseKubeconfigAccepts(t *testing.T) {
	tests := []struct {
		name          string
		context       string
		mutate        func(*clientcmdapi.Config)
		wantNamespace string
		wantHost      string
	}{
		{name: "current context", wantNamespace: "pool-east", wantHost: "https://pool.example.com:6443"},
		{name: "named context without namespace", context: "west", wantNamespace: ""},
		{name: "basic auth and impersonation", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["tenant"] = &clientcmdapi.AuthInfo{Username: "u", Password: "p", Impersonate: "system:serviceaccount:pool:capm3"}
		}, wantNamespace: "pool-east"},
		{name: "context without user", mutate: func(c *clientcmdapi.Config) { c.Contexts["east"].AuthInfo = "" }, wantNamespace: "pool-east"},
		{name: "insecure http server", mutate: func(c *clientcmdapi.Config) {
			c.Clusters["pool"] = &clientcmdapi.Cluster{Server: "http://127.0.0.1:8080"}
		}, wantNamespace: "pool-east", wantHost: "http://127.0.0.1:8080"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := kubeguardtest.Config()
			if tt.mutate != nil {
				tt.mutate(cfg)
			}
			got, err := parse(kubeguardtest.Write(t, cfg), tt.context)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got.Namespace != tt.wantNamespace {
				t.Errorf("namespace = %q, want %q", got.Namespace, tt.wantNamespace)
			}
			if tt.wantHost != "" && got.RESTConfig.Host != tt.wantHost {
				t.Errorf("host = %q, want %q", got.RESTConfig.Host, tt.wantHost)
			}
			assertNoFileOrPlugin(t, got)
		})
	}
}

func assertNoFileOrPlugin(t *testing.T, k *Kubeconfig) {
	t.Helper()
	c := k.RESTConfig
	if c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" || c.BearerTokenFile != "" || c.ExecProvider != nil || c.AuthProvider != nil {
		t.Errorf("rest.Config refers to files or plugins: %+v", c)
	}
}

// TestParseKubeconfigRejects covers every kubeconfig shape a tenant must not
// be able to use, each with the condition reason and the field it names.
func TestParseKubeconfigRejects(t *testing.T) {
	tests := []struct {
		name       string
		context    string
		raw        []byte
		mutate     func(*clientcmdapi.Config)
		wantReason string
		wantInMsg  string
	}{
		{name: "not YAML", raw: []byte("{{{"), wantReason: ReasonInvalidKubeconfig, wantInMsg: "cannot be parsed"},
		{name: "exec plugin", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["tenant"].Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", Args: []string{"-c", "cat /var/run/secrets/kubernetes.io/serviceaccount/token"}, APIVersion: "client.authentication.k8s.io/v1"}
		}, wantReason: ReasonInvalidKubeconfig, wantInMsg: "users[tenant].exec"},
		{name: "auth-provider plugin", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["tenant"].AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc"}
		}, wantReason: ReasonInvalidKubeconfig, wantInMsg: "users[tenant].auth-provider"},
		{name: "tokenFile", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["tenant"] = &clientcmdapi.AuthInfo{TokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"}
		}, wantReason: ReasonInvalidKubeconfig, wantInMsg: "users[tenant].tokenFile"},
		{name: "client-certificate path", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["tenant"] = &clientcmdapi.AuthInfo{ClientCertificate: "/etc/kubernetes/pki/admin.crt", ClientKeyData: []byte("k")}
		}, wantReason: ReasonInvalidKubeconfig, wantInMsg: "users[tenant].client-certificate"},
		{name: "client-key path", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["tenant"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("c"), ClientKey: "/etc/kubernetes/pki/admin.key"}
		}, wantReason: ReasonInvalidKubeconfig, wantInMsg: "users[tenant].client-key"},
		{name: "certificate-authority path", mutate: func(c *clientcmdapi.Config) {
			c.Clusters["pool"].CertificateAuthorityData = nil
			c.Clusters["pool"].CertificateAuthority = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
		}, wantReason: ReasonInvalidKubeconfig, wantInMsg: "clusters[pool].certificate-authority"},
		{name: "certificate without key", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["tenant"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("c")}
		}, wantReason: ReasonInvalidKubeconfig, wantInMsg: "users[tenant]"},
		{name: "unparseable certificate data", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["tenant"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("c"), ClientKeyData: []byte("k")}
		}, wantReason: ReasonInvalidKubeconfig, wantInMsg: "certificates"},
		{name: "unknown context", context: "north", wantReason: ReasonContextNotFound, wantInMsg: `context "north"`},
		{name: "no current context", mutate: func(c *clientcmdapi.Config) { c.CurrentContext = "" },
			wantReason: ReasonContextNotFound, wantInMsg: "no current-context"},
		{name: "context names a missing cluster", mutate: func(c *clientcmdapi.Config) { c.Contexts["east"].Cluster = "gone" },
			wantReason: ReasonInvalidKubeconfig, wantInMsg: "contexts[east].cluster"},
		{name: "context names a missing user", mutate: func(c *clientcmdapi.Config) { c.Contexts["east"].AuthInfo = "gone" },
			wantReason: ReasonInvalidKubeconfig, wantInMsg: "contexts[east].user"},
		{name: "no server", mutate: func(c *clientcmdapi.Config) { c.Clusters["pool"].Server = "" },
			wantReason: ReasonInvalidKubeconfig, wantInMsg: "clusters[pool].server"},
		{name: "server not http(s)", mutate: func(c *clientcmdapi.Config) { c.Clusters["pool"].Server = "unix:///run/kube.sock" },
			wantReason: ReasonInvalidKubeconfig, wantInMsg: "clusters[pool].server"},
		{name: "too large", raw: []byte(strings.Repeat("#", MaxSecretSize+1)),
			wantReason: ReasonInvalidKubeconfig, wantInMsg: "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := tt.raw
			if raw == nil {
				cfg := kubeguardtest.Config()
				if tt.mutate != nil {
					tt.mutate(cfg)
				}
				raw = kubeguardtest.Write(t, cfg)
			}
			_, err := parse(raw, tt.context)
			assertGuardError(t, err, tt.wantReason, tt.wantInMsg)
		})
	}
}

func assertGuardError(t *testing.T, err error, reason, inMessage string) {
	t.Helper()
	ge, ok := AsError(err)
	if !ok {
		t.Fatalf("error %v is not a kubeguard.Error", err)
	}
	if ge.Reason != reason {
		t.Errorf("reason = %s, want %s (%s)", ge.Reason, reason, ge.Message)
	}
	if !strings.Contains(ge.Message, inMessage) {
		t.Errorf("message %q should name %q", ge.Message, inMessage)
	}
}

func TestSecretData(t *testing.T) {
	valid := kubeguardtest.Write(t, kubeguardtest.Config())
	tests := []struct {
		name       string
		data       map[string][]byte
		wantReason string
		wantInMsg  string
	}{
		{name: "kubeconfig key", data: map[string][]byte{"kubeconfig": valid}},
		{name: "value key, as CAPI writes it", data: map[string][]byte{"value": valid}},
		{name: "kubeconfig preferred over value", data: map[string][]byte{"kubeconfig": valid, "value": []byte("junk")}},
		{name: "neither key", data: map[string][]byte{"config": valid}, wantReason: ReasonInvalidKubeconfig, wantInMsg: `"kubeconfig"`},
		{name: "Secret over the size cap", data: map[string][]byte{"kubeconfig": valid, "padding": make([]byte, MaxSecretSize)},
			wantReason: ReasonInvalidKubeconfig, wantInMsg: "bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := secretData(&corev1.Secret{Data: tt.data}, "kubeconfig", "value")
			if err == nil {
				_, err = parse(data, "")
			}
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			assertGuardError(t, err, tt.wantReason, tt.wantInMsg)
		})
	}
}

// TestFilePathsAreNeverRead proves a rejected kubeconfig reads none of the
// files it names: each path is a FIFO, and opening a FIFO for reading is
// observable from its write end. Among them is a stand-in for the
// controller's own service-account token.
func TestFilePathsAreNeverRead(t *testing.T) {
	dir := t.TempDir()
	fifo := func(name string) string {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	token, cert, key, ca := fifo("token"), fifo("tls.crt"), fifo("tls.key"), fifo("ca.crt")
	shapes := map[string]func(*clientcmdapi.Config){
		"tokenFile (the controller's service-account token)": func(c *clientcmdapi.Config) {
			c.AuthInfos["tenant"] = &clientcmdapi.AuthInfo{TokenFile: token}
		},
		"client-certificate and client-key": func(c *clientcmdapi.Config) {
			c.AuthInfos["tenant"] = &clientcmdapi.AuthInfo{ClientCertificate: cert, ClientKey: key}
		},
		"certificate-authority": func(c *clientcmdapi.Config) {
			c.Clusters["pool"].CertificateAuthorityData = nil
			c.Clusters["pool"].CertificateAuthority = ca
		},
	}
	for name, mutate := range shapes {
		cfg := kubeguardtest.Config()
		mutate(cfg)
		if _, err := parse(kubeguardtest.Write(t, cfg), ""); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, p := range []string{token, cert, key, ca} {
		// O_NONBLOCK write-open of a FIFO fails with ENXIO unless a reader
		// has it open: a parser that opened the file (and blocked there)
		// would make this succeed.
		f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			f.Close()
			t.Errorf("%s was opened for reading", p)
		}
	}
}

// FuzzParseKubeconfig feeds arbitrary bytes and context names to the
// validator: it must never panic, and whatever it accepts must carry no
// file path or plugin into the rest.Config.
func FuzzParseKubeconfig(f *testing.F) {
	cfg := kubeguardtest.Config()
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data, "")
	f.Add(data, "west")
	cfg.AuthInfos["tenant"].Exec = &clientcmdapi.ExecConfig{Command: "sh", APIVersion: "client.authentication.k8s.io/v1"}
	withExec, _ := clientcmd.Write(*cfg)
	f.Add(withExec, "east")
	f.Add([]byte("apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    tokenFile: /etc/shadow\n"), "")
	f.Fuzz(func(t *testing.T, raw []byte, context string) {
		got, err := parse(raw, context)
		if err != nil {
			if _, ok := AsError(err); !ok {
				t.Fatalf("error is not a kubeguard.Error: %v", err)
			}
			return
		}
		assertNoFileOrPlugin(t, got)
		if got.RESTConfig.Host == "" {
			t.Fatal("accepted a kubeconfig without a server")
		}
	})
}
