package postgres

import (
	"context"
	"encoding/binary"
	"fmt"
	"html"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres/ingest"
	"github.com/tidemark/tidemark/postgres/internal/pg"
	"github.com/tidemark/tidemark/web"
)

// BenchmarkConsolePages measures the console's heaviest read pages through
// the HTTP handler, signed in, on a tenant with a million events spread
// over the last 30 days. Each page reports its p50 and p95 latency.
//
//	go test ./postgres -run '^$' -bench ConsolePages -benchtime 200x
//
// Seeding takes about a minute and happens once per run.
func BenchmarkConsolePages(b *testing.B) {
	ctx := asTest(context.Background())
	cfg, err := pgxpool.ParseConfig(testdb.NewURL(b))
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	s, _ := New(pool, testKey)

	now := time.Now()
	start := time.Now()
	seed, err := seedConsoleEvents(ctx, s, "acme", 1_000_000, now)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d events, %d deliveries and %d counter rows in %s",
		seed.Events, seed.Deliveries, seed.CounterRows, time.Since(start).Round(time.Second))

	// The seed leaves the counters as ingest writes them, spread over
	// shards. The overview folds closed hours as it reads, a bounded batch
	// at a time: fold the whole backlog first, timing it, then compact the
	// table as steady-state folding would have kept it (the space of folded
	// rows reused by later hours), so the pages below measure the everyday
	// read rather than the one-time backlog.
	start = time.Now()
	reads := 0
	for unfolded := 1; unfolded > 0; reads++ {
		if _, err := s.Overview(ctx, seed.TenantID, now); err != nil {
			b.Fatal(err)
		}
		err := pool.QueryRow(ctx, `SELECT count(*) FROM outcome_counters WHERE tenant_id = $1 AND shard <> 0 AND bucket < $2`,
			seed.TenantID, now.Add(-pg.OverviewFoldGrace).Truncate(time.Hour)).Scan(&unfolded)
		if err != nil {
			b.Fatal(err)
		}
	}
	var folded int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outcome_counters`).Scan(&folded); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM FULL ANALYZE outcome_counters`); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d overview reads folded %d counter rows into %d in %s", reads, seed.CounterRows, folded,
		time.Since(start).Round(time.Millisecond))

	if err := s.CreateUser(asTestCLI(ctx), "bench@example.com", "correct horse battery", false, "acme", domain.RoleViewer); err != nil {
		b.Fatal(err)
	}
	h := web.New(web.Config{Store: s, Sessions: s.SessionStore(), Ping: pool.Ping,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler()
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := consoleBenchClient(b, srv.URL, "bench@example.com", "correct horse battery")

	since := now.Add(-26 * time.Hour).UTC().Format("2006-01-02T15:04")
	pages := []struct {
		name, path string
		htmx       bool
	}{
		{"overview", "/t/acme", false},
		{"overview-poll", "/t/acme", true},
		{"events", "/t/acme/events", false},
		{"events-provider-stale", "/t/acme/events?provider=crm&outcome=stale", false},
		{"events-page-5", "", false}, // filled in below: the fifth page of the unfiltered log
		{"events-record", "/t/acme/events?record=c-4242", false},
		{"events-contains-day", "/t/acme/events?from=" + since + "&contains=" + url.QueryEscape(`{"job_title":"Director"}`), false},
		{"event-detail", "", false},
	}
	pages[4].path = consoleBenchNext(b, client, srv.URL+"/t/acme/events", 4)
	pages[7].path = seed.SamplePath

	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+p.path, nil)
			if p.htmx {
				req.Header.Set("HX-Request", "true")
			}
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				took = append(took, time.Since(t0))
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%s answered %d: %.300s", p.path, resp.StatusCode, body)
				}
			}
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[(len(took)*95+99)/100-1].Microseconds())/1000, "p95-ms")
		})
	}
}

