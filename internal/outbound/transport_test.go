package outbound_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/tidemark/tidemark/domain/stream"
)

// TestTransportErrorsAreRedacted (review 4, M2 and L3): an attempt's error
// quotes the URL redacted, never its query, and a refused address names
// the host, not what it resolved to.
func TestTransportErrorsAreRedacted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t)
	url := strings.Replace(rc.srv.URL, "127.0.0.1", "localhost", 1) + "/hook?token=S3cr3t"
	d, _ := e.destination(t, stream.NewDestination{URL: url})
	e.ingest(t, "a", 1)
	e.run(t, fast())
	var at []stream.DestinationAttempt
	waitFor(t, 10*time.Second, "an attempt", func() bool { at = e.attempts(t, d.ID); return len(at) > 0 })
	want := `Post "` + strings.Replace(url, "token=S3cr3t", "<redacted>", 1) +
		`": host localhost is or resolves to a private or internal address: connections to private or internal addresses are refused`
	if at[0].Error != want {
		t.Errorf("attempt error %q, want %q", at[0].Error, want)
	}
}

// TestNATSConnectionErrorsNameTheHostOnly: a NATS destination on a
// private address, not allowed, records an attempt that names its host
// and not the address it resolved to.
func TestNATSConnectionErrorsNameTheHostOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	d, _ := e.destination(t, stream.NewDestination{NATSURL: "nats://localhost:4222", Subject: "crm",
		NATS: stream.NATSAuth{NKey: string(seed)}})
	e.ingest(t, "a", 1)
	e.run(t, fast())
	var at []stream.DestinationAttempt
	waitFor(t, 10*time.Second, "an attempt", func() bool { at = e.attempts(t, d.ID); return len(at) > 0 })
	if !strings.Contains(at[0].Error, "host localhost is or resolves to a private or internal address") ||
		strings.Contains(at[0].Error, "127.0.0.1") || strings.Contains(at[0].Error, "::1") {
		t.Errorf("attempt error %q, want the host named and not what it resolved to", at[0].Error)
	}
}
