package ingest_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

func TestFutureRevisionsAreRejected(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	if p.MaxFutureSkew != 5*time.Minute {
		t.Fatalf("default window %s, want 5m0s", p.MaxFutureSkew)
	}
	now := dbNow(t, s)

	// A forged SystemModstamp of 9999-12-31 would freeze the record forever.
	frozen := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	r := ingestOne(t, s, p, dated("forged", "c-1", frozen, `{"title":"forged"}`))
	wantOutcome(t, r, "rejected")
	if !strings.Contains(r.Reason, "ahead of the database clock; this provider accepts at most 5m0s") {
		t.Fatalf("reason %q does not name the skew and the window", r.Reason)
	}
	r = ingestOne(t, s, p, dated("ahead", "c-1", now.Add(2*time.Hour+3*time.Minute), `{"title":"ahead"}`))
	wantOutcome(t, r, "rejected")
	if !strings.HasPrefix(r.Reason, "revision is dated 2h2m") && !strings.HasPrefix(r.Reason, "revision is dated 2h3m") {
		t.Fatalf("reason %q, want it to say the revision is 2h3m ahead", r.Reason)
	}
	// Nothing of them was applied or claimed: a redelivery is rejected
	// again, not a duplicate, and a genuine update applies.
	wantOutcome(t, ingestOne(t, s, p, dated("forged", "c-1", frozen, `{"title":"forged"}`)), "rejected")
	for _, table := range []string{"records", "idempotency_keys", "accepted_revisions"} {
		if n := tableCount(t, s, p, table); n != 0 {
			t.Fatalf("%d rows in %s after future revisions", n, table)
		}
	}
	wantOutcome(t, ingestOne(t, s, p, dated("genuine", "c-1", now.Add(-time.Second), `{"title":"genuine"}`)), "applied")
	wantOutcome(t, ingestOne(t, s, p, dated("soon", "c-1", now.Add(time.Minute), `{"title":"soon"}`)), "applied")
	// The same event id dated in the future is rejected, not an event_conflict.
	wantOutcome(t, ingestOne(t, s, p, dated("genuine", "c-1", now.Add(time.Hour), `{"title":"genuine"}`)), "rejected")
	if _, snap, count := record(t, s, p, "c-1"); snap != `{"title": "soon"}` || count != 2 {
		t.Fatalf("record %s applied %d times, want soon and 2", snap, count)
	}

	// A wider window accepts what the default refuses.
	wide := p
	wide.MaxFutureSkew = time.Hour
	wantOutcome(t, ingestOne(t, s, wide, dated("wide", "c-2", now.Add(10*time.Minute), `{"title":"wide"}`)), "applied")
	// A revision that is not a timestamp is never judged by the clock.
	wantOutcome(t, ingestOne(t, s, p, event("integer", "c-3", frozen.UnixMicro(), `{"title":"integer"}`)), "applied")
}

func TestFuturePropertyChangesAreRejected(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	now := dbNow(t, s)
	at := func(e domain.Event, t time.Time) domain.Event {
		rev := t.UnixMilli()
		e.Revision, e.RevisionTime = &rev, t
		return e
	}
	wantOutcome(t, ingestOne(t, s, p, at(change("e1", "jobtitle", "Director", 0), now.Add(10*time.Minute))), "rejected")
	wantOutcome(t, ingestOne(t, s, p, at(change("e2", "jobtitle", "Manager", 0), now.Add(time.Minute))), "applied")
	wantOutcome(t, ingestOne(t, s, p, at(change("e3", domain.PropertyDeleted, "", 0), now.Add(10*time.Minute))), "rejected")
	// An occurredAt of the year 292 million, past what PostgreSQL can hold.
	wantOutcome(t, ingestOne(t, s, p, at(change("e4", "city", "Paris", 0), time.UnixMilli(math.MaxInt64))), "rejected")
	if _, snap, _ := record(t, s, p, "c-1"); snap != `{"jobtitle": "Manager"}` {
		t.Fatalf("snapshot %s", snap)
	}
}

// TestKeyExpiryFollowsTheDatabaseClock delivers with the Go clock far off:
// the key still lives for the scope's TTL from the database's now.
func TestKeyExpiryFollowsTheDatabaseClock(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := context.Background()
	at := func(received time.Time, e domain.Event) domain.Result {
		t.Helper()
		d := delivery(p)
		d.ReceivedAt = received
		rs, err := s.Ingest(ctx, d, p, []domain.Event{e})
		if err != nil {
			t.Fatal(err)
		}
		return rs[0]
	}
	month := 30 * 24 * time.Hour
	if _, err := s.EnsurePartitions(ctx, time.Now().Add(-month), 0); err != nil { // the log's day a month back
		t.Fatal(err)
	}
	wantOutcome(t, at(time.Now().Add(-month), event("e1", "c-1", 1, `{"v":1}`)), "applied")
	var left time.Duration
	if err := s.Pool().QueryRow(ctx, `SELECT extract(epoch FROM expires_at - now())::float8 * 1e9 FROM idempotency_keys
		WHERE tenant_id = $1 AND identifier = 'e1'`, p.TenantID).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left < domain.DefaultTTL-time.Minute || left > domain.DefaultTTL {
		t.Fatalf("key expires in %s, want the scope's TTL (%s) from the database's now", left, domain.DefaultTTL)
	}
	// A redelivery stamped a month ahead is still within the TTL...
	wantOutcome(t, at(time.Now().Add(month), event("e1", "c-1", 1, `{"v":1}`)), "duplicate")
	// ...and a cleanup run by a clock a month ahead keeps the key.
	if r, err := s.Cleanup(ctx, time.Now().Add(month), 365*24*time.Hour); err != nil || r.ExpiredKeys != 0 {
		t.Fatalf("cleanup a month ahead removed %d keys (%v), want 0", r.ExpiredKeys, err)
	}
	// Once the database's clock has passed expires_at, the key goes.
	if _, err := s.Pool().Exec(ctx, `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE tenant_id = $1`, p.TenantID); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Cleanup(ctx, time.Now().Add(-month), 365*24*time.Hour); err != nil || r.ExpiredKeys != 1 {
		t.Fatalf("cleanup a month behind removed %d keys (%v), want the expired one", r.ExpiredKeys, err)
	}
}