// consoleBenchClient signs in and returns a client carrying the session.
func consoleBenchClient(b *testing.B, base, email, password string) *http.Client {
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := url.Values{"email": {email}, "password": {password}}
	req, _ := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") == "/login" {
		b.Fatalf("sign in: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return client
}

// consoleBenchNext follows the "Next page" link n times from page and
// returns the path it reached.
func consoleBenchNext(b *testing.B, client *http.Client, page string, n int) string {
	base, _, _ := strings.Cut(page, "/t/")
	nextLink := regexp.MustCompile(`href="([^"]+)" rel="next"`)
	path := ""
	for range n {
		resp, err := client.Get(page)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := nextLink.FindSubmatch(body)
		if m == nil {
			b.Fatalf("no next link on %s", page)
		}
		path = html.UnescapeString(string(m[1]))
		page = base + path
	}
	return path
}

// consoleSeed says what seedConsoleEvents wrote.
type consoleSeed struct {
	TenantID                        int64
	Events, Deliveries, CounterRows int
	SamplePath                      string // the console path of one seeded event
}

// seedConsoleEvents gives tenant (created if needed) three providers and n
// events spread evenly over the 30 days before now, written with COPY: one
// delivery per event plus a few refused deliveries, the outcome counters
// that ingest would have kept (one random shard per delivery), and some
// revision conflicts, a tenth of them open. The daily partitions exist
// first, as the cleanup job would have made them; the tables are analysed
// at the end, as autovacuum would have.
func seedConsoleEvents(ctx context.Context, s *Store, tenant string, n int, now time.Time) (consoleSeed, error) {
	var seed consoleSeed
	tn, err := s.Tenant(ctx, tenant)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		tn, err = s.CreateTenant(ctx, tenant, "")
	}
	if err != nil {
		return seed, err
	}
	type provider struct {
		id     int64
		weight int
	}
	var providers []provider
	for i, name := range []string{"crm", "erp", "shop"} {
		p, err := s.ConnectProvider(ctx, tn.ID, name, "standard", "whsec_dGVzdA==", nil)
		if err != nil {
			return seed, err
		}
		providers = append(providers, provider{p.ID, []int{6, 3, 1}[i]})
		for _, typ := range []string{"contact", "deal"} {
			if _, err := s.pool.Exec(ctx, `INSERT INTO scopes (tenant_id, provider_id, object_type, action) VALUES ($1, $2, $3, 'snapshot')`,
				p.TenantID, p.ID, typ); err != nil {
				return seed, err
			}
		}
	}
	t, err := s.Tenant(ctx, tenant)
	if err != nil {
		return seed, err
	}
	seed.TenantID = t.ID
	const span = 30 * 24 * time.Hour
	first := now.Add(-span)
	if _, err := s.EnsurePartitions(ctx, first, 31); err != nil {
		return seed, err
	}

	rng := rand.New(rand.NewPCG(1, 2))
	outcomes := []struct {
		outcome  domain.Outcome
		permille int
	}{
		{domain.Applied, 700}, {domain.Duplicate, 100}, {domain.Stale, 60}, {domain.Redundant, 50},
		{domain.Unversioned, 40}, {domain.Rejected, 25}, {domain.EventConflict, 15}, {domain.RevisionConflict, 10},
	}
	titles := []string{"Director", "Engineer", "Manager", "Analyst", "Founder", "Designer"}
	type counterKey struct {
		provider int64
		bucket   time.Time
		outcome  string
		shard    int
	}
	counters := map[counterKey]int64{}
	eventColumns := []string{"tenant_id", "received_at", "delivery_id", "seq", "provider_id", "object_type", "action",
		"event_id", "object_id", "revision", "outcome", "reason", "snapshot", "payload"}
	deliveryColumns := []string{"tenant_id", "id", "received_at", "provider_id", "status", "signature", "reason", "event_count"}
	var events, deliveries [][]any
	// flush writes the rows made so far, so that memory stays bounded.
	flush := func() error {
		if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{"events"}, eventColumns, pgx.CopyFromRows(events)); err != nil {
			return fmt.Errorf("copy events: %w", err)
		}
		if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{"deliveries"}, deliveryColumns, pgx.CopyFromRows(deliveries)); err != nil {
			return fmt.Errorf("copy deliveries: %w", err)
		}
		seed.Events, seed.Deliveries = seed.Events+len(events), seed.Deliveries+len(deliveries)
		events, deliveries = events[:0], deliveries[:0]
		return nil
	}
	step := span / time.Duration(n)
	for i := range n {
		if len(events) == 100_000 {
			if err := flush(); err != nil {
				return seed, err
			}
		}
		at := first.Add(step*time.Duration(i) + time.Duration(rng.Int64N(int64(step)))).Truncate(time.Microsecond)
		w := rng.IntN(10)
		p := providers[0]
		switch {
		case w >= 9:
			p = providers[2]
		case w >= 6:
			p = providers[1]
		}
		id := consoleBenchUUID(rng, at)
		shard := rng.IntN(ingest.DefaultCounterShards)
		bucket := at.UTC().Truncate(time.Hour)
		if rng.IntN(200) == 0 { // a refused delivery carries no events
			deliveries = append(deliveries, []any{t.ID, id, at, p.id, int16(401), domain.SignatureInvalid,
				"no webhook-signature matches an active secret of this provider", 0})
			counters[counterKey{p.id, bucket, domain.DeliveryRejected, shard}]++
			continue
		}
		r, outcome := rng.IntN(1000), domain.Applied
		for _, o := range outcomes {
			if r < o.permille {
				outcome = o.outcome
				break
			}
			r -= o.permille
		}
		typ, key := "contact", "contact_id"
		if rng.IntN(5) == 0 {
			typ, key = "deal", "object_id"
		}
		objectID := fmt.Sprintf("%c-%d", typ[0], rng.IntN(100_000))
		var revision *int64
		revisionText := "null"
		if outcome != domain.Unversioned {
			rev := int64(rng.IntN(50))
			revision, revisionText = &rev, fmt.Sprint(rev)
		}
		var reason *string
		switch outcome {
		case domain.Stale:
			r := fmt.Sprintf("revision %s is older than the stored revision %d", revisionText, *revision+1)
			reason = &r
		case domain.Rejected:
			r := "revision must be a non-negative integer"
			reason = &r
		}
		snapshot := fmt.Sprintf(`{"company":"ExampleCo-%d","job_title":%q,"lead_status":"customer"}`, rng.IntN(5000), titles[rng.IntN(len(titles))])
		payload := fmt.Sprintf(`{"type":"%s.snapshot","timestamp":%q,"data":{%q:%q,"revision":%s,"snapshot":%s}}`,
			typ, at.UTC().Format(time.RFC3339), key, objectID, revisionText, snapshot)
		events = append(events, []any{t.ID, at, id, 0, p.id, typ, "snapshot", fmt.Sprintf("evt-%d", i),
			objectID, revision, string(outcome), reason, snapshot, []byte(payload)})
		deliveries = append(deliveries, []any{t.ID, id, at, p.id, int16(200), domain.SignatureValid, nil, 1})
		counters[counterKey{p.id, bucket, string(outcome), shard}]++
		if seed.SamplePath == "" && i > n/2 {
			seed.SamplePath = fmt.Sprintf("/t/%s/events/%s/0", tenant, uuid.UUID(id.Bytes))
		}
	}
	if err := flush(); err != nil {
		return seed, err
	}
	var counterRows [][]any
	for k, c := range counters {
		counterRows = append(counterRows, []any{t.ID, k.provider, k.bucket, k.outcome, int16(k.shard), c})
	}
	_, err = s.pool.CopyFrom(ctx, pgx.Identifier{"outcome_counters"},
		[]string{"tenant_id", "provider_id", "bucket", "outcome", "shard", "n"}, pgx.CopyFromRows(counterRows))
	if err != nil {
		return seed, fmt.Errorf("copy outcome_counters: %w", err)
	}
	seed.CounterRows = len(counterRows)

	_, err = s.pool.Exec(ctx, `
		INSERT INTO conflicts (tenant_id, provider_id, object_type, object_id, revision, accepted_event_id, accepted_snapshot,
		                       conflicting_event_id, conflicting_snapshot, status, detected_at)
		SELECT tenant_id, provider_id, object_type, object_id, revision, event_id || '-accepted', '{}', event_id, snapshot,
		       CASE WHEN row_number() OVER (ORDER BY received_at) % 10 = 0 THEN 'open' ELSE 'kept' END, received_at
		FROM events WHERE tenant_id = $1 AND outcome = 'revision_conflict'`, t.ID)
	if err != nil {
		return seed, fmt.Errorf("seed conflicts: %w", err)
	}
	_, err = s.pool.Exec(ctx, `VACUUM ANALYZE events, deliveries, outcome_counters, conflicts`)
	return seed, err
}

// consoleBenchUUID is a UUIDv7 minted at t, as the receiver mints delivery ids.
func consoleBenchUUID(rng *rand.Rand, t time.Time) pgtype.UUID {
	var id [16]byte
	binary.BigEndian.PutUint64(id[8:], rng.Uint64())
	binary.BigEndian.PutUint64(id[0:], uint64(t.UnixMilli())<<16|rng.Uint64()&0xfff)
	id[6] = 0x70 | id[6]&0x0f
	id[8] = 0x80 | id[8]&0x3f
	return pgtype.UUID{Bytes: id, Valid: true}
}
