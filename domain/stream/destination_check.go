package stream

import (
	"net/url"
	"strings"

	"github.com/tidemark/tidemark/domain"
)

// Bounds of what an owner gives for a destination.
const (
	MaxDestinationURLBytes = 2048
	MaxSubjectBytes        = 200
	MaxNATSCredsBytes      = 16 << 10
	MaxNATSNKeyBytes       = 128
	MaxNATSTLSCABytes      = 32 << 10
)

// Check validates what an owner gives for a destination and returns it
// with its defaults filled in (types, format, max in flight). It checks the form
// of the URL only; whether it may be reached is internal/egress's to say,
// after DNS resolution. A NATS destination needs credentials unless
// AllowPrivate (NATSAuth.check).
func (nd NewDestination) Check() (NewDestination, error) {
	switch {
	case nd.URL != "" && (nd.NATSURL != "" || nd.Subject != ""):
		return nd, domain.Errorf(domain.EINVALID, "give either url, or nats_url with subject, not both")
	case nd.URL != "":
		if err := checkTargetURL("url", nd.URL, "http", "https"); err != nil {
			return nd, err
		}
		if !nd.NATS.IsZero() {
			return nd, domain.Errorf(domain.EINVALID, "nats_creds, nats_nkey and nats_tls_ca go with nats_url, not url")
		}
	case nd.NATSURL != "":
		if err := checkTargetURL("nats_url", nd.NATSURL, "nats", "tls"); err != nil {
			return nd, err
		}
		if err := checkSubject(nd.Subject); err != nil {
			return nd, err
		}
	case nd.Subject != "":
		return nd, domain.Errorf(domain.EINVALID, "subject needs nats_url, the NATS server to publish to")
	default:
		return nd, domain.Errorf(domain.EINVALID, "give url (an http or https URL to POST to), or nats_url and subject")
	}
	if len(nd.ObjectType) > domain.MaxObjectTypeBytes {
		return nd, domain.Errorf(domain.EINVALID, "object_type is %d bytes; at most %d", len(nd.ObjectType), domain.MaxObjectTypeBytes)
	}
	types := nd.Types
	if len(types) == 0 && nd.Format == FormatSlack {
		types = DefaultSlackTypes
	}
	types, err := CheckTypes(types)
	if err != nil {
		return nd, err
	}
	nd.Types = types
	if nd, err = nd.checkFormat(); err != nil {
		return nd, err
	}
	switch {
	case nd.MaxInFlight == 0:
		nd.MaxInFlight = DefaultMaxInFlight
	case nd.MaxInFlight < 1 || nd.MaxInFlight > MaxMaxInFlight:
		return nd, domain.Errorf(domain.EINVALID, "max_in_flight must be from 1 to %d, got %d", MaxMaxInFlight, nd.MaxInFlight)
	}
	if nd.NATSURL != "" {
		if nd.NATS, err = nd.NATS.check(nd.AllowPrivate); err != nil {
			return nd, err
		}
	}
	return nd, nil
}

// checkTargetURL checks that raw is an absolute URL of one of schemes with
// a host.
func checkTargetURL(field, raw string, schemes ...string) error {
	if len(raw) > MaxDestinationURLBytes {
		return domain.Errorf(domain.EINVALID, "%s is %d bytes; at most %d", field, len(raw), MaxDestinationURLBytes)
	}
	// The messages do not repeat the URL: its query may hold a credential.
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return domain.Errorf(domain.EINVALID, "%s is not an absolute URL such as %s://host.example.com/", field, schemes[0])
	}
	if u.User != nil {
		return domain.Errorf(domain.EINVALID, "%s must not contain a user name or password", field)
	}
	for _, s := range schemes {
		if u.Scheme == s {
			return nil
		}
	}
	return domain.Errorf(domain.EINVALID, "%s: the scheme must be %s", field, strings.Join(schemes, " or "))
}

// check checks the form of a NATS destination's credentials, which it
// needs unless allowPrivate: its messages carry the tenant's records, and
// a server that admits anyone lets anyone read them and publish forged
// ones. Whether they parse is internal/outbound's to say (CheckNATSAuth).
func (a NATSAuth) check(allowPrivate bool) (NATSAuth, error) {
	a.NKey = strings.TrimSpace(a.NKey)
	switch {
	case a.Creds != "" && a.NKey != "":
		return a, domain.Errorf(domain.EINVALID, "give nats_creds or nats_nkey, not both")
	case a.Creds == "" && a.NKey == "" && !allowPrivate:
		return a, domain.Errorf(domain.EINVALID, "nats_url needs credentials for the NATS server: nats_creds (the text of "+
			"a .creds file) or nats_nkey (a user nkey seed). The messages carry the workspace's records, so Tidemark "+
			"does not publish to a server that admits anyone; give the account it uses publish permission on the subject prefix only")
	case len(a.Creds) > MaxNATSCredsBytes:
		return a, domain.Errorf(domain.EINVALID, "nats_creds is %d bytes; at most %d", len(a.Creds), MaxNATSCredsBytes)
	case len(a.NKey) > MaxNATSNKeyBytes:
		return a, domain.Errorf(domain.EINVALID, "nats_nkey is %d bytes; at most %d", len(a.NKey), MaxNATSNKeyBytes)
	case len(a.TLSCA) > MaxNATSTLSCABytes:
		return a, domain.Errorf(domain.EINVALID, "nats_tls_ca is %d bytes; at most %d", len(a.TLSCA), MaxNATSTLSCABytes)
	}
	return a, nil
}

// checkSubject checks a NATS subject prefix: dot-separated tokens without
// wildcards or spaces, to which the sender appends
// .{tenant}.{provider}.{object_type}.
func checkSubject(s string) error {
	if s == "" {
		return domain.Errorf(domain.EINVALID, "subject is required with nats_url: the prefix of the subjects to publish to, such as crm.changes")
	}
	if len(s) > MaxSubjectBytes {
		return domain.Errorf(domain.EINVALID, "subject is %d bytes; at most %d", len(s), MaxSubjectBytes)
	}
	for _, token := range strings.Split(s, ".") {
		if token == "" {
			return domain.Errorf(domain.EINVALID, "subject %q has an empty token; separate tokens with single dots and do not end with one", s)
		}
		for _, r := range token {
			if r == '*' || r == '>' || r <= ' ' || r == 0x7f {
				return domain.Errorf(domain.EINVALID, "subject %q may not hold wildcards (* >), spaces or control characters", s)
			}
		}
	}
	return nil
}
