// Package queuetest gives tests a delivery queue of their own on the NATS
// server of the development and CI machines (127.0.0.1:4222, or
// TIDEMARK_TEST_NATS_URL): a uniquely named stream, deleted when the test
// ends. Without a server the test is skipped, except with CI=true, where
// it fails.
package queuetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tidemark/tidemark/internal/queue"
)

// Keys are the queue keys of tests (TIDEMARK_ENCRYPTION_KEY's keyring).
var Keys = [][]byte{[]byte("0123456789abcdef0123456789abcdef")}

// URL is the NATS server tests use.
func URL() string {
	if u := os.Getenv("TIDEMARK_TEST_NATS_URL"); u != "" {
		return u
	}
	return "nats://127.0.0.1:4222"
}

// Require skips t (fails it under CI=true) when no NATS server with
// JetStream answers at URL.
func Require(t testing.TB) {
	t.Helper()
	nc, err := nats.Connect(URL(), nats.Timeout(2*time.Second))
	if err == nil {
		defer nc.Close()
		js, _ := jetstream.New(nc)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err = js.AccountInfo(ctx); err == nil {
			return
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no NATS server with JetStream at %s: %v", URL(), err)
	}
	t.Skipf("needs NATS with JetStream at %s (nats-server -js): %v", URL(), err)
}

// Stream returns a fresh stream name and deletes the streams of that name
// (the queue's and its dead letters') when t ends.
func Stream(t testing.TB) string {
	t.Helper()
	Require(t)
	b := make([]byte, 6)
	rand.Read(b)
	name := "TEST_" + strings.ToUpper(hex.EncodeToString(b))
	t.Cleanup(func() {
		nc, err := nats.Connect(URL())
		if err != nil {
			t.Errorf("delete test streams: %v", err)
			return
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, s := range []string{name, name + "_DEAD"} {
			if err := js.DeleteStream(ctx, s); err != nil && !strings.Contains(err.Error(), "not found") {
				t.Errorf("delete test stream %s: %v", s, err)
			}
		}
	})
	return name
}

// New returns a queue on a fresh stream, with its streams created and the
// connection closed when t ends.
func New(t testing.TB) *queue.Queue {
	t.Helper()
	q, err := queue.Open(queue.Config{URL: URL(), Stream: Stream(t), Name: t.Name(), Keys: Keys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.Ensure(ctx, true); err != nil {
		t.Fatal(err)
	}
	return q
}
