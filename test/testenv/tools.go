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
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// builtTool is a controller binary hack/tools-bin.sh builds from the Go
// module proxy and caches, with the CRDs it serves in crds/ beside it.
type builtTool struct {
	// kind is the tools-bin.sh argument; binary the file it builds.
	kind, binary string

	once sync.Once
	dir  string
	err  error
}

var (
	bmoTool           = &builtTool{kind: "bmo", binary: "baremetal-operator"}
	ipamTool          = &builtTool{kind: "ipam", binary: "ip-address-manager"}
	inClusterIPAMTool = &builtTool{kind: "incluster-ipam", binary: "ipam-incluster"}
)

// Dir builds the tool once per test process and returns its directory.
func (b *builtTool) Dir() (string, error) {
	b.once.Do(func() {
		b.dir, b.err = runToolsBin(b.kind)
	})
	return b.dir, b.err
}

func (b *builtTool) crdPath(t T) string {
	t.Helper()
	dir, err := b.Dir()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return filepath.Join(dir, "crds")
}

// runTool runs tool against the environment as a system:masters user named
// after it, with args and extraEnv, until the test ends (see RunProcess).
func (e *Env) runTool(t T, tool *builtTool, extraEnv []string, args ...string) *Process {
	t.Helper()
	dir, err := tool.Dir()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return e.RunProcess(t, filepath.Join(dir, tool.binary), extraEnv, args...)
}

// RunProcess runs the controller binary at path against the environment as
// a system:masters user named after it, with args and extraEnv, until the
// test ends. The kubeconfig is handed over in KUBECONFIG, which every
// controller-runtime manager reads. Its output is shown if the test fails.
// The returned Process can be killed and restarted meanwhile.
func (e *Env) RunProcess(t T, path string, extraEnv []string, args ...string) *Process {
	t.Helper()
	return e.runProcessAs(t, path, envtest.User{Name: filepath.Base(path), Groups: []string{"system:masters"}}, extraEnv, args...)
}

// runProcessAs is RunProcess as user.
func (e *Env) runProcessAs(t T, path string, as envtest.User, extraEnv []string, args ...string) *Process {
	t.Helper()
	name := filepath.Base(path)
	user, err := e.AddUser(as, nil)
	if err != nil {
		t.Fatalf("add %s user: %v", as.Name, err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatalf("%s kubeconfig: %v", name, err)
	}
	kubeconfigPath := filepath.Join(t.TempDir(), name+"-kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatalf("write %s kubeconfig: %v", name, err)
	}
	p := &Process{
		name: name, path: path, args: args,
		environ: append(append(os.Environ(), "KUBECONFIG="+kubeconfigPath), extraEnv...),
	}
	if err := p.start(); err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		_ = p.Kill()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.Output())
		}
	})
	return p
}

// Process is a binary run by RunProcess. Kill ends it as a crash would, and
// Restart runs it again with the same command line, environment and
// kubeconfig, so tests can show that a controller converges whatever instant
// it dies at. Its output accumulates across runs, with a line marking each
// start and exit.
type Process struct {
	name, path    string
	args, environ []string
	output        syncBuffer

	// mu serialises Kill and Restart: a kill must wait for its process to
	// be gone before the next run may start.
	mu sync.Mutex
	// exited is closed once the current run has exited and been reaped.
	exited chan struct{}
	cmd    *exec.Cmd
	runs   int
	// closed: the test ended; Restart no longer starts anything.
	closed bool
}

// start runs the process once more; p.mu is held or p not yet shared.
func (p *Process) start() error {
	cmd := exec.CommandContext(context.Background(), p.path, p.args...)
	cmd.Env = p.environ
	cmd.Stdout = &p.output
	cmd.Stderr = &p.output
	// The output goes through pipes that a killed process closes at once;
	// the delay only bounds a child that inherited them.
	cmd.WaitDelay = 10 * time.Second
	p.runs++
	fmt.Fprintf(&p.output, "=== %s: run %d starting at %s\n", p.name, p.runs, time.Now().Format(time.StampMilli))
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	run := p.runs
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(&p.output, "=== %s: run %d exited at %s: %v\n", p.name, run, time.Now().Format(time.StampMilli), err)
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	return nil
}

// Kill sends the process SIGKILL, which it cannot catch, as the kernel or a
// node failure would end it, and returns once it has exited. Killing a
// process that already exited does nothing.
func (p *Process) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.kill()
}

func (p *Process) kill() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s: %w", p.name, err)
	}
	<-p.exited
	return nil
}

// Restart kills the process if it still runs and starts it again with the
// same command line, environment and kubeconfig.
func (p *Process) Restart() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("restart %s: the test has ended", p.name)
	}
	if err := p.kill(); err != nil {
		return err
	}
	return p.start()
}

// Pid is the process ID of the current run.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Running reports whether the current run has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Runs is how many times the process was started.
func (p *Process) Runs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runs
}

// Output is what every run wrote to stdout and stderr so far, with a line
// marking each start and exit.
func (p *Process) Output() string { return p.output.String() }
