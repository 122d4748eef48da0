package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestRequestWritesStopAtTheWriteTimeout: a write an API request starts
// runs under a statement timeout: with the conflict's row locked by
// another transaction, resolving it answers 503 with Retry-After once the
// timeout passes, rather than holding an ingest connection until the lock
// goes.
func TestRequestWritesStopAtTheWriteTimeout(t *testing.T) {
	t.Parallel()
	e := webtest.SetupConfig(t, postgres.DefaultReadTimeout, webtest.QuietLog(), func(c *web.Config) {
		c.WriteTimeout = 200 * time.Millisecond
	})
	d := webtest.APIData{Tenant: "acme", Provider: "crm", Secret: e.Secret, Token: e.Token("acme"), Base: "/api/v1/tenants/acme"}
	webtest.APISeed(t, e, &d, "")

	ctx := context.Background()
	lock, err := e.Store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, `SELECT FROM conflicts WHERE id = $1 FOR UPDATE`, d.ConflictID); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		status int
		body   map[string]any
	}
	done := make(chan answer, 1)
	go func() {
		status, body := e.Resolve(d, d.ConflictID, `{"resolution":"keep"}`)
		done <- answer{status, body}
	}()
	var a answer
	select {
	case a = <-done:
	case <-time.After(postgres.DefaultReadTimeout):
		lock.Rollback(ctx) // the write waited on: let it finish
		a = <-done
		t.Fatalf("resolving a locked conflict waited until the lock went (then %d %v), want a 503 at the write timeout", a.status, a.body)
	}
	lock.Rollback(ctx)
	if msg, _ := a.body["error"].(string); a.status != http.StatusServiceUnavailable || !strings.Contains(msg, "took too long") {
		t.Fatalf("resolving a locked conflict answered %d %v, want 503", a.status, a.body)
	}
	// Nothing was changed: once the lock is gone the same request works.
	if status, body := e.Resolve(d, d.ConflictID, `{"resolution":"keep"}`); status != http.StatusOK {
		t.Fatalf("resolving after the lock went: %d %v", status, body)
	}
}
