package hook_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/alerting"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/hook"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// unlimited lifts the refusal budgets, so every forged delivery is
// answered 401 and counted.
var unlimited = hook.RefusalLimits{PerAddress: 1e9, AddressBurst: 1e9, PerProvider: 1e9, ProviderBurst: 1e9}

// TestRefusalFloodWritesNothingSynchronously: 600 forged deliveries to two
// providers are answered 401 without a deliveries row each (before this,
// every refusal inserted one before it was answered); within 10 s of the
// flood the overview's counters hold exactly 600, and at most one refused
// delivery per provider and second is kept, with its reason.
func TestRefusalFloodWritesNothingSynchronously(t *testing.T) {
	t.Parallel()
	e, pool := serverOn(webtest.Setup(t), 8, web.Config{RefusalLimits: unlimited})
	e.Provider("acme", "erp")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go e.Web.RunRefusalFlusher(ctx)
	count := func(sql string) (n int) {
		t.Helper()
		if err := pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	const floodN = 600
	var answers tally
	var sent atomic.Int64
	var flood sync.WaitGroup
	c := clientAt(t, "127.0.0.5", 32)
	began := time.Now()
	for range 32 {
		flood.Go(func() {
			for n := sent.Add(1); n <= floodN; n = sent.Add(1) {
				provider := []string{"crm", "erp"}[n%2]
				answers.add(send(t, c, forged(e.Srv.URL, "acme", provider, fmt.Sprintf("bad-%d", n))))
			}
		})
	}
	flood.Wait()
	took := time.Since(began)
	rows := count(`SELECT count(*) FROM deliveries`)
	t.Logf("%d forged deliveries answered %v in %v; %d deliveries rows right after", floodN, answers.counts(), took.Round(time.Millisecond), rows)
	if answers.n(http.StatusUnauthorized) != floodN {
		t.Fatalf("answers %v, want %d × 401", answers.counts(), floodN)
	}
	// Only the flusher writes, at most one sample per provider and second.
	if most := 2 * (int(took.Seconds()) + 2); rows > most {
		t.Fatalf("%d deliveries rows after %v of refusals, want at most %d: refusals are written synchronously", rows, took, most)
	}

	deadline := time.Now().Add(10 * time.Second)
	counted := 0
	for ; time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if counted = count(`SELECT coalesce(sum(n), 0) FROM outcome_counters WHERE outcome = 'delivery_rejected'`); counted >= floodN {
			break
		}
	}
	if counted != floodN {
		t.Fatalf("%d refusals counted 10 s after the flood, want exactly %d", counted, floodN)
	}
	t.Logf("counted within %v of the flood's end", (10*time.Second - time.Until(deadline)).Round(time.Millisecond))
	if n := count(`SELECT count(*) FROM (SELECT provider_id FROM deliveries GROUP BY provider_id, date_trunc('second', received_at) HAVING count(*) > 1) x`); n != 0 {
		t.Errorf("%d provider-seconds kept more than one refused delivery", n)
	}
	if n := count(`SELECT count(*) FROM deliveries WHERE status = 401 AND signature = 'invalid' AND reason LIKE 'no webhook-signature matches%' AND body IS NULL`); n == 0 {
		t.Error("no refused delivery kept with its reason")
	}
}

