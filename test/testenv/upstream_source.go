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
	"path/filepath"
	"strings"
	"sync"
)

// UpstreamSource is upstream CAPM3's source tree at the release of
// hack/tools-bin.sh (UPSTREAM_CAPM3_VERSION), as the Go module cache holds
// it: read-only, nothing built. Tests compare this provider's files with
// upstream's there (its release's cluster template, its Tilt files).
type UpstreamSource struct {
	// Dir is the module's directory in the module cache.
	Dir string
	// Version is the release's tag, e.g. v1.13.2.
	Version string
}

var upstreamSource = struct {
	once sync.Once
	dir  string
	err  error
}{}

// UpstreamCAPM3Source downloads upstream CAPM3's module once per test
// process (a no-op when the module cache has it) and returns where it is.
func UpstreamCAPM3Source(t T) UpstreamSource {
	t.Helper()
	upstreamSource.once.Do(func() {
		upstreamSource.dir, upstreamSource.err = runToolsBin("upstream-capm3-source")
	})
	if upstreamSource.err != nil {
		t.Fatalf("%v", upstreamSource.err)
	}
	_, version, ok := strings.Cut(filepath.Base(upstreamSource.dir), "@")
	if !ok {
		t.Fatalf("upstream CAPM3 module directory %s names no version", upstreamSource.dir)
	}
	return UpstreamSource{Dir: upstreamSource.dir, Version: version}
}
