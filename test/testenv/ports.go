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
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// FreeLoopbackAddr returns a loopback host:port that is free, for a server
// a test starts in a process of its own (probes, metrics, webhooks), which
// binds it a moment later.
//
// The port is below the kernel's ephemeral range (ip_local_port_range),
// never one the kernel hands out itself: a port of that range, free when
// asked for, could be taken by any outgoing connection (the API servers,
// etcd and the controllers open them all the time) before the process
// binds it, and the process would exit with "address already in use"
// (a flow run of the benchmark lost its provider so). Below the range
// only an explicit bind can take it: the ports handed out by this process
// are never handed out again, and another test process picks at random
// among thousands.
func FreeLoopbackAddr(t T) string {
	t.Helper()
	addr, err := freeLoopbackAddr()
	if err != nil {
		t.Fatalf("reserve a port: %v", err)
	}
	return addr
}

// explicitPorts are the ports below the ephemeral range FreeLoopbackAddr
// picks from.
const (
	explicitPortsLow     = 10000
	explicitPortsDefault = 32768 // Linux's default start of the ephemeral range
)

var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

func freeLoopbackAddr() (string, error) {
	high := ephemeralRangeStart()
	if high-explicitPortsLow < 1000 {
		// No room below the range: the kernel's choice, as before.
		return listenAndRelease("127.0.0.1:0")
	}
	handedOut.Lock()
	defer handedOut.Unlock()
	var lastErr error
	for range 100 {
		port := explicitPortsLow + rand.IntN(high-explicitPortsLow)
		if handedOut.ports[port] {
			continue
		}
		addr, err := listenAndRelease(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			lastErr = err
			continue
		}
		handedOut.ports[port] = true
		return addr, nil
	}
	return "", fmt.Errorf("no free port below %d in 100 tries: %w", high, lastErr)
}

// listenAndRelease binds addr and lets it go, proving it free.
func listenAndRelease(addr string) (string, error) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", addr)
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// ephemeralRangeStart is the first port the kernel may give an outgoing
// connection or a listener on port 0.
func ephemeralRangeStart() int {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return explicitPortsDefault
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		return explicitPortsDefault
	}
	start, err := strconv.Atoi(fields[0])
	if err != nil || start <= 0 {
		return explicitPortsDefault
	}
	return start
}
