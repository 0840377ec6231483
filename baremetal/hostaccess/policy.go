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

package hostaccess

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// ServerPolicy says which API servers an identity's kubeconfig may send the
// provider to. A kubeconfig is tenant input, and the provider dials from
// inside the management network: without a policy a tenant could make it
// request cloud metadata endpoints, admin consoles or services on the
// provider's own host, and read the outcome in its conditions.
//
// The policy is checked twice: on the kubeconfig, before anything is sent,
// and on every connection at dial time, on the address actually dialled, so
// DNS answers (and proxies) cannot route around it. The zero value is the
// default: https only, and never loopback, link-local, unspecified,
// multicast or cloud-metadata addresses.
type ServerPolicy struct {
	// AllowHTTP permits plain-http servers (development only: credentials
	// and host data then cross the network in clear text).
	AllowHTTP bool
	// AllowLoopback permits loopback addresses (127.0.0.0/8, ::1), for
	// environments where the pools' API servers run on the provider's host.
	AllowLoopback bool
	// AllowInsecureSkipTLSVerify permits kubeconfigs that disable
	// certificate verification.
	AllowInsecureSkipTLSVerify bool
	// AllowProxyURL permits kubeconfigs that name a proxy. Through a proxy
	// the provider cannot see which address the server name resolves to.
	AllowProxyURL bool
	// AllowedCIDRs, when not empty, is the only address space servers may
	// be dialled in.
	AllowedCIDRs []netip.Prefix
	// AllowedHostSuffixes, when not empty, restricts servers to host names
	// equal to, or ending in "." plus, one of these (IP literals are then
	// refused). Each list that is set must be satisfied.
	AllowedHostSuffixes []string
	// Resolver resolves server names at dial time; nil is the system's.
	Resolver *net.Resolver
}

// Rules a server can break; they appear in the ServerNotAllowed condition.
const (
	RuleHTTP        = "plain http is not allowed (the provider's operator can permit it with --identity-allow-http)"
	RuleLoopback    = "loopback addresses are not allowed (the provider's operator can permit them with --identity-allow-loopback)"
	RuleLinkLocal   = "link-local addresses are not allowed"
	RuleMetadata    = "cloud metadata endpoints are not allowed"
	RuleUnspecified = "the unspecified address is not allowed"
	RuleMulticast   = "multicast and broadcast addresses are not allowed"
	RuleCIDR        = "the address is outside the provider's allowed CIDRs (--identity-allowed-cidrs)"
	RuleHostSuffix  = "the host is not under one of the provider's allowed host suffixes (--identity-allowed-host-suffixes)"
	RuleInsecure    = "insecure-skip-tls-verify is not allowed (the provider's operator can permit it with --identity-allow-insecure-skip-tls-verify)"
	RuleProxy       = "proxy-url is not allowed (the provider's operator can permit it with --identity-allow-proxy-url)"
)

// metadataHostNames are the names cloud providers serve instance metadata
// (and often credentials) under, compared after lower-casing and removing a
// trailing dot.
var metadataHostNames = map[string]bool{
	"metadata":                     true,
	"metadata.google.internal":     true,
	"metadata.goog":                true,
	"instance-data":                true,
	"instance-data.ec2.internal":   true,
	"metadata.azure.internal":      true,
	"metadata.tencentyun.com":      true,
	"metadata.packet.net":          true,
	"metadata.platformequinix.com": true,
	"metadata.oraclecloud.com":     true,
}

// metadataAddresses are the well-known metadata endpoints. Those in
// link-local ranges are refused with them anyway; naming them makes the
// refusal say what was tried.
var metadataAddresses = map[netip.Addr]bool{
	netip.MustParseAddr("169.254.169.254"): true, // AWS, GCP, Azure, OpenStack, ...
	netip.MustParseAddr("169.254.170.2"):   true, // AWS ECS task credentials
	netip.MustParseAddr("fd00:ec2::254"):   true, // AWS over IPv6
	netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud
	netip.MustParseAddr("168.63.129.16"):   true, // Azure WireServer
}

// nat64Prefix is the well-known NAT64 prefix: its addresses reach the IPv4
// address in their last 32 bits, which is the one to judge.
var nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")

// ServerNotAllowedError says which rule of the ServerPolicy a server breaks.
type ServerNotAllowedError struct {
	// Host is the server's host as the kubeconfig names it.
	Host string
	Rule string
}

func (e *ServerNotAllowedError) Error() string {
	if e.Host == "" {
		return e.Rule
	}
	return fmt.Sprintf("server host %q: %s", e.Host, e.Rule)
}

// checkKubeconfig judges what a kubeconfig asks for before any connection:
// the server URL (scheme, and the host when it is an IP literal or a known
// name), certificate verification and proxying.
func (p *ServerPolicy) checkKubeconfig(server *url.URL, insecureSkipTLSVerify, proxy bool) error {
	if err := p.checkURL(server); err != nil {
		return err
	}
	if insecureSkipTLSVerify && !p.AllowInsecureSkipTLSVerify {
		return &ServerNotAllowedError{Host: server.Hostname(), Rule: RuleInsecure}
	}
	if proxy && !p.AllowProxyURL {
		return &ServerNotAllowedError{Host: server.Hostname(), Rule: RuleProxy}
	}
	return nil
}

