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
	"net"
	"strconv"
	"testing"
)

// TestFreeLoopbackAddrOutsideTheEphemeralRange: the ports handed to the
// processes a test starts are below the range the kernel gives outgoing
// connections from, so that none of the connections the API servers and
// controllers open can take one before its process binds it; each is
// handed out once, and is free.
func TestFreeLoopbackAddrOutsideTheEphemeralRange(t *testing.T) {
	start := ephemeralRangeStart()
	seen := map[string]bool{}
	for range 50 {
		addr := FreeLoopbackAddr(t)
		host, portText, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, err := strconv.Atoi(portText)
		if err != nil {
			t.Fatal(err)
		}
		if host != "127.0.0.1" || port < explicitPortsLow || port >= start {
			t.Fatalf("FreeLoopbackAddr = %s; want 127.0.0.1 and a port in [%d, %d)", addr, explicitPortsLow, start)
		}
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		if _, err := listenAndRelease(addr); err != nil {
			t.Fatalf("%s is not free: %v", addr, err)
		}
	}
}
