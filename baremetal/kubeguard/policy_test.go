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

package kubeguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"k8s.io/client-go/rest"
)

// dnsServer answers A and AAAA queries for the names it knows over UDP on
// loopback, and NXDOMAIN for the rest, so a test decides what a name
// resolves to and the dialer's resolver does a real lookup.
type dnsServer struct {
	conn    net.PacketConn
	records map[string][]netip.Addr
}

func startDNS(t *testing.T, records map[string][]netip.Addr) *net.Resolver {
	t.Helper()
	conn, err := (&net.ListenConfig{}).ListenPacket(context.Background(), "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dnsServer{conn: conn, records: map[string][]netip.Addr{}}
	for name, addrs := range records {
		s.records[strings.ToLower(name)+"."] = addrs
	}
	go s.serve()
	t.Cleanup(func() { _ = conn.Close() })
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", conn.LocalAddr().String())
	}}
}

func (s *dnsServer) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		var query dnsmessage.Message
		if err := query.Unpack(buf[:n]); err != nil || len(query.Questions) != 1 {
			continue
		}
		q := query.Questions[0]
		reply := dnsmessage.Message{
			Header:    dnsmessage.Header{ID: query.ID, Response: true, Authoritative: true, RCode: dnsmessage.RCodeNameError},
			Questions: query.Questions,
		}
		if addrs, ok := s.records[strings.ToLower(q.Name.String())]; ok {
			reply.RCode = dnsmessage.RCodeSuccess
			for _, addr := range addrs {
				head := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}
				switch {
				case addr.Is4() && q.Type == dnsmessage.TypeA:
					head.Type = dnsmessage.TypeA
					reply.Answers = append(reply.Answers, dnsmessage.Resource{Header: head, Body: &dnsmessage.AResource{A: addr.As4()}})
				case addr.Is6() && q.Type == dnsmessage.TypeAAAA:
					head.Type = dnsmessage.TypeAAAA
					reply.Answers = append(reply.Answers, dnsmessage.Resource{Header: head, Body: &dnsmessage.AAAAResource{AAAA: addr.As16()}})
				}
			}
		}
		packed, err := reply.Pack()
		if err != nil {
			continue
		}
		_, _ = s.conn.WriteTo(packed, from)
	}
}

// countingServer is an HTTP server on addr that counts what reaches it.
func countingServer(t *testing.T, addr string, handler http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	listener, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	hits := &atomic.Int64{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		handler(w, r)
	}))
	srv.Listener = listener
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, hits
}

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

