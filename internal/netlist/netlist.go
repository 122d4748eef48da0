// Package netlist reads lists of networks from flags and settings.
package netlist

import (
	"fmt"
	"net/netip"
	"strings"
)

// Parse reads a comma-separated list of CIDRs, as Salesforce's
// allowed networks and serve --trusted-proxies take it. A bare address is a
// single-host network; empty entries are skipped.
func Parse(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, entry := range strings.Split(list, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if p, err := netip.ParsePrefix(entry); err == nil {
			out = append(out, p.Masked())
			continue
		}
		if a, err := netip.ParseAddr(entry); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		return nil, fmt.Errorf("%q is not a CIDR network (for example 10.0.0.0/8) or an address", entry)
	}
	return out, nil
}
