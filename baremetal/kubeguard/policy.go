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
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ServerPolicy says which API servers a tenant's kubeconfig may send the
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
	// Flags is the prefix of the operator flags that set this policy
	// ("identity" for --identity-allow-loopback, ...), named in refusals so
	// the tenant knows whom to ask; empty: "identity".
	Flags string
}

// Rules a server can break; they appear in the ServerNotAllowed condition,
// followed by the operator flag that lifts or sets them, if any.
const (
	RuleHTTP        = "plain http is not allowed"
	RuleLoopback    = "loopback addresses are not allowed"
	RuleLinkLocal   = "link-local addresses are not allowed"
	RuleMetadata    = "cloud metadata endpoints are not allowed"
	RuleUnspecified = "the unspecified address is not allowed"
	RuleMulticast   = "multicast and broadcast addresses are not allowed"
	RuleCIDR        = "the address is outside the provider's allowed CIDRs"
	RuleHostSuffix  = "the host is not under one of the provider's allowed host suffixes"
	RuleInsecure    = "insecure-skip-tls-verify is not allowed"
	RuleProxy       = "proxy-url is not allowed"
)

// ruleFlags are the operator flags (after the policy's prefix) behind the
// rules an operator can change: those that permit, and those that narrow.
var (
	ruleLiftedBy = map[string]string{
		RuleHTTP: "allow-http", RuleLoopback: "allow-loopback",
		RuleInsecure: "allow-insecure-skip-tls-verify", RuleProxy: "allow-proxy-url",
	}
	ruleSetBy = map[string]string{RuleCIDR: "allowed-cidrs", RuleHostSuffix: "allowed-host-suffixes"}
)

// FlagName is the operator flag of this policy with suffix, e.g.
// "--workload-allow-loopback".
func (p *ServerPolicy) FlagName(suffix string) string {
	prefix := p.Flags
	if prefix == "" {
		prefix = "identity"
	}
	return "--" + prefix + "-" + suffix
}

// refuse is the error for host breaking rule, with the flag behind it.
func (p *ServerPolicy) refuse(host, rule string) *ServerNotAllowedError {
	e := &ServerNotAllowedError{Host: host, Rule: rule}
	if suffix, ok := ruleLiftedBy[rule]; ok {
		e.hint = "the provider's operator can permit it with " + p.FlagName(suffix)
	} else if suffix, ok := ruleSetBy[rule]; ok {
		e.hint = p.FlagName(suffix)
	}
	return e
}

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
	// hint names the operator flag behind Rule, if any.
	hint string
}

func (e *ServerNotAllowedError) Error() string {
	msg := e.Rule
	if e.hint != "" {
		msg += " (" + e.hint + ")"
	}
	if e.Host == "" {
		return msg
	}
	return fmt.Sprintf("server host %q: %s", e.Host, msg)
}

// check refuses, before any connection (Load), a kubeconfig whose server
// URL (scheme, and the host when it is an IP literal or a known name),
// certificate verification or proxying break the policy: a terminal
// ServerNotAllowed Error, since only a new kubeconfig can change it.
func (p *ServerPolicy) check(k *Kubeconfig) error {
	srv, err := ParseServer(k.RESTConfig.Host)
	if err != nil {
		return newError(ReasonInvalidKubeconfig, true, err, "server %q is not a URL", k.RESTConfig.Host)
	}
	if err := p.checkKubeconfig(srv.URL, k.RESTConfig.Insecure, k.RESTConfig.Proxy != nil); err != nil {
		return newError(ReasonServerNotAllowed, true, err,
			"the API server at %s is refused, nothing was sent to it: %s", srv.Display, err.Error())
	}
	return nil
}

func (p *ServerPolicy) checkKubeconfig(server *url.URL, insecureSkipTLSVerify, proxy bool) error {
	if err := p.checkURL(server); err != nil {
		return err
	}
	if insecureSkipTLSVerify && !p.AllowInsecureSkipTLSVerify {
		return p.refuse(server.Hostname(), RuleInsecure)
	}
	if proxy && !p.AllowProxyURL {
		return p.refuse(server.Hostname(), RuleProxy)
	}
	return nil
}

// checkURL judges the scheme and host of a URL about to be requested.
func (p *ServerPolicy) checkURL(u *url.URL) error {
	switch u.Scheme {
	case "https":
	case "http":
		if !p.AllowHTTP {
			return p.refuse(u.Hostname(), RuleHTTP)
		}
	default:
		return p.refuse(u.Hostname(), fmt.Sprintf("scheme %q is not allowed", u.Scheme))
	}
	return p.checkHost(u.Hostname())
}

// checkHost judges a host as written (a name or an IP literal), before any
// name resolution.
func (p *ServerPolicy) checkHost(host string) error {
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if addr, err := netip.ParseAddr(name); err == nil {
		if len(p.AllowedHostSuffixes) > 0 {
			return p.refuse(host, RuleHostSuffix)
		}
		if rule := p.addressRule(addr); rule != "" {
			return p.refuse(host, rule)
		}
		return nil
	}
	if metadataHostNames[name] {
		return p.refuse(host, RuleMetadata)
	}
	if len(p.AllowedHostSuffixes) > 0 && !hasAllowedSuffix(name, p.AllowedHostSuffixes) {
		return p.refuse(host, RuleHostSuffix)
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
			return nil, p.refuse(host, refused.Rule)
		}
		return conn, err
	}
}
