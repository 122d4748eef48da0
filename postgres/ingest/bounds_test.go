package ingest_test

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
)

// TestLateAnswerOfACommitIsNoError: when the database's answer to a
// delivery's transaction arrives after its sender's deadline, the sender
// gets that answer (applied), not an error for a delivery that was stored.
// The database's answers on the connection that carries the delivery are
// held back by a proxy past the deadline. Before, the deadline cancelled
// the connection while the COMMIT's answer was on its way: the sender was
// told 503, the delivery was stored, and the provider's retry came out
// duplicate with no answer ever saying applied (TestTwoNodesOneDatabase on
// Citus, under load).
func TestLateAnswerOfACommitIsNoError(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	const marker = "e-answered-late"
	proxy := slowAnswers(t, s.Pool().Config().ConnConfig.Port, marker, 600*time.Millisecond)
	slow := storeConfigured(t, s.Pool().Config().ConnString(), func(c *pgxpool.Config) {
		c.ConnConfig.Host, c.ConnConfig.Port, c.ConnConfig.Fallbacks = "127.0.0.1", proxy, nil
		c.MaxConns = 4
	})
	// Warm up: the statements are prepared on the connections first.
	for i := range 3 {
		ingestOne(t, slow, p, event("warm-"+string(rune('a'+i)), "c-warm", int64(i+1), `{"v":1}`))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	results, err := slow.Ingest(ctx, delivery(p), p, []domain.Event{event(marker, "c-late", 1, `{"v":1}`)})
	rev, _, n := record(t, s, p, "c-late")
	switch {
	case err != nil && n > 0:
		t.Fatalf("the sender got %v, but the delivery was stored (revision %d)", err, rev)
	case err != nil:
		t.Fatalf("the sender got %v and nothing was stored: the proxy held back more than the answer", err)
	case len(results) != 1 || results[0].Outcome != domain.Applied || n != 1:
		t.Fatalf("results %+v, record applied %d times; want applied once", results, n)
	}
}

// slowAnswers is a proxy to the database's TCP port on this host that
// holds back, by delay, every answer on a connection once the client sent
// marker on it; it returns its own port.
func slowAnswers(t *testing.T, port uint16, marker string, delay time.Duration) uint16 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	target := "127.0.0.1:" + strconv.Itoa(int(port))
	go func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			var marked atomic.Bool
			go func() {
				defer server.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := client.Read(buf)
					if n > 0 {
						if bytes.Contains(buf[:n], []byte(marker)) {
							marked.Store(true)
						}
						if _, werr := server.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
			go func() {
				defer client.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := server.Read(buf)
					if n > 0 {
						if marked.Load() {
							time.Sleep(delay)
						}
						if _, werr := client.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return uint16(l.Addr().(*net.TCPAddr).Port)
}
