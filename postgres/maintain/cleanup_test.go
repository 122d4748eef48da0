package maintain_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pg"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
	"github.com/tidemark/tidemark/postgres/maintain"
)

const testRetention = 30 * 24 * time.Hour

// cleanupIngestAt delivers one event received at the given time.
func cleanupIngestAt(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, e domain.Event, at time.Time) domain.Delivery {
	t.Helper()
	d := pgtest.Delivery(p)
	d.ReceivedAt = at
	if _, err := s.Ingest(context.Background(), d, p, []domain.Event{e}); err != nil {
		t.Fatalf("ingest %s at %s: %v", e.EventID, at, err)
	}
	return d
}

// cleanupTablesOf returns the partitions holding an event and its delivery.
func cleanupTablesOf(t *testing.T, s *postgres.Store, eventID string) (event, delivery string) {
	t.Helper()
	err := s.Pool().QueryRow(context.Background(), `
SELECT e.tableoid::regclass::text, d.tableoid::regclass::text
FROM events e JOIN deliveries d ON d.tenant_id = e.tenant_id AND d.id = e.delivery_id AND d.received_at = e.received_at
WHERE e.event_id = $1`, eventID).Scan(&event, &delivery)
	if err != nil {
		t.Fatalf("locate event %s: %v", eventID, err)
	}
	if testdb.OnCitus() { // a shard's name is its table's and _<shard id>
		event, delivery = shardSuffix.ReplaceAllString(event, ""), shardSuffix.ReplaceAllString(delivery, "")
	}
	return event, delivery
}

var shardSuffix = regexp.MustCompile(`_[0-9]+$`)

