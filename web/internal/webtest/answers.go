package webtest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"
)

// logBuffer collects a server's log lines; the server writes from its
// handlers' goroutines.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// setupLogged is setup with the server's log kept.
func SetupLogged(t *testing.T, readTimeout time.Duration) (*Env, *LogBuffer) {
	t.Helper()
	logs := &LogBuffer{}
	return SetupWith(t, readTimeout, slog.New(slog.NewTextHandler(logs, nil))), logs
}

// exec runs statements on the test's database, as an operator would.
func (e *Env) Exec(sql string) {
	e.T.Helper()
	if _, err := e.Store.Pool().Exec(context.Background(), sql); err != nil {
		e.T.Fatal(err)
	}
}

// within sends req with a deadline, so that a request the server never
// answers fails the test instead of hanging it.
func (e *Env) Within(d time.Duration, req *http.Request) (*http.Response, []byte) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		e.T.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.T.Fatal(err)
	}
	return resp, raw
}

// lockTable holds an ACCESS EXCLUSIVE lock on table until the test ends,
// so that any read of it waits.
func (e *Env) LockTable(table string) {
	e.T.Helper()
	ctx := context.Background()
	tx, err := e.Store.Pool().Begin(ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() { tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, `LOCK TABLE `+table+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		e.T.Fatal(err)
	}
}
