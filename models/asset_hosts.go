package models

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"syscall"
)

// Asset hosts. A rep fetches a definition's asset URLs from inside the
// cell's network, so an asset URL is a way for an API client to make a
// cell read what only the cell can reach. The addresses where clouds
// serve instance metadata and credentials are refused unless the board's
// configuration allows them (allow_link_local_asset_hosts), and the rep
// refuses to connect to a link-local address as well, whatever name led
// there (rep/executor/asset_fetch.go):
//
//   - 169.254.0.0/16, IPv4 link-local: 169.254.169.254 is the metadata
//     service of AWS, GCP, Azure, OpenStack and Oracle, 169.254.170.2
//     AWS ECS task credentials;
//   - fe80::/10, IPv6 link-local;
//   - fd00:ec2::254, AWS's IPv6 metadata service;
//   - 100.100.100.200, Alibaba Cloud's metadata service;
//   - the names metadata.google.internal, metadata (GCP's short name),
//     instance-data and instance-data.ec2.internal (AWS), case aside and
//     with or without a final dot;
//   - any of these addresses written as IPv4-mapped IPv6
//     (::ffff:169.254.169.254).
//
// A host written as a number in another form than dotted decimal
// (2852039166, 0xa9fea9fe, 0251.0376.0251.0376, 169.254.43518) is refused
// always: some resolvers read it as an address, and it hides which one.

var (
	linkLocalPrefixes = []netip.Prefix{
		netip.MustParsePrefix("169.254.0.0/16"),
		netip.MustParsePrefix("fe80::/10"),
	}
	metadataAddresses = []netip.Addr{
		netip.MustParseAddr("100.100.100.200"),
		netip.MustParseAddr("fd00:ec2::254"),
	}
	metadataNames = []string{"metadata.google.internal", "metadata", "instance-data", "instance-data.ec2.internal"}
	// numericLabel is a label of an IPv4 address in a form inet_aton
	// reads: decimal, octal (leading 0) or hex (0x).
	numericLabel = regexp.MustCompile(`^(0[xX][0-9a-fA-F]*|[0-9]+)$`)
)

// IsLinkLocalOrMetadata reports whether addr is a link-local address or
// one of the metadata services' (see the list above). The rep checks the
// address it is about to connect to with it.
func IsLinkLocalOrMetadata(addr netip.Addr) bool {
	// A prefix contains no address with a zone: fe80::1%eth0 is fe80::1.
	addr = addr.Unmap().WithZone("")
	for _, p := range linkLocalPrefixes {
		if p.Contains(addr) {
			return true
		}
	}
	for _, a := range metadataAddresses {
		if a == addr {
			return true
		}
	}
	return false
}

// ValidateAssetHosts refuses, when allowLinkLocal is false, an asset of
// def whose URL names a link-local or metadata host, naming the asset's
// url under path ("desired_lrp.definition"). The URLs were validated
// already ((*LRPDefinition).Validate); the board runs this with its
// allow_link_local_asset_hosts setting after it.
func ValidateAssetHosts(path string, def *LRPDefinition, allowLinkLocal bool) error {
	for i, asset := range def.GetAssets() {
		if err := validateAssetHost(child(indexed(child(path, "assets"), i), "url"), asset.GetUrl(), allowLinkLocal); err != nil {
			return err
		}
	}
	return nil
}

// RefuseLinkLocal is a net.Dialer Control that refuses to connect to a
// link-local or cloud metadata address (IsLinkLocalOrMetadata) with
// "<address>: <refusal>". It runs on the address about to be connected
// to, after name resolution, so neither a name that resolves to one nor a
// redirect to one slips past it: the rep's asset downloads and the board's
// analysis calls dial through it.
func RefuseLinkLocal(refusal error) func(network, address string, c syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		addr, err := netip.ParseAddr(host)
		if err != nil {
			return err
		}
		if IsLinkLocalOrMetadata(addr) {
			return fmt.Errorf("%s: %w", addr, refusal)
		}
		return nil
	}
}

// ValidateAnalysisHosts refuses an analysis whose webhook URLs name a
// link-local or cloud metadata host, as ValidateAssetHosts does for
// assets: the board calls them (analysis.Analyst refuses such an address
// again when it connects, for names that resolve to one).
func ValidateAnalysisHosts(path string, a *RolloutAnalysis, allowLinkLocal bool) error {
	for i, c := range a.GetChecks() {
		if c.GetProvider() != AnalysisProviderWebhook {
			continue
		}
		if err := validateAssetHost(child(indexed(child(path, "checks"), i), "url"), c.GetUrl(), allowLinkLocal); err != nil {
			return err
		}
	}
	return nil
}

func validateAssetHost(path, raw string, allowLinkLocal bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if addr, err := netip.ParseAddr(host); err == nil {
		if !allowLinkLocal && IsLinkLocalOrMetadata(addr) {
			return ErrInvalidField(path, fmt.Sprintf("must not name a link-local or cloud metadata address, got %s "+
				"(the board's allow_link_local_asset_hosts allows them)", host))
		}
		return nil
	}
	if numericHost(host) {
		return ErrInvalidField(path, fmt.Sprintf("must write an IP address in dotted decimal, got %s", quoteShort(host)))
	}
	for _, name := range metadataNames {
		if !allowLinkLocal && host == name {
			return ErrInvalidField(path, fmt.Sprintf("must not name a cloud metadata service, got %s "+
				"(the board's allow_link_local_asset_hosts allows them)", host))
		}
	}
	return nil
}

// numericHost reports whether every label of host reads as a number, as
// inet_aton takes "2852039166" or "0xa9.0xfe.0xa9.0xfe" for an address.
func numericHost(host string) bool {
	for _, label := range strings.Split(host, ".") {
		if !numericLabel.MatchString(label) {
			return false
		}
	}
	return true
}
