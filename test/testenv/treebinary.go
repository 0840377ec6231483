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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// TreeBinary is a command of this module that tests run as a process:
// built from the working tree once per test process, into the user's
// cache (go build's own cache makes a rebuild of an unchanged tree cheap).
type TreeBinary struct {
	// Package is the command's package, relative to the module root.
	Package string
	// Name is the binary's file name.
	Name string

	once sync.Once
	path string
	err  error
}

// Path builds the binary on first use and returns where it is.
func (b *TreeBinary) Path() (string, error) {
	b.once.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			b.err = err
			return
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "capm3-testenv")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.err = err
			return
		}
		path := filepath.Join(dir, b.Name)
		cmd := exec.CommandContext(context.Background(), "go", "build", "-o", path, b.Package)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("build %s: %w\n%s", b.Package, err, out)
			return
		}
		b.path = path
	})
	return b.path, b.err
}
