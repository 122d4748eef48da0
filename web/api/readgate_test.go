package api_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web/httpx"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestSlowSearchesCannotHoldTheReadPool: tenant acme's two read-only
// tokens send 16 searches at once, each made slow (a lock holds the table
// searches read). At most 2 per token and 3 for the tenant reach
// PostgreSQL; the rest wait briefly and are answered 503 with
// Retry-After, while tenant globex's /stats goes straight through: it is
// answered well within the read timeout that would otherwise free a
// connection for it. Without the gate, acme's searches hold every
// connection of the read pool (4 in tests) until that timeout.
func TestSlowSearchesCannotHoldTheReadPool(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("globex", "crm")
	read := domain.NewAPIToken{Access: domain.TokenRead}
	read.Name = "bi-1"
	a1 := e.TokenWith("acme", read)
	read.Name = "bi-2"
	a2 := e.TokenWith("acme", read)
	b := e.Token("globex")
	stats := func(timeout time.Duration) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, e.Srv.URL+"/api/v1/tenants/globex/stats", nil)
		req.Header.Set("Authorization", "Bearer "+b)
		resp, err := (&http.Client{Timeout: timeout}).Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if status, err := stats(postgres.DefaultReadTimeout); status != http.StatusOK {
		t.Fatalf("baseline /stats: %d %v", status, err)
	}

	ctx := context.Background()
	lock, err := e.Store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, `LOCK TABLE record_search IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	answers := map[int]int{}
	for i := range 16 {
		token := a1
		if i%2 == 1 {
			token = a2
		}
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, e.Srv.URL+"/api/v1/tenants/acme/records?q=zzz", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			mu.Lock()
			answers[resp.StatusCode]++
			mu.Unlock()
		})
	}
	// acme's searches reach the lock; the most that ever wait on it at once
	// is what the gate let through.
	waiting := func() int {
		var n int
		if err := e.Store.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND application_name = 'tidemark-read'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	most := 0
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		most = max(most, waiting())
	}
	// globex is answered at once, well within the read timeout after which
	// acme's statements would give their connections back.
	status, err := stats(postgres.DefaultReadTimeout / 2)
	most = max(most, waiting())
	if _, err := lock.Exec(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if status != http.StatusOK {
		t.Fatalf("globex's /stats during acme's searches: %d %v, want 200 at once", status, err)
	}
	if most == 0 || most > httpx.ReadsPerTenant {
		t.Fatalf("%d of acme's searches waited in PostgreSQL at once, want 1 to %d (answers %v)", most, httpx.ReadsPerTenant, answers)
	}
	if answers[http.StatusOK]+answers[http.StatusServiceUnavailable] != 16 || answers[http.StatusServiceUnavailable] < 16-httpx.ReadsPerTenant {
		t.Fatalf("acme's 16 searches answered %v, want at most %d 200 and the rest 503", answers, httpx.ReadsPerTenant)
	}

}
