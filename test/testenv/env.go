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
	"os"
	"path/filepath"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options describe the API server a test wants.
type Options struct {
	// Scheme for the returned client. Required.
	Scheme *runtime.Scheme
	// CRDDirectoryPaths are installed before Start returns.
	CRDDirectoryPaths []string
	// CRDs are installed before Start returns, like CRDDirectoryPaths.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// WebhookPaths hold webhook configuration manifests to install; envtest
	// rewrites them to point at its local webhook server.
	WebhookPaths []string
	// Webhooks, when set, are the whole webhook installation (WebhookPaths
	// are added to it): for configurations built in code and CRD conversion.
	Webhooks *envtest.WebhookInstallOptions
	// AuditLogPath, when set, makes the API server write one JSON audit
	// event per request (metadata only) to this file, by which benchmarks
	// count who asked for what.
	AuditLogPath string
}

// Env is one running kube-apiserver with its etcd.
type Env struct {
	*envtest.Environment
	Config *rest.Config
	Client client.Client
	// AuditLogPath is Options.AuditLogPath: where the server's audit log
	// is, if it writes one.
	AuditLogPath string
}

// Start runs a fresh API server for the test and stops it when the test ends.
func Start(t T, opts Options) *Env {
	t.Helper()
	assets, err := AssetsDir()
	if err != nil {
		t.Fatalf("envtest binaries: %v", err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     opts.CRDDirectoryPaths,
		CRDs:                  opts.CRDs,
		ErrorIfCRDPathMissing: true,
		Scheme:                opts.Scheme,
		// A server that many controllers watch takes longer than envtest's
		// default 20 s to drain them when it stops.
		ControlPlaneStopTimeout: 90 * time.Second,
	}
	if opts.Webhooks != nil {
		env.WebhookInstallOptions = *opts.Webhooks
	}
	env.WebhookInstallOptions.Paths = append(env.WebhookInstallOptions.Paths, opts.WebhookPaths...)
	if opts.AuditLogPath != "" {
		if err := configureAuditLog(env, opts.AuditLogPath); err != nil {
			t.Fatalf("audit log: %v", err)
		}
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest API server: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest API server: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: opts.Scheme})
	if err != nil {
		t.Fatalf("client for envtest API server: %v", err)
	}
	return &Env{Environment: env, Config: cfg, Client: c, AuditLogPath: opts.AuditLogPath}
}

// WriteKubeconfig writes an admin kubeconfig for the environment to a file in
// the test's temporary directory and returns its path.
func (e *Env) WriteKubeconfig(t T) string {
	t.Helper()
	user, err := e.AddUser(envtest.User{Name: "test-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatalf("add envtest admin user: %v", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		t.Fatalf("render kubeconfig: %v", err)
	}
	if _, err := clientcmd.Load(data); err != nil {
		t.Fatalf("envtest produced an unreadable kubeconfig: %v", err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("write kubeconfig: %v", err)
	}
	return path
}

// addUserMu serialises AddUser: envtest's certificate authority is not
// safe for concurrent use (each certificate increments a shared serial
// number), and parallel tests add users to the servers they share.
var addUserMu sync.Mutex

// AddUser is envtest's AddUser, safe for concurrent use.
func (e *Env) AddUser(user envtest.User, baseConfig *rest.Config) (*envtest.AuthenticatedUser, error) {
	addUserMu.Lock()
	defer addUserMu.Unlock()
	return e.Environment.AddUser(user, baseConfig)
}
