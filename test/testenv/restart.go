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
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// StopAPIServer terminates the environment's kube-apiserver process and
// returns a function that starts it again with the same command line: the
// same port, certificates and etcd, so clients holding the old kubeconfig
// reconnect as they would to a real server coming back. envtest's own
// Stop/Start cannot do this: it generates new certificates on restart.
func (e *Env) StopAPIServer(t T) (restart func()) {
	t.Helper()
	server, err := url.Parse(e.Config.Host)
	if err != nil {
		t.Fatalf("parse API server address: %v", err)
	}
	pid, args, environ := findAPIServer(t, server.Port())
	proc, err := os.FindProcess(pid)
	if err != nil {
		t.Fatalf("find kube-apiserver %d: %v", pid, err)
	}
	if err := proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("stop kube-apiserver: %v", err)
	}
	// The process is envtest's child and is reaped by it; wait until it is
	// gone. A server with many watchers can take long to drain them: after
	// a while it is killed, as a crash would end it.
	killAt, deadline := time.Now().Add(10*time.Second), time.Now().Add(40*time.Second)
	for processAlive(pid) {
		now := time.Now()
		if now.After(killAt) {
			_ = proc.Signal(syscall.SIGKILL)
		}
		if now.After(deadline) {
			t.Fatalf("kube-apiserver %d did not stop", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return func() {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = environ
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatalf("restart kube-apiserver: %v", err)
		}
		t.Cleanup(func() {
			cancel()
			_ = cmd.Wait()
		})
	}
}

// findAPIServer finds the kube-apiserver serving on port among this
// process's children and returns its pid, argv and environment.
func findAPIServer(t T, port string) (int, []string, []string) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("list processes: %v", err)
	}
	want := "--secure-port=" + port
	for _, entry := range entries {
		var pid int
		if _, err := fmt.Sscanf(entry.Name(), "%d", &pid); err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "cmdline"))
		if err != nil || !bytes.Contains(raw, []byte(want)) {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if filepath.Base(args[0]) != "kube-apiserver" {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "environ"))
		if err != nil {
			t.Fatalf("read kube-apiserver environment: %v", err)
		}
		return pid, args, strings.Split(strings.TrimRight(string(env), "\x00"), "\x00")
	}
	t.Fatalf("no kube-apiserver with %s found", want)
	return 0, nil, nil
}

func processAlive(pid int) bool {
	raw, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "stat"))
	if err != nil {
		return false
	}
	// A zombie (state Z) has exited but is not reaped yet.
	fields := strings.Fields(string(raw))
	return len(fields) > 2 && fields[2] != "Z"
}