func cleanupCount(t *testing.T, s *postgres.Store, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// attachedPartitions lists the partitions attached to a log, by name.
func attachedPartitions(t *testing.T, s *postgres.Store, table string) []string {
	t.Helper()
	rows, err := s.Pool().Query(context.Background(), `
SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = $1::regclass AND NOT i.inhdetachpending ORDER BY 1`, table)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// wantPartitionsAhead checks that both logs have a daily partition for
// every day from `from` through from+maintain.PartitionsAhead, and a catch-all after.
func wantPartitionsAhead(t *testing.T, s *postgres.Store, from time.Time) {
	t.Helper()
	for _, table := range maintain.PartitionedTables {
		have := attachedPartitions(t, s, table)
		day := pg.UTCDay(from)
		for range maintain.PartitionsAhead + 1 {
			if !slices.Contains(have, maintain.PartitionName(table, day)) {
				t.Errorf("%s has no partition for %s: %v", table, day.Format(time.DateOnly), have)
			}
			day = day.AddDate(0, 0, 1)
		}
		catchAll := slices.IndexFunc(have, maintain.IsCatchAll)
		if catchAll < 0 || have[catchAll] < table+maintain.CatchAllInfix+day.Format(maintain.PartitionDayFormat) {
			t.Errorf("%s has no catch-all from %s on: %v", table, day.Format(time.DateOnly), have)
		}
	}
}

// partitionsBefore lists the daily partitions of both logs whose whole
// day ended at or before cutoff, as a pass drops them.
func partitionsBefore(t *testing.T, s *postgres.Store, cutoff time.Time) []string {
	t.Helper()
	var names []string
	for _, table := range maintain.PartitionedTables {
		for _, name := range attachedPartitions(t, s, table) {
			parts := maintain.PartitionPattern.FindStringSubmatch(name)
			day, _ := time.Parse(maintain.PartitionDayFormat, parts[3])
			if parts[2] == "p" && !day.AddDate(0, 0, 1).After(cutoff) {
				names = append(names, name)
			}
		}
	}
	return names
}

func TestMigratedPartitions(t *testing.T) {
	t.Parallel()
	s, _ := pgtest.Setup(t, postgres.New)
	// The template database was migrated on some day of the past; what it
	// holds is the layout of migration 00010: daily partitions and one
	// catch-all per log, no DEFAULT partition.
	for _, table := range maintain.PartitionedTables {
		have := attachedPartitions(t, s, table)
		if slices.Contains(have, table+"_default") || slices.IndexFunc(have, maintain.IsCatchAll) < 0 {
			t.Errorf("%s partitions: %v", table, have)
		}
		for _, name := range have {
			if !maintain.PartitionPattern.MatchString(name) {
				t.Errorf("%s has a partition the maintenance does not know: %s", table, name)
			}
		}
	}
	// Whenever it was, a delivery of today has a partition.
	pgtest.Ingest(t, s, mustEndpoint(t, s), pgtest.Event("ev-now", "c1", 1, `{"a":1}`))
}

func mustEndpoint(t *testing.T, s *postgres.Store) domain.ProviderEndpoint {
	t.Helper()
	p, err := s.Endpoint(context.Background(), "acme", "crm")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEnsurePartitions(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := context.Background()

	// 23:30 at UTC-5 on the day before `base` is `base` in UTC. The days
	// lie past the catch-all, which moves on after them.
	base := pg.UTCDay(time.Now()).AddDate(0, 0, 60)
	from := time.Date(base.Year(), base.Month(), base.Day()-1, 23, 30, 0, 0, time.FixedZone("x", -5*3600))
	got, err := s.EnsurePartitions(ctx, from, 1)
	if err != nil {
		t.Fatal(err)
	}
	day := func(n int) string { return base.AddDate(0, 0, n).Format(maintain.PartitionDayFormat) }
	for _, name := range []string{"deliveries_p" + day(0), "deliveries_p" + day(1), "deliveries_from" + day(2),
		"events_p" + day(0), "events_p" + day(1), "events_from" + day(2)} {
		if !slices.Contains(got, name) {
			t.Errorf("created %v, want %s among them", got, name)
		}
	}
	again, err := s.EnsurePartitions(ctx, base, 1)
	if err != nil || len(again) != 0 {
		t.Fatalf("second call created %v (%v), want none", again, err)
	}
	var lo, hi time.Time
	err = s.Pool().QueryRow(ctx, `
SELECT b[1]::timestamptz, b[2]::timestamptz FROM (
    SELECT regexp_match(pg_get_expr(relpartbound, oid), 'FROM \(''([^'']+)''\) TO \(''([^'']+)''\)') AS b
    FROM pg_class WHERE relname = $1) x`, "events_p"+day(0)).Scan(&lo, &hi)
	if err != nil {
		t.Fatal(err)
	}
	if !lo.Equal(base) || !hi.Equal(base.AddDate(0, 0, 1)) {
		t.Fatalf("events_p%s holds [%s, %s)", day(0), lo.UTC(), hi.UTC())
	}

	// A day of the past, before every partition, is attached on its own.
	past := time.Now().AddDate(0, 0, -400)
	if got, err := s.EnsurePartitions(ctx, past, 0); err != nil || len(got) != 2 {
		t.Fatalf("past day: created %v (%v)", got, err)
	}
	cleanupIngestAt(t, s, p, pgtest.Event("ev-past", "c0", 1, `{"a":1}`), past)
	if ev, dl := cleanupTablesOf(t, s, "ev-past"); ev != maintain.PartitionName("events", past) || dl != maintain.PartitionName("deliveries", past) {
		t.Fatalf("past event in %s, delivery in %s", ev, dl)
	}

	// An event ingested now lands in today's partition.
	if _, err := s.EnsurePartitions(ctx, time.Now(), maintain.PartitionsAhead); err != nil {
		t.Fatal(err)
	}
	wantPartitionsAhead(t, s, time.Now())
	pgtest.Ingest(t, s, p, pgtest.Event("ev-now", "c1", 1, `{"a":1}`))
	var received time.Time
	if err := s.Pool().QueryRow(ctx, `SELECT received_at FROM events WHERE event_id = 'ev-now'`).Scan(&received); err != nil {
		t.Fatal(err)
	}
	ev, dl := cleanupTablesOf(t, s, "ev-now")
	if ev != maintain.PartitionName("events", received) || dl != maintain.PartitionName("deliveries", received) {
		t.Fatalf("event in %s, delivery in %s; want the partitions of %s", ev, dl, received.UTC())
	}
	if _, err := s.EnsurePartitions(ctx, time.Now(), -1); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("negative ahead: %v", err)
	}
}

// Rows the catch-all holds move to the partitions of their days when
// those are created, and nothing is lost or found twice.
func TestEnsurePartitionsRotatesCatchAll(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := context.Background()
	if _, err := s.EnsurePartitions(ctx, time.Now(), maintain.PartitionsAhead); err != nil {
		t.Fatal(err)
	}
	day := pg.UTCDay(time.Now()).AddDate(0, 0, maintain.PartitionsAhead+5) // in the catch-all

	at := map[string]time.Time{
		"ev-1": day,                                      // first instant of the day
		"ev-2": day.Add(10 * time.Hour),                  //
		"ev-3": day.Add(24*time.Hour - time.Microsecond), // last instant
		"ev-4": day.Add(24 * time.Hour),                  // next day
		"ev-5": day.AddDate(0, 0, 100),                   // far ahead: stays in the catch-all
	}
	for id, when := range at {
		cleanupIngestAt(t, s, p, pgtest.Event(id, "c-"+id, 1, `{"a":1}`), when)
	}
	created, err := s.EnsurePartitions(ctx, day, 1)
	if err != nil {
		t.Fatal(err)
	}
	next := day.AddDate(0, 0, 2).Format(maintain.PartitionDayFormat)
	if !slices.Contains(created, "events_from"+next) || !slices.Contains(created, maintain.PartitionName("events", day)) {
		t.Fatalf("created %v", created)
	}
	for id, want := range map[string]string{"ev-1": maintain.PartitionName("events", day), "ev-2": maintain.PartitionName("events", day),
		"ev-3": maintain.PartitionName("events", day), "ev-4": maintain.PartitionName("events", day.AddDate(0, 0, 1)), "ev-5": "events_from" + next} {
		ev, dl := cleanupTablesOf(t, s, id)
		if ev != want || dl != "deliveries"+strings.TrimPrefix(want, "events") {
			t.Errorf("%s: event in %s, delivery in %s; want %s", id, ev, dl, want)
		}
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM events`); n != len(at) {
		t.Fatalf("%d events after the move, want %d", n, len(at))
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM deliveries`); n != len(at) {
		t.Fatalf("%d deliveries after the move, want %d", n, len(at))
	}
	// The moved rows are found through the log's indexes.
	if n := cleanupCount(t, s, `SELECT count(*) FROM events WHERE tenant_id = $1 AND provider_id = $2 AND event_id = 'ev-2'`, p.TenantID, p.ID); n != 1 {
		t.Fatalf("ev-2 found %d times", n)
	}
	// No table of an old catch-all is left behind.
	if n := cleanupCount(t, s, `SELECT count(*) FROM pg_class WHERE relname ~ '_from[0-9]{8}$' AND NOT relispartition`); n != 0 {
		t.Fatalf("%d detached catch-alls left", n)
	}
}

func TestCleanup(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := context.Background()
	now := time.Now()
	old := now.Add(-40 * 24 * time.Hour)

	if _, err := s.EnsurePartitions(ctx, old, 0); err != nil {
		t.Fatal(err)
	}
	cleanupIngestAt(t, s, p, pgtest.Event("ev-old", "c1", 1, `{"a":1}`), old)
	cleanupIngestAt(t, s, p, pgtest.Event("ev-now", "c3", 1, `{"a":1}`), now)
	// Keys expire by the database's clock: age ev-old's as the weeks would.
	if _, err := s.Pool().Exec(ctx, `UPDATE idempotency_keys SET expires_at = now() - interval '1 day' WHERE identifier = 'ev-old'`); err != nil {
		t.Fatal(err)
	}
	for i, expires := range []time.Time{now.Add(-time.Hour), now.Add(-time.Minute), now, now.Add(time.Hour)} {
		_, err := s.Pool().Exec(ctx, `
INSERT INTO idempotency_keys (tenant_id, key, provider_id, identifier, content_hash, delivery_id, seq, expires_at)
VALUES ($1, $2, $3, 'x', '\x00', $4, 0, $5)`, p.TenantID, []byte{byte(i)}, p.ID, uuid.New(), expires)
		if err != nil {
			t.Fatal(err)
		}
	}
	// Three of those have expired at now, and so has ev-old's key (its
	// scope's TTL is 7 days); ev-now's has not.
	const expired = 4

	if _, err := s.IndexSearch(ctx); err != nil { // both events' words, which go with their days
		t.Fatal(err)
	}
	wantDropped := partitionsBefore(t, s, now.Add(-testRetention))
	oldDay := old.UTC().Format(maintain.PartitionDayFormat)
	if !slices.Contains(wantDropped, "deliveries_p"+oldDay) || !slices.Contains(wantDropped, "events_p"+oldDay) {
		t.Fatalf("the partitions of 40 days ago are not among %v", wantDropped)
	}
	r, err := s.CleanupInBatches(ctx, now, testRetention, 2) // small batches: several rounds
	if err != nil {
		t.Fatal(err)
	}
	if r.Skipped || r.ExpiredKeys != expired || !slices.Equal(r.DroppedPartitions, wantDropped) || len(r.Deferred) != 0 || r.DroppedSearch != 1 {
		t.Fatalf("report %+v", r)
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM event_search`); n != 1 {
		t.Fatalf("%d events' words left, want only the recent one's", n)
	}
	wantPartitionsAhead(t, s, now)
	str := r.String()
	for _, want := range []string{"removed 4 expired idempotency keys", fmt.Sprintf("dropped %d partitions (%s)", len(wantDropped), strings.Join(wantDropped, ", "))} {
		if !strings.Contains(str, want) {
			t.Errorf("report %q does not say %q", str, want)
		}
	}

	if n := cleanupCount(t, s, `SELECT count(*) FROM idempotency_keys`); n != 2 {
		t.Fatalf("%d keys left, want the 2 live ones", n)
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM pg_class WHERE relname = ANY($1)`, wantDropped); n != 0 {
		t.Fatalf("%d old partitions still exist", n)
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM events`); n != 1 {
		t.Fatalf("%d events left, want only the recent one", n)
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM deliveries`); n != 1 {
		t.Fatalf("%d deliveries left, want only the recent one", n)
	}
	if ev, dl := cleanupTablesOf(t, s, "ev-now"); ev != maintain.PartitionName("events", now) || dl != maintain.PartitionName("deliveries", now) {
		t.Fatalf("recent event in %s, delivery in %s", ev, dl)
	}

	// A second run finds nothing more to do.
	r, err = s.Cleanup(ctx, now, testRetention)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.String(), "removed 0 expired idempotency keys; dropped 0 partitions"; got != want {
		t.Fatalf("second report %q, want %q", got, want)
	}
	// A day later, one more day is prepared ahead.
	r, err = s.Cleanup(ctx, now.AddDate(0, 0, 1), testRetention)
	if err != nil {
		t.Fatal(err)
	}
	wantPartitionsAhead(t, s, now.AddDate(0, 0, 1))
	if len(r.CreatedPartitions) != 4 || !strings.Contains(r.String(), "created 4 partitions") {
		t.Fatalf("a day later: %s", r)
	}
}

func TestCleanupRetention(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := pgtest.AsOperator(context.Background())
	now := time.Now()

	for _, short := range []time.Duration{0, 3 * 24 * time.Hour} {
		if _, err := s.Cleanup(ctx, now, short); domain.ErrorCode(err) != domain.EINVALID ||
			!strings.Contains(domain.ErrorMessage(err), "retention must be at least 7 days (168h)") {
			t.Fatalf("retention %s: %v", short, err)
		}
	}
	if err := s.CheckRetention(ctx, 7*24*time.Hour); err != nil {
		t.Fatalf("seven days without scopes: %v", err)
	}

	// A scope remembers its keys for 60 days: 30 days of retention would
	// drop the events its keys answer for.
	sc := domain.DefaultScope(domain.ScopeName{ObjectType: "contact", Action: "snapshot"})
	sc.TTL = 60 * 24 * time.Hour
	if err := s.SaveProviderScope(ctx, p.TenantID, p.ID, sc); err != nil {
		t.Fatal(err)
	}
	const want = "retention 720h is shorter than the 1440h TTL of scope contact.snapshot of provider crm of tenant acme; pass --retention 1440h or more, or lower that TTL"
	if err := s.CheckRetention(ctx, testRetention); domain.ErrorMessage(err) != want {
		t.Fatalf("CheckRetention: %v, want %q", err, want)
	}

	old := now.AddDate(0, 0, -40)
	if _, err := s.EnsurePartitions(ctx, old, 0); err != nil {
		t.Fatal(err)
	}
	_, err := s.Pool().Exec(ctx, `
INSERT INTO idempotency_keys (tenant_id, key, provider_id, identifier, content_hash, delivery_id, seq, expires_at)
VALUES ($1, '\x01', $2, 'x', '\x00', $3, 0, $4)`, p.TenantID, p.ID, uuid.New(), now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// The pass still expires keys and prepares partitions, but drops nothing.
	r, err := s.Cleanup(ctx, now, testRetention)
	if domain.ErrorMessage(err) != want || r.ExpiredKeys != 1 || len(r.DroppedPartitions) != 0 {
		t.Fatalf("Cleanup: %v, report %+v", err, r)
	}
	wantPartitionsAhead(t, s, now)
	if !slices.Contains(attachedPartitions(t, s, "events"), maintain.PartitionName("events", old)) {
		t.Fatal("the partition of 40 days ago was dropped")
	}
	// 60 days is accepted, and keeps the partition of 40 days ago.
	r, err = s.Cleanup(ctx, now, 60*24*time.Hour)
	if err != nil || slices.Contains(r.DroppedPartitions, maintain.PartitionName("events", old)) {
		t.Fatalf("60 days: %v, report %s", err, r)
	}
	// Once the TTL is lowered, 30 days drops it.
	sc.TTL = domain.DefaultTTL
	if err := s.SaveProviderScope(ctx, p.TenantID, p.ID, sc); err != nil {
		t.Fatal(err)
	}
	if r, err = s.Cleanup(ctx, now, testRetention); err != nil || !slices.Contains(r.DroppedPartitions, maintain.PartitionName("events", old)) {
		t.Fatalf("after the TTL is lowered: %v, report %s", err, r)
	}
}

// Two nodes preparing partitions while deliveries keep arriving: each
// partition is created once, and every delivery lands.
func TestEnsurePartitionsConcurrentWithIngest(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := context.Background()
	if _, err := s.EnsurePartitions(ctx, time.Now(), maintain.PartitionsAhead); err != nil {
		t.Fatal(err)
	}
	ahead := pg.UTCDay(time.Now()).AddDate(0, 0, maintain.PartitionsAhead+3)

	const writers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each+2)
	created := make(chan []string, 2)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("ev-%d-%d", w, i)
				if _, err := s.Ingest(ctx, pgtest.Delivery(p), p, []domain.Event{pgtest.Event(id, id, 1, `{"a":1}`)}); err != nil {
					errs <- fmt.Errorf("ingest %s: %w", id, err)
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			names, err := s.EnsurePartitions(ctx, ahead, 1)
			if err != nil {
				errs <- err
			}
			created <- names
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	all := append(<-created, <-created...)
	slices.Sort(all)
	if len(all) == 0 || len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Errorf("created %v, want each partition once", all)
	}
	wantPartitionsAhead(t, s, time.Now())
	if n := cleanupCount(t, s, `SELECT count(*) FROM events`); n != writers*each {
		t.Errorf("%d events, want %d", n, writers*each)
	}
}

// Replay jobs that ended before the log's retention go with the log they
// replayed from; recent and unfinished ones stay.
func TestCleanupRemovesFinishedReplayJobs(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := context.Background()
	now := time.Now()
	for _, job := range []struct {
		status   string
		finished any
	}{{"done", now.Add(-testRetention - time.Hour)}, {"cancelled", now.Add(-time.Hour)}, {"queued", nil}} {
		if _, err := s.Pool().Exec(ctx, `
INSERT INTO replay_jobs (tenant_id, filter, status, upto, total, actor_kind, actor, finished_at)
VALUES ($1, '{}', $2, now(), 0, 'cli', 'test', $3)`, p.TenantID, job.status, job.finished); err != nil {
			t.Fatal(err)
		}
	}
	r, err := s.Cleanup(ctx, now, testRetention)
	if err != nil || r.FinishedReplays != 1 || !strings.Contains(r.String(), "removed 1 finished replay jobs") {
		t.Fatalf("cleanup: %v, %+v", err, r)
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM replay_jobs WHERE tenant_id = $1`, p.TenantID); n != 2 {
		t.Fatalf("%d jobs left, want the recent and the queued one", n)
	}
}

// TestCleanupKeepsTheChangesDestinationsNeed: changes past retention go,
// except those an active destination has not taken yet or still has to
// send; a paused or failing destination keeps none past retention (L4 of
// security review 4); the feed then starts at the oldest retained change.
func TestCleanupKeepsTheChangesDestinationsNeed(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := context.Background()
	now := time.Now()
	for i := range 4 {
		pgtest.Ingest(t, s, p, pgtest.Event(fmt.Sprint("e", i), fmt.Sprint("c", i), 1, `{}`))
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := s.Pool().Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE changes SET committed_at = $2 WHERE tenant_id = $1 AND position <= 3`, p.TenantID, now.Add(-testRetention-time.Hour))
	// A destination that has taken changes 1 and 2 and still has to send 2.
	exec(`INSERT INTO destinations (tenant_id, kind, url, types, cursor) VALUES ($1, 'webhook', 'https://203.0.113.1/', '{record.*}', 2)`, p.TenantID)
	exec(`INSERT INTO destination_queue (tenant_id, destination_id, position, record_key, committed_at)
	      SELECT $1, id, 2, 'k', now() FROM destinations WHERE tenant_id = $1`, p.TenantID)
	remaining := func() []int64 {
		t.Helper()
		cs, err := s.Changes(ctx, p.TenantID, stream.ChangeQuery{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var ps []int64
		for _, c := range cs {
			ps = append(ps, c.Position)
		}
		return ps
	}
	r, err := s.Cleanup(ctx, now, testRetention)
	if err != nil || r.ExpiredChanges != 1 || !slices.Equal(remaining(), []int64{2, 3, 4}) {
		t.Fatalf("with a destination behind: %v %+v, remaining %v, want 2 (queued), 3 (not taken) and 4 (recent)", err, r, remaining())
	}
	behind := func() bool {
		t.Helper()
		ds, err := s.Destinations(ctx, p.TenantID)
		if err != nil || len(ds) != 1 {
			t.Fatalf("destinations %+v: %v", ds, err)
		}
		return ds[0].BehindRetention
	}
	if behind() {
		t.Fatal("behind retention before any change it had not taken was removed")
	}
	// Paused (or failing), it keeps nothing past retention, and says so.
	exec(`UPDATE destinations SET status = 'paused' WHERE tenant_id = $1`, p.TenantID)
	if r, err := s.Cleanup(ctx, now, testRetention); err != nil || r.ExpiredChanges != 2 || !slices.Equal(remaining(), []int64{4}) {
		t.Fatalf("paused: %v %+v, remaining %v, want 4 alone", err, r, remaining())
	}
	if !behind() {
		t.Error("not marked behind retention after change 3, which it had not taken, was removed")
	}
}

// Backfill jobs that ended before the log's retention go; recent and
// unfinished ones stay.
func TestCleanupRemovesFinishedBackfillJobs(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := pgtest.AsOperator(context.Background())
	now := time.Now()
	// One ended long ago, one recently; the third is still queued (a
	// provider has one queued at a time).
	for _, end := range []struct {
		sql string
		at  time.Time
	}{
		{`UPDATE backfill_jobs SET state = 'done', started_at = $3, finished_at = $3 WHERE tenant_id = $1 AND id = $2`, now.Add(-testRetention - time.Hour)},
		{`UPDATE backfill_jobs SET state = 'cancelled', finished_at = $3 WHERE tenant_id = $1 AND id = $2`, now.Add(-time.Hour)},
		{},
	} {
		j, err := s.StartBackfill(ctx, p.TenantID, p.ID, now.Add(-time.Hour), now, "", false)
		if err != nil {
			t.Fatal(err)
		}
		if end.sql == "" {
			continue
		}
		if _, err := s.Pool().Exec(ctx, end.sql, p.TenantID, j.ID, end.at); err != nil {
			t.Fatal(err)
		}
	}
	r, err := s.Cleanup(ctx, now, testRetention)
	if err != nil || r.FinishedBackfills != 1 || !strings.Contains(r.String(), "removed 1 finished backfill jobs") {
		t.Fatalf("cleanup: %v, %+v", err, r)
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM backfill_jobs WHERE tenant_id = $1`, p.TenantID); n != 2 {
		t.Fatalf("%d jobs left, want the recent and the queued one", n)
	}
}