// TestDialPolicy dials through the policy's dialer: refused addresses get
// the rule they break and no connection; allowed ones connect.
func TestDialPolicy(t *testing.T) {
	listener, _ := countingServer(t, "127.0.0.1:0", ok)
	port := listener.Listener.Addr().(*net.TCPAddr).Port
	resolver := startDNS(t, map[string][]netip.Addr{
		"metadata-alias.test": {netip.MustParseAddr("169.254.169.254")},
		"sneaky.test":         {netip.MustParseAddr("127.0.0.1")},
		"api.pool.test":       {netip.MustParseAddr("127.0.0.1")},
		"v6-link-local.test":  {netip.MustParseAddr("fe80::1")},
	})
	loopback := ServerPolicy{AllowLoopback: true}
	tests := []struct {
		name     string
		policy   ServerPolicy
		host     string
		wantRule string // empty: the connection is made
	}{
		{name: "IPv4 loopback literal", host: "127.0.0.1", wantRule: RuleLoopback},
		{name: "IPv4 loopback literal, loopback allowed", policy: loopback, host: "127.0.0.1"},
		{name: "other IPv4 loopback literal", host: "127.0.0.2", wantRule: RuleLoopback},
		{name: "IPv6 loopback literal", host: "::1", wantRule: RuleLoopback},
		{name: "IPv4-mapped IPv6 loopback", host: "::ffff:127.0.0.1", wantRule: RuleLoopback},
		{name: "IPv4 metadata literal", policy: loopback, host: "169.254.169.254", wantRule: RuleMetadata},
		{name: "IPv4 link-local literal", policy: loopback, host: "169.254.1.1", wantRule: RuleLinkLocal},
		{name: "IPv4-mapped IPv6 metadata", host: "::ffff:169.254.169.254", wantRule: RuleMetadata},
		{name: "NAT64 metadata", host: "64:ff9b::a9fe:a9fe", wantRule: RuleMetadata},
		{name: "IPv6 link-local literal", host: "fe80::1", wantRule: RuleLinkLocal},
		{name: "IPv6 link-local literal with zone", host: "fe80::1%lo", wantRule: RuleLinkLocal},
		{name: "AWS IPv6 metadata", host: "fd00:ec2::254", wantRule: RuleMetadata},
		{name: "Alibaba metadata", host: "100.100.100.200", wantRule: RuleMetadata},
		{name: "IPv4 unspecified", policy: loopback, host: "0.0.0.0", wantRule: RuleUnspecified},
		{name: "IPv6 unspecified", policy: loopback, host: "::", wantRule: RuleUnspecified},
		{name: "multicast", host: "224.0.0.1", wantRule: RuleMulticast},
		{name: "broadcast", host: "255.255.255.255", wantRule: RuleMulticast},
		{name: "metadata host name", policy: loopback, host: "metadata.google.internal", wantRule: RuleMetadata},
		{name: "metadata host name, upper case with trailing dot", host: "METADATA.Google.Internal.", wantRule: RuleMetadata},
		{name: "bare metadata host name", host: "metadata", wantRule: RuleMetadata},
		{name: "name resolving to the metadata address", policy: loopback, host: "metadata-alias.test", wantRule: RuleMetadata},
		{name: "name resolving to IPv6 link-local", policy: loopback, host: "v6-link-local.test", wantRule: RuleLinkLocal},
		{name: "name resolving to loopback", host: "sneaky.test", wantRule: RuleLoopback},
		{name: "name resolving to loopback, loopback allowed", policy: loopback, host: "sneaky.test"},
		{name: "in an allowed CIDR", policy: ServerPolicy{AllowLoopback: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}, host: "127.0.0.1"},
		{name: "outside the allowed CIDRs", policy: ServerPolicy{AllowLoopback: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}, host: "127.0.0.2", wantRule: RuleCIDR},
		{name: "name resolving outside the allowed CIDRs", policy: ServerPolicy{AllowLoopback: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, host: "sneaky.test", wantRule: RuleCIDR},
		{name: "CIDRs do not lift the loopback rule", policy: ServerPolicy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, host: "127.0.0.1", wantRule: RuleLoopback},
		{name: "under an allowed suffix", policy: ServerPolicy{AllowLoopback: true, AllowedHostSuffixes: []string{".pool.test"}}, host: "api.pool.test"},
		{name: "the suffix itself, case-insensitive", policy: ServerPolicy{AllowLoopback: true, AllowedHostSuffixes: []string{"API.pool.test"}}, host: "api.pool.test"},
		{name: "not under an allowed suffix", policy: ServerPolicy{AllowLoopback: true, AllowedHostSuffixes: []string{"pool.test"}}, host: "sneaky.test", wantRule: RuleHostSuffix},
		{name: "a look-alike of the suffix", policy: ServerPolicy{AllowLoopback: true, AllowedHostSuffixes: []string{"pool.test"}}, host: "evilpool.test", wantRule: RuleHostSuffix},
		{name: "an IP literal when suffixes are set", policy: ServerPolicy{AllowLoopback: true, AllowedHostSuffixes: []string{"pool.test"}}, host: "127.0.0.1", wantRule: RuleHostSuffix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := tt.policy
			policy.Resolver = resolver
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			address := net.JoinHostPort(tt.host, "1")
			if tt.wantRule == "" {
				address = net.JoinHostPort(tt.host, strconv.Itoa(port))
			}
			conn, err := policy.dialer(2*time.Second)(ctx, "tcp", address)
			if tt.wantRule == "" {
				if err != nil {
					t.Fatalf("dial %s: %v, want a connection", address, err)
				}
				_ = conn.Close()
				return
			}
			if conn != nil {
				_ = conn.Close()
			}
			var refused *ServerNotAllowedError
			if !errors.As(err, &refused) {
				t.Fatalf("dial %s: %v, want refusal by rule %q", address, err, tt.wantRule)
			}
			if refused.Rule != tt.wantRule {
				t.Fatalf("dial %s refused by %q, want %q", address, refused.Rule, tt.wantRule)
			}
			if refused.Host != tt.host {
				t.Fatalf("refusal names host %q, want the host as written, %q", refused.Host, tt.host)
			}
		})
	}
}

// TestRefusalNamesTheFlag: a refusal tells the tenant which operator flag
// would lift or set the rule, for the policy it comes from.
func TestRefusalNamesTheFlag(t *testing.T) {
	tests := []struct {
		policy ServerPolicy
		server string
		want   string
	}{
		{policy: ServerPolicy{}, server: "https://127.0.0.1:6443", want: "--identity-allow-loopback"},
		{policy: ServerPolicy{Flags: "workload"}, server: "https://127.0.0.1:6443", want: "--workload-allow-loopback"},
		{policy: ServerPolicy{Flags: "workload"}, server: "http://api.example.com", want: "--workload-allow-http"},
		{policy: ServerPolicy{Flags: "workload", AllowedHostSuffixes: []string{"pool.test"}}, server: "https://api.example.com",
			want: "--workload-allowed-host-suffixes"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			k := &Kubeconfig{RESTConfig: &rest.Config{Host: tt.server}}
			err := tt.policy.check(k)
			ge, ok := AsError(err)
			if !ok || ge.Reason != ReasonServerNotAllowed || !strings.Contains(ge.Message, tt.want) {
				t.Fatalf("got %v, want ServerNotAllowed naming %s", err, tt.want)
			}
		})
	}
	// Link-local and metadata addresses have no flag: nothing lifts them.
	err := (&ServerPolicy{Flags: "workload", AllowLoopback: true}).check(&Kubeconfig{RESTConfig: &rest.Config{Host: "https://169.254.169.254"}})
	if ge, ok := AsError(err); !ok || strings.Contains(ge.Message, "--") {
		t.Fatalf("got %v, want a refusal naming no flag", err)
	}
}
