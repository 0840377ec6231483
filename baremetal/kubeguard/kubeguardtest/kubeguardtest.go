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

// Package kubeguardtest has what tests of tenant kubeconfigs share: a CA
// whose certificate parses, a kubeconfig with inline credentials, and a
// server that never answers.
package kubeguardtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// CA is a self-signed CA certificate, PEM-encoded, so kubeconfigs in unit
// tests carry certificate-authority-data that parses.
var CA = func() []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}()

// Config is a kubeconfig with inline credentials: cluster "pool", user
// "tenant", contexts "east" (namespace pool-east, the current one) and
// "west" (no namespace).
func Config() *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["pool"] = &clientcmdapi.Cluster{Server: "https://pool.example.com:6443", CertificateAuthorityData: CA}
	cfg.AuthInfos["tenant"] = &clientcmdapi.AuthInfo{Token: "abc.def"}
	cfg.Contexts["east"] = &clientcmdapi.Context{Cluster: "pool", AuthInfo: "tenant", Namespace: "pool-east"}
	cfg.Contexts["west"] = &clientcmdapi.Context{Cluster: "pool", AuthInfo: "tenant"}
	cfg.CurrentContext = "east"
	return cfg
}

// Write is cfg as kubeconfig bytes.
func Write(t testing.TB, cfg *clientcmdapi.Config) []byte {
	t.Helper()
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Silent is a tenant's server that accepts every connection and never
// answers, nor closes one, until the test ends: whoever waits for it is
// held until its own timeout. It returns the address it listens on
// (loopback) and the count of connections it accepted.
func Silent(t testing.TB) (string, *atomic.Int64) {
	t.Helper()
	listener, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := &atomic.Int64{}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = listener.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, conn := range conns {
			_ = conn.Close()
		}
	})
	return listener.Addr().String(), accepted
}
