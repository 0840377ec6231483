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
	"fmt"
	"os"
	"sync"
	"testing"
)

// T is what the helpers of this package need of a test: a *testing.T, or a
// Suite for what lives as long as the test binary.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Fatal(args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(f func())
	TempDir() string
	Failed() bool
}

var _ T = testing.TB(nil)

// Suite runs API servers and tools shared by the tests of one package: they
// start on first use, inside the first test that needs them, and stop when the
// package's TestMain calls Close. Each test keeps to its own namespaces on
// them, so sharing changes nothing a test asserts but the time it takes.
type Suite struct {
	mu       sync.Mutex
	cleanups []func()
	tempDirs []string
	failed   bool
}

// suiteFailure carries a Fatalf of something shared out of Once.Get, to
// the test that asked for it.
type suiteFailure struct{ msg string }

// Once is a value the tests of a Suite share, started by the first test
// that needs it.
type Once[V any] struct {
	once  sync.Once
	value V
	err   string
}

// Get starts the value once for the whole package, with the suite as
// start's T, and returns it; a failure fails the calling test and every
// later one with the same message.
func (o *Once[V]) Get(t testing.TB, s *Suite, start func(T) V) V {
	t.Helper()
	o.once.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				f, ok := r.(suiteFailure)
				if !ok {
					panic(r)
				}
				o.err = f.msg
			}
		}()
		o.value = start(s)
	})
	if o.err != "" {
		t.Fatalf("shared test environment: %s", o.err)
	}
	return o.value
}

// Close runs the cleanups registered by what the suite started, newest
// first; failed makes the tools' output show (see Failed).
func (s *Suite) Close(failed bool) {
	s.mu.Lock()
	s.failed = failed
	cleanups := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	for _, dir := range s.tempDirs {
		_ = os.RemoveAll(dir)
	}
}

// Helper implements T.
func (s *Suite) Helper() {}

// Fatalf implements T: it aborts the start in progress (see Once.Get).
func (s *Suite) Fatalf(format string, args ...any) {
	panic(suiteFailure{msg: fmt.Sprintf(format, args...)})
}

// Fatal implements T like Fatalf.
func (s *Suite) Fatal(args ...any) { panic(suiteFailure{msg: fmt.Sprint(args...)}) }

// Errorf implements T: shared things report errors only while stopping,
// when no test is left to fail.
func (s *Suite) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "shared test environment: "+format+"\n", args...)
}

// Logf implements T.
func (s *Suite) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// Cleanup implements T: f runs at Close.
func (s *Suite) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

// TempDir implements T: a directory removed at Close.
func (s *Suite) TempDir() string {
	dir, err := os.MkdirTemp("", "capm3-testenv-")
	if err != nil {
		s.Fatalf("temporary directory: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tempDirs = append(s.tempDirs, dir)
	return dir
}

// Failed implements T: whether the package's tests failed, known at Close.
func (s *Suite) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}
