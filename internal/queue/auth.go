package queue

import (
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
)

// authOptions are the connection's credentials and TLS from cfg's files.
// Each file is read now, so that a missing one stops the command at once
// rather than every reconnect failing.
func authOptions(cfg Config) ([]nats.Option, error) {
	var opts []nats.Option
	for _, f := range []struct{ flag, path string }{{"--queue-creds", cfg.Credentials}, {"--queue-nkey", cfg.NKey}, {"--queue-tls-ca", cfg.TLSCA}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return nil, fmt.Errorf("%s: %w", f.flag, err)
		}
	}
	if cfg.Credentials != "" && cfg.NKey != "" {
		return nil, fmt.Errorf("--queue-creds and --queue-nkey: give one of them")
	}
	if cfg.Credentials != "" {
		opts = append(opts, nats.UserCredentials(cfg.Credentials))
	}
	if cfg.NKey != "" {
		opt, err := nats.NkeyOptionFromSeed(cfg.NKey)
		if err != nil {
			return nil, fmt.Errorf("--queue-nkey %s: %w", cfg.NKey, err)
		}
		opts = append(opts, opt)
	}
	if cfg.TLSCA != "" {
		opts = append(opts, nats.RootCAs(cfg.TLSCA))
	}
	return opts, nil
}

// Redact returns url (one NATS URL or a comma-separated list) with the
// user information of each replaced, for logs and messages: a password or
// token in the URL never leaves the process.
func Redact(url string) string {
	parts := strings.Split(url, ",")
	for i, p := range parts {
		rest, scheme := p, ""
		if s, r, ok := strings.Cut(p, "://"); ok {
			scheme, rest = s+"://", r
		}
		host := rest
		if end := strings.IndexAny(rest, "/?#"); end >= 0 {
			host = rest[:end]
		}
		if at := strings.LastIndex(host, "@"); at >= 0 {
			parts[i] = scheme + "xxxxx" + rest[at:]
		}
	}
	return strings.Join(parts, ",")
}
