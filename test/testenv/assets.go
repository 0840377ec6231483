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

// Package testenv starts real API servers (envtest) for the project's tests,
// with the binaries our hack/tools-bin.sh builds from source.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

var (
	assetsOnce sync.Once
	assetsDir  string
	assetsErr  error
)

// AssetsDir returns the directory holding kube-apiserver and etcd. It honours
// KUBEBUILDER_ASSETS (what `make test` sets) and otherwise runs
// hack/tools-bin.sh, so `go test ./...` works on its own too; the script
// builds once and answers from its cache afterwards.
func AssetsDir() (string, error) {
	assetsOnce.Do(func() {
		if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
			assetsDir = dir
			return
		}
		assetsDir, assetsErr = runToolsBin("envtest")
	})
	return assetsDir, assetsErr
}

// runToolsBin runs hack/tools-bin.sh for one kind of binary and returns the
// directory it prints. The script builds on first use and answers from its
// cache afterwards; its progress goes to the test's stderr.
func runToolsBin(kind string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	// A cold kube-apiserver build takes minutes on two cores; allow plenty.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "tools-bin.sh"), kind)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build %s binaries with hack/tools-bin.sh: %w", kind, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// ModuleRoot finds the repository root (the directory with go.mod) from the
// test's working directory, which `go test` sets to the package directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