// TestRefusalsWaitForTheDatabase: refusals counted while the database
// cannot be reached are kept and written, exactly once, by a later flush.
func TestRefusalsWaitForTheDatabase(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	for i := range 3 {
		if status, _ := e.Post("/webhooks/acme/crm", []byte(`{}`), map[string]string{"webhook-id": fmt.Sprint(i)}); status != http.StatusUnauthorized {
			t.Fatalf("unsigned delivery answered %d", status)
		}
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, testdb.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := e.Store.Pool().Config().ConnConfig.Database
	db := pgx.Identifier{name}.Sanitize()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := admin.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`ALTER DATABASE ` + db + ` ALLOW_CONNECTIONS false`)
	defer exec(`ALTER DATABASE ` + db + ` ALLOW_CONNECTIONS true`)
	exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, name)

	down, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := e.Web.FlushRefusals(down); err == nil {
		t.Fatal("a flush to an unreachable database succeeded")
	}
	exec(`ALTER DATABASE ` + db + ` ALLOW_CONNECTIONS true`)
	// The pool may hand out a connection that died with the database's
	// sessions once more; the flusher would simply try again.
	for try := 0; ; try++ {
		if err = e.Web.FlushRefusals(ctx); err == nil || try == 3 {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := e.Store.Pool().QueryRow(ctx, `SELECT sum(n) FROM outcome_counters WHERE outcome = 'delivery_rejected'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("%d refusals counted, want 3", n)
	}
}

// TestRefusalBurstFiresTheRefusalsAlert: with the refusals rule set to
// threshold 5 over 5 minutes through the API, 8 deliveries with bad
// signatures within one second, once the flusher has written them, fire
// the refusals alert at the next evaluation, and the API lists it firing
// with the count 8. The node's clock is half an hour into an hour, so
// that the hour's counter began outside the window: before refusals were
// counted per minute, the rule counted the one delivery the log kept of
// that second and fired nothing (issue 42).
func TestRefusalBurstFiresTheRefusalsAlert(t *testing.T) {
	t.Parallel()
	offset := time.Until(time.Now().UTC().Truncate(time.Hour).Add(30 * time.Minute))
	clock := func() time.Time { return time.Now().Add(offset) }
	e := webtest.SetupConfig(t, postgres.DefaultReadTimeout, webtest.QuietLog(), func(c *web.Config) { c.Now = clock })
	token := e.Token("acme")
	req, _ := http.NewRequest(http.MethodPut, e.Srv.URL+"/api/v1/tenants/acme/alert-rules/refusals",
		strings.NewReader(`{"threshold": 5, "window": "5m"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	if status, body := e.Do(req); status != http.StatusOK || body["threshold"] != float64(5) || body["window"] != "5m0s" {
		t.Fatalf("setting the rule: %d %v", status, body)
	}

	c := clientAt(t, "127.0.0.9", 8)
	statuses := make([]int, 8)
	var burst sync.WaitGroup
	began := time.Now()
	for i := range statuses {
		burst.Go(func() {
			req := forged(e.Srv.URL, "acme", "crm", fmt.Sprintf("burst-%d", i))
			req.Header.Set("webhook-timestamp", strconv.FormatInt(clock().Unix(), 10))
			statuses[i] = send(t, c, req)
		})
	}
	burst.Wait()
	if took := time.Since(began); took >= time.Second {
		t.Fatalf("the 8 deliveries took %v, not within one second", took)
	}
	for i, status := range statuses {
		if status != http.StatusUnauthorized && status != http.StatusTooManyRequests {
			t.Fatalf("delivery %d answered %d, want a refusal (401, or 429 past the address's budget): %v", i, status, statuses)
		}
	}
	e.FlushRefusals() // as the flusher does within 2 s

	ev, err := alerting.Evaluator{Store: e.Store, Log: webtest.QuietLog()}.Evaluate(context.Background(), clock())
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Fired) != 1 || ev.Fired[0].Alert.Rule != "refusals" || ev.Fired[0].Alert.Subject != "crm" {
		t.Fatalf("the evaluation after 8 refusals fired %+v, want crm's refusals alert", ev.Fired)
	}
	status, body := e.Get("/api/v1/tenants/acme/alerts?state=firing", token)
	list := webtest.List(t, status, body, "alerts")
	if len(list) != 1 || list[0]["rule"] != "refusals" || list[0]["value"] != float64(8) ||
		list[0]["summary"] != "8 refused deliveries from crm in 5m (threshold 5)." {
		t.Fatalf("firing alerts %v, want crm's refusals alert counting 8", list)
	}
}
