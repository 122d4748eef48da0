package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/testdb"
)

// The queue bench runs for real, briefly, in synchronous and queued mode
// on the machine's nats-server (the sync_interval row needs a newer one
// than Debian's, which the bench builds by default). Nothing about the
// rates is asserted.
func TestBenchQueue(t *testing.T) {
	t.Parallel()
	server := testdb.ServerURL(t)
	nats, err := exec.LookPath("nats-server")
	if err != nil {
		nats = "/usr/sbin/nats-server"
	}
	if _, err := os.Stat(nats); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no nats-server: %v", err)
		}
		t.Skipf("needs nats-server (Debian package nats-server): %v", err)
	}
	var stdout, stderr bytes.Buffer
	args := []string{"queue", "--deliveries", "200", "--senders", "8", "--mode", "sync,queued", "--nats-server", nats, "--server-url", server}
	if err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatalf("queue: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	out := stdout.String()
	for _, want := range []string{"answers/s", "last event applied", modeLabels[modeSync], modeLabels[modeQueued]} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
}