// checkURL judges the scheme and host of a URL about to be requested.
func (p *ServerPolicy) checkURL(u *url.URL) error {
	switch u.Scheme {
	case "https":
	case "http":
		if !p.AllowHTTP {
			return &ServerNotAllowedError{Host: u.Hostname(), Rule: RuleHTTP}
		}
	default:
		return &ServerNotAllowedError{Host: u.Hostname(), Rule: fmt.Sprintf("scheme %q is not allowed", u.Scheme)}
	}
	return p.checkHost(u.Hostname())
}

// checkHost judges a host as written (a name or an IP literal), before any
// name resolution.
func (p *ServerPolicy) checkHost(host string) error {
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if addr, err := netip.ParseAddr(name); err == nil {
		if len(p.AllowedHostSuffixes) > 0 {
			return &ServerNotAllowedError{Host: host, Rule: RuleHostSuffix}
		}
		if rule := p.addressRule(addr); rule != "" {
			return &ServerNotAllowedError{Host: host, Rule: rule}
		}
		return nil
	}
	if metadataHostNames[name] {
		return &ServerNotAllowedError{Host: host, Rule: RuleMetadata}
	}
	if len(p.AllowedHostSuffixes) > 0 && !hasAllowedSuffix(name, p.AllowedHostSuffixes) {
		return &ServerNotAllowedError{Host: host, Rule: RuleHostSuffix}
	}
	return nil
}

func hasAllowedSuffix(name string, suffixes []string) bool {
	for _, suffix := range suffixes {
		suffix = strings.TrimSuffix(strings.TrimPrefix(strings.ToLower(suffix), "."), ".")
		if suffix != "" && (name == suffix || strings.HasSuffix(name, "."+suffix)) {
			return true
		}
	}
	return false
}

// addressRule returns the rule addr breaks, or "" if it may be dialled.
func (p *ServerPolicy) addressRule(addr netip.Addr) string {
	addr = addr.Unmap().WithZone("")
	if addr.Is6() && nat64Prefix.Contains(addr) {
		raw := addr.As16()
		addr = netip.AddrFrom4([4]byte(raw[12:]))
	}
	switch {
	case !addr.IsValid() || addr.IsUnspecified():
		return RuleUnspecified
	case metadataAddresses[addr]:
		return RuleMetadata
	case addr.IsLinkLocalUnicast():
		return RuleLinkLocal
	case addr.IsMulticast() || addr == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return RuleMulticast
	case addr.IsLoopback() && !p.AllowLoopback:
		return RuleLoopback
	}
	if len(p.AllowedCIDRs) > 0 {
		for _, prefix := range p.AllowedCIDRs {
			if prefix.Contains(addr) {
				return ""
			}
		}
		return RuleCIDR
	}
	return ""
}

// dialer returns the dial function of an identity's connections: the host
// is judged as named, then every address it resolves to is judged just
// before the connection is made to it, so no packet reaches a refused one.
func (p *ServerPolicy) dialer(timeout time.Duration) func(ctx context.Context, network, address string) (net.Conn, error) {
	d := &net.Dialer{
		Timeout:   timeout,
		KeepAlive: 30 * time.Second,
		Resolver:  p.Resolver,
		Control: func(_, address string, _ syscall.RawConn) error {
			addrPort, err := netip.ParseAddrPort(address)
			if err != nil {
				return &ServerNotAllowedError{Rule: fmt.Sprintf("address %q cannot be judged", address)}
			}
			if rule := p.addressRule(addrPort.Addr()); rule != "" {
				return &ServerNotAllowedError{Rule: rule}
			}
			return nil
		},
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return nil, &ServerNotAllowedError{Rule: fmt.Sprintf("address %q cannot be judged", address)}
		}
		if err := p.checkHost(host); err != nil {
			return nil, err
		}
		conn, err := d.DialContext(ctx, network, address)
		var refused *ServerNotAllowedError
		if errors.As(err, &refused) {
			// Name the host as the kubeconfig does, never the address it
			// resolved to: the tenant must not learn the provider's DNS.
			return nil, &ServerNotAllowedError{Host: host, Rule: refused.Rule}
		}
		return conn, err
	}
}

// checkPolicy refuses, before any connection, a kubeconfig whose server
// URL, TLS or proxy settings break the server policy. Like a kubeconfig that
// cannot be parsed, it stays refused until the Secret changes.
func (c *IdentityCache) checkPolicy(key identity.Key, parsed *kubeconfig) error {
	srv, err := parseServer(parsed.restConfig.Host)
	if err != nil {
		return identity.NewError(key, infrav1.IdentityInvalidKubeconfigReason, true, err, "server %q is not a URL", parsed.restConfig.Host)
	}
	err = c.opts.Policy.checkKubeconfig(srv.url, parsed.restConfig.Insecure, parsed.restConfig.Proxy != nil)
	if err != nil {
		return identity.NewError(key, infrav1.IdentityServerNotAllowedReason, true, err,
			"the API server at %s is refused, nothing was sent to it: %s", srv.display, err.Error())
	}
	return nil
}
