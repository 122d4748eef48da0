package destinations_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// setup is a store with tenant acme and its provider crm, and the CLI as
// the actor.
func setup(t *testing.T) (*postgres.Store, int64, context.Context) {
	t.Helper()
	s, p := pgtest.Setup(t, postgres.New)
	return s, p.TenantID, pgtest.AsCLI(context.Background())
}

func create(t *testing.T, s *postgres.Store, ctx context.Context, tenantID int64, nd stream.NewDestination) (stream.Destination, string) {
	t.Helper()
	d, secret, err := s.CreateDestination(ctx, tenantID, nd)
	if err != nil {
		t.Fatal(err)
	}
	return d, secret
}

// commit appends changes to the tenant's feed, as ingest does, each
// committed a minute after the one before.
func commit(t *testing.T, s *postgres.Store, tenantID int64, positions ...int64) {
	t.Helper()
	for _, p := range positions {
		_, err := s.Pool().Exec(context.Background(), `
			WITH head AS (INSERT INTO change_heads (tenant_id, position) VALUES ($1, $2)
			              ON CONFLICT (tenant_id) DO UPDATE SET position = excluded.position)
			INSERT INTO changes (tenant_id, position, type, provider_id, object_type, object_id, changed, committed_at)
			VALUES ($1, $2, 'record.applied', 1, 'contact', 'c-1', '{}', timestamptz '2026-12-01 10:00Z' + $2 * interval '1 minute')`,
			tenantID, p)
		if err != nil {
			t.Fatal(err)
		}
	}
}

func at(position int64) time.Time {
	return time.Date(2026, 12, 1, 10, int(position), 0, 0, time.UTC)
}

// TestCreateDestination: the destination as given, with defaults, its
// secret shown once and stored sealed, and what is refused.
func TestCreateDestination(t *testing.T) {
	t.Parallel()
	s, tenant, ctx := setup(t)
	commit(t, s, tenant, 1, 2)
	d, secret := create(t, s, ctx, tenant, stream.NewDestination{URL: "https://hooks.example.com/tidemark?token=abc",
		Provider: "crm", ObjectType: "contact", Types: []string{"record.applied", " record.erased"}})
	if !strings.HasPrefix(secret, "whsec_") || len(secret) < 40 {
		t.Fatalf("secret %q, want whsec_ and base64", secret)
	}
	if d.Provider != "crm" || d.ObjectType != "contact" || strings.Join(d.Types, ",") != "record.applied,record.erased" ||
		d.MaxInFlight != stream.DefaultMaxInFlight || d.Status != stream.DestinationActive || d.Cursor != 2 ||
		d.Pending != 0 || d.Oldest != nil || d.AllowPrivate {
		t.Fatalf("created %+v; want crm contact, the two types, 8 in flight, active at the head with nothing pending", d)
	}
	if got, err := s.SigningSecrets(ctx, tenant, d.ID); err != nil || len(got) != 1 || got[0] != secret {
		t.Fatalf("signing secrets %v, %v; want the one shown", got, err)
	}
	var clear int
	err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM destination_secrets
		WHERE position(convert_to('whsec_', 'UTF8') IN ciphertext) > 0 OR position(decode($1, 'base64') IN ciphertext) > 0`,
		strings.TrimPrefix(secret, "whsec_")).Scan(&clear)
	if err != nil || clear != 0 {
		t.Fatalf("%d secrets stored in the clear (%v)", clear, err)
	}

	const seed = "SUAJ6IRC2DLKBXW5AYCQYCKHMLIPSQFSRVPGMRRZ3O5MHRI6ZDEVRJFNDU" // what the store seals: it parses nothing
	nats, _ := create(t, s, ctx, tenant, stream.NewDestination{NATSURL: "nats://nats.example.com:4222", Subject: "crm.changes",
		NATS: stream.NATSAuth{NKey: seed, TLSCA: "-----BEGIN CERTIFICATE-----"}})
	if nats.Target() != "nats://nats.example.com:4222 crm.changes.>" || strings.Join(nats.Types, ",") != "record.*" || nats.Kind != "nats" || d.Kind != "webhook" ||
		nats.NATSAuth != stream.NATSAuthNKey || !nats.NATSTLSCA {
		t.Fatalf("NATS destination %+v", nats)
	}
	err = s.Pool().QueryRow(ctx, `SELECT count(*) FROM destination_nats_credentials
		WHERE position(convert_to($1, 'UTF8') IN ciphertext) > 0 OR position(convert_to('CERTIFICATE', 'UTF8') IN ciphertext) > 0`,
		seed).Scan(&clear)
	if err != nil || clear != 0 {
		t.Fatalf("%d NATS credentials stored in the clear (%v)", clear, err)
	}
	list, err := s.Destinations(ctx, tenant)
	if err != nil || len(list) != 2 || list[0].ID != d.ID || list[1].ID != nats.ID {
		t.Fatalf("list %+v, %v", list, err)
	}

	for _, tc := range []struct {
		nd   stream.NewDestination
		want string
	}{
		{stream.NewDestination{}, "give url"},
		{stream.NewDestination{URL: "ftp://example.com/"}, "scheme must be http or https"},
		{stream.NewDestination{URL: "https://user:pw@example.com/"}, "must not contain a user name or password"},
		{stream.NewDestination{URL: "https://example.com/", NATSURL: "nats://x:4222", Subject: "a"}, "not both"},
		{stream.NewDestination{NATSURL: "nats://x:4222"}, "subject is required"},
		{stream.NewDestination{NATSURL: "nats://x:4222", Subject: "crm.*"}, "wildcards"},
		{stream.NewDestination{NATSURL: "nats://x:4222", Subject: "crm..x"}, "empty token"},
		{stream.NewDestination{NATSURL: "nats://x:4222", Subject: "crm"}, "nats_url needs credentials"},
		{stream.NewDestination{NATSURL: "nats://x:4222", Subject: "crm", NATS: stream.NATSAuth{TLSCA: "x"}}, "nats_url needs credentials"},
		{stream.NewDestination{NATSURL: "nats://x:4222", Subject: "crm", NATS: stream.NATSAuth{Creds: "x", NKey: "y"}}, "not both"},
		{stream.NewDestination{URL: "https://example.com/", NATS: stream.NATSAuth{NKey: "y"}}, "go with nats_url"},
		{stream.NewDestination{URL: "https://example.com/", Types: []string{"record.created"}}, `"record.created" is not a change type`},
		{stream.NewDestination{URL: "https://example.com/", MaxInFlight: 65}, "max_in_flight must be from 1 to 64"},
		{stream.NewDestination{URL: "https://example.com/", Provider: "nope"}, `provider "nope": this workspace has no provider`},
	} {
		_, _, err := s.CreateDestination(ctx, tenant, tc.nd)
		if domain.ErrorCode(err) != domain.EINVALID || !strings.Contains(domain.ErrorMessage(err), tc.want) {
			t.Errorf("%+v: %v, want EINVALID with %q", tc.nd, err, tc.want)
		}
	}
	audit := auditEntries(t, s)
	if len(audit) != 2 || audit[0] != "destination_create: https://hooks.example.com/tidemark?<redacted>; types record.applied,record.erased; "+
		"provider crm; object type contact; max in flight 8" {
		t.Fatalf("audit %q; want the two creations, without the URL's query", audit)
	}
	if !strings.HasSuffix(audit[1], "; types record.*; NATS credentials: nkey; own TLS CA; max in flight 8") {
		t.Fatalf("audit %q; want the NATS destination's credentials named, not shown", audit[1])
	}
	if n := pgtest.Scalar(t, s.Pool(), `SELECT count(*) FROM destinations`); n != 2 {
		t.Fatalf("%d destinations stored, want the 2 valid ones", n)
	}
	if _, _, err := s.CreateDestination(context.Background(), tenant, stream.NewDestination{URL: "https://example.com/"}); err == nil {
		t.Fatal("created a destination without an actor to audit")
	}
}

// TestRotateDestinationSecret: after a rotation both secrets sign, the
// new one first; once the grace is over only the new one does, and the
// next rotation removes the expired one.
func TestRotateDestinationSecret(t *testing.T) {
	t.Parallel()
	s, tenant, ctx := setup(t)
	d, first := create(t, s, ctx, tenant, stream.NewDestination{URL: "https://hooks.example.com/"})
	second, err := s.RotateDestinationSecret(ctx, tenant, d.ID)
	if err != nil || second == first || !strings.HasPrefix(second, "whsec_") {
		t.Fatalf("rotate: %q, %v", second, err)
	}
	if got, _ := s.SigningSecrets(ctx, tenant, d.ID); len(got) != 2 || got[0] != second || got[1] != first {
		t.Fatalf("during the grace: %d secrets, want the new one then the previous one", len(got))
	}
	grace := pgtest.Scalar(t, s.Pool(), `SELECT round(extract(epoch FROM expires_at - now()))::int FROM destination_secrets WHERE expires_at IS NOT NULL`)
	if want := int(stream.DestinationSecretGrace.Seconds()); grace < want-60 || grace > want {
		t.Fatalf("the previous secret expires in %d s, want %d", grace, want)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE destination_secrets SET expires_at = now() - interval '1 second' WHERE expires_at IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.SigningSecrets(ctx, tenant, d.ID); len(got) != 1 || got[0] != second {
		t.Fatalf("after the grace: %d secrets, want the new one only", len(got))
	}
	third, err := s.RotateDestinationSecret(ctx, tenant, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	fourth, err := s.RotateDestinationSecret(ctx, tenant, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.SigningSecrets(ctx, tenant, d.ID); len(got) != 2 || got[0] != fourth || got[1] != third {
		t.Fatalf("after two rotations: %d secrets, want the last two", len(got))
	}
	if n := pgtest.Scalar(t, s.Pool(), `SELECT count(*) FROM destination_secrets`); n != 2 {
		t.Fatalf("%d secret rows kept, want 2", n)
	}
	if _, err := s.RotateDestinationSecret(ctx, tenant, 999); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("rotate a missing destination: %v", err)
	}
}

// queue puts changes in the destination's queue as the sender would, as
// failing since their commit.
func queue(t *testing.T, s *postgres.Store, tenantID, id int64, positions ...int64) {
	t.Helper()
	for _, p := range positions {
		_, err := s.Pool().Exec(context.Background(), `
			INSERT INTO destination_queue (tenant_id, destination_id, position, record_key, committed_at, attempts, next_attempt_at, first_failed_at)
			SELECT $1, $2, $3, 'crm/contact/c-1', committed_at, 3, now() + interval '1 hour', committed_at
			FROM changes WHERE tenant_id = $1 AND position = $3`, tenantID, id, p)
		if err != nil {
			t.Fatal(err)
		}
		// Taken: the cursor passes it, as a sender's fill moves it.
		if _, err := s.Pool().Exec(context.Background(), `UPDATE destinations SET cursor = greatest(cursor, $3)
			WHERE tenant_id = $1 AND id = $2`, tenantID, id, p); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDestinationLifecycle: lag, pause, resume, rewind and delete, each
// audited without the secret.
func TestDestinationLifecycle(t *testing.T) {
	t.Parallel()
	s, tenant, ctx := setup(t)
	d, secret := create(t, s, ctx, tenant, stream.NewDestination{URL: "https://hooks.example.com/"})
	commit(t, s, tenant, 1, 2, 3)

	got, err := s.Destination(ctx, tenant, d.ID)
	if err != nil || got.Pending != 3 || got.Oldest == nil || !got.Oldest.Equal(at(1)) {
		t.Fatalf("with changes not yet taken: %+v, %v; want the 3 pending, lag from change 1", got, err)
	}
	queue(t, s, tenant, d.ID, 2, 3)
	if got, _ = s.Destination(ctx, tenant, d.ID); got.Pending != 2 || !got.Oldest.Equal(at(2)) {
		t.Fatalf("with 2 queued: pending %d, oldest %v; want 2 from change 2", got.Pending, got.Oldest)
	}

	if err := s.PauseDestination(ctx, tenant, d.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.Destination(ctx, tenant, d.ID); got.Status != stream.DestinationPaused {
		t.Fatalf("paused: status %s", got.Status)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE destinations SET status = 'failing', status_reason = 'HTTP 500 for 3 days'`); err != nil {
		t.Fatal(err)
	}
	if err := s.ResumeDestination(ctx, tenant, d.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.Destination(ctx, tenant, d.ID); got.Status != stream.DestinationActive || got.StatusReason != "" {
		t.Fatalf("resumed: %s (%s)", got.Status, got.StatusReason)
	}
	if n := pgtest.Scalar(t, s.Pool(), `SELECT count(*) FROM destination_queue WHERE next_attempt_at <= now() AND first_failed_at IS NULL`); n != 2 {
		t.Fatalf("%d queued changes due now after resume, want 2", n)
	}

	if err := s.RewindDestination(ctx, tenant, d.ID, 1); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.Destination(ctx, tenant, d.ID); got.Cursor != 1 || got.Pending != 2 || !got.Oldest.Equal(at(2)) {
		t.Fatalf("rewound to 1: cursor %d, pending %d, oldest %v; want 1, 2 to take again, change 2", got.Cursor, got.Pending, got.Oldest)
	}
	err = s.RewindDestination(ctx, tenant, d.ID, 4)
	if domain.ErrorCode(err) != domain.EINVALID || !strings.Contains(err.Error(), "past the newest change") {
		t.Fatalf("rewind past the head: %v", err)
	}

	if err := s.DeleteDestination(ctx, tenant, d.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Destination(ctx, tenant, d.ID); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("after delete: %v", err)
	}
	if n := pgtest.Scalar(t, s.Pool(), `SELECT count(*) FROM destination_secrets`); n != 0 {
		t.Fatalf("%d secrets left after delete", n)
	}

	audit := auditEntries(t, s)
	want := []string{
		"destination_create: https://hooks.example.com/; types record.*; max in flight 8",
		"destination_pause: paused",
		"destination_resume: resumed; 2 pending change(s) retried now",
		"destination_rewind: rewound to after c1_1 (was c1_3); 2 pending change(s) dropped to be taken again",
		"destination_delete: deleted https://hooks.example.com/ with 2 pending change(s)",
	}
	if strings.Join(audit, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit:\n%s\nwant:\n%s", strings.Join(audit, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(strings.Join(audit, ""), secret[len("whsec_"):len("whsec_")+8]) {
		t.Fatal("the audit log holds the secret")
	}
}

func auditEntries(t *testing.T, s *postgres.Store) []string {
	t.Helper()
	rows, err := s.Pool().Query(context.Background(),
		`SELECT action || ': ' || summary FROM audit_log WHERE action LIKE 'destination%' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		out = append(out, line)
	}
	return out
}

// TestDestinationAttempts: newest first, a page at a time.
func TestDestinationAttempts(t *testing.T) {
	t.Parallel()
	s, tenant, ctx := setup(t)
	d, _ := create(t, s, ctx, tenant, stream.NewDestination{URL: "https://hooks.example.com/"})
	_, err := s.Pool().Exec(ctx, `
		INSERT INTO destination_attempts (tenant_id, destination_id, position, status, error, duration_ms)
		VALUES ($1, $2, 1, 0, 'timeout', 10000), ($1, $2, 1, 503, NULL, 40), ($1, $2, 1, 200, NULL, 35)`, tenant, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	page, next, err := s.DestinationAttempts(ctx, tenant, d.ID, domain.Page{Limit: 2})
	if err != nil || len(page) != 2 || next == "" || page[0].Status != 200 || !page[0].Delivered() || page[1].Status != 503 ||
		page[0].ChangeID != (stream.Change{TenantID: tenant, Position: 1}).ID() || page[0].Duration != 35*time.Millisecond {
		t.Fatalf("first page %+v, next %q, %v", page, next, err)
	}
	page, next, err = s.DestinationAttempts(ctx, tenant, d.ID, domain.Page{Limit: 2, Cursor: next})
	if err != nil || len(page) != 1 || next != "" || page[0].Error != "timeout" || page[0].Delivered() {
		t.Fatalf("last page %+v, next %q, %v", page, next, err)
	}
	if _, _, err := s.DestinationAttempts(ctx, tenant, 999, domain.Page{}); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("attempts of a missing destination: %v", err)
	}
}

// TestDestinationTenantIsolation: another tenant neither sees nor changes
// a destination.
func TestDestinationTenantIsolation(t *testing.T) {
	t.Parallel()
	s, tenant, ctx := setup(t)
	other := pgtest.Provider(t, s, "globex", "crm").TenantID
	d, _ := create(t, s, ctx, tenant, stream.NewDestination{URL: "https://hooks.example.com/"})
	commit(t, s, other, 1, 2)

	if list, err := s.Destinations(ctx, other); err != nil || len(list) != 0 {
		t.Fatalf("the other tenant lists %+v, %v", list, err)
	}
	_, err := s.Destination(ctx, other, d.ID)
	_, rotErr := s.RotateDestinationSecret(ctx, other, d.ID)
	_, _, attErr := s.DestinationAttempts(ctx, other, d.ID, domain.Page{})
	for name, err := range map[string]error{
		"get": err, "rotate": rotErr, "attempts": attErr,
		"pause":  s.PauseDestination(ctx, other, d.ID),
		"resume": s.ResumeDestination(ctx, other, d.ID),
		"rewind": s.RewindDestination(ctx, other, d.ID, 1),
		"delete": s.DeleteDestination(ctx, other, d.ID),
	} {
		if domain.ErrorCode(err) != domain.ENOTFOUND {
			t.Errorf("%s by the other tenant: %v, want not found", name, err)
		}
	}
	got, err := s.Destination(ctx, tenant, d.ID)
	if err != nil || got.Status != stream.DestinationActive || got.Cursor != 0 {
		t.Fatalf("after the other tenant's tries: %+v, %v", got, err)
	}
	if secrets, _ := s.SigningSecrets(ctx, tenant, d.ID); len(secrets) != 1 {
		t.Fatalf("%d secrets, want the first one only", len(secrets))
	}
	if entries := auditEntries(t, s); len(entries) != 1 {
		t.Fatalf("audit %v, want the creation only", entries)
	}
}

// TestAlertDestinations: alert types and the format are kept; a
// destination of alert types starts at the end of its tenant's alert
// events; a slack destination takes alert.* by default and no record
// type; a rewind keeps pending alert events.
func TestAlertDestinations(t *testing.T) {
	t.Parallel()
	s, tenant, ctx := setup(t)
	other := pgtest.Provider(t, s, "globex", "crm").TenantID
	pgtest.InsertAlertFired(t, s.Pool(), tenant, "refusals", "one")
	pgtest.InsertAlertFired(t, s.Pool(), tenant, "dead_letters", "two")
	pgtest.InsertAlertFired(t, s.Pool(), other, "dead_letters", "globex's")

	both, _ := create(t, s, ctx, tenant, stream.NewDestination{URL: "https://hooks.example.com/",
		Types: []string{"record.*", "alert.fired"}})
	slack, _ := create(t, s, ctx, tenant, stream.NewDestination{URL: "https://hooks.slack.example/x", Format: stream.FormatSlack})
	if strings.Join(both.Types, ",") != "record.*,alert.fired" || both.Format != stream.FormatStandard {
		t.Errorf("both: types %v, format %q", both.Types, both.Format)
	}
	if strings.Join(slack.Types, ",") != "alert.*" || slack.Format != stream.FormatSlack {
		t.Errorf("slack: types %v, format %q; want alert.* by default", slack.Types, slack.Format)
	}
	var cursor int64
	if err := s.Pool().QueryRow(ctx, `SELECT alert_cursor FROM destinations WHERE tenant_id = $1 AND id = $2`, tenant, both.ID).Scan(&cursor); err != nil {
		t.Fatal(err)
	}
	if want := int64(pgtest.Scalar(t, s.Pool(), `SELECT max(id) FROM alert_events WHERE tenant_id = `+fmt.Sprint(tenant))); cursor != want {
		t.Errorf("alert cursor %d, want %d, the end of the tenant's alert events", cursor, want)
	}
	if list, err := s.Destinations(ctx, tenant); err != nil || len(list) != 2 || list[1].Format != stream.FormatSlack {
		t.Errorf("list %+v, %v", list, err)
	}

	for _, tc := range []struct {
		nd   stream.NewDestination
		want string
	}{
		{stream.NewDestination{URL: "https://example.com/", Types: []string{"alert.created"}}, `"alert.created" is not a change type`},
		{stream.NewDestination{URL: "https://example.com/", Format: "teams"}, "format must be standard or slack"},
		{stream.NewDestination{URL: "https://example.com/", Format: stream.FormatSlack, Types: []string{"alert.*", "record.applied"}},
			"format slack takes alert types only"},
		{stream.NewDestination{NATSURL: "nats://x:4222", Subject: "a", Types: []string{"alert.*"}}, "alert types are sent to url destinations only"},
		{stream.NewDestination{NATSURL: "nats://x:4222", Subject: "a", Format: stream.FormatSlack}, "alert types are sent to url destinations only"},
	} {
		_, _, err := s.CreateDestination(ctx, tenant, tc.nd)
		if domain.ErrorCode(err) != domain.EINVALID || !strings.Contains(domain.ErrorMessage(err), tc.want) {
			t.Errorf("%+v: %v, want EINVALID with %q", tc.nd, err, tc.want)
		}
	}
	// A slack destination's path is its secret (review 4, M2).
	if audit := auditEntries(t, s); len(audit) != 2 ||
		!strings.HasPrefix(audit[1], "destination_create: https://hooks.slack.example/<redacted>; types alert.*; format slack") {
		t.Errorf("audit %q, want the slack destination's format and no path", audit)
	}

	// A rewind drops pending changes, not pending alert events.
	commit(t, s, tenant, 1)
	queue(t, s, tenant, both.ID, 1)
	if _, err := s.Pool().Exec(ctx, `INSERT INTO destination_queue (tenant_id, destination_id, position, record_key, committed_at)
		VALUES ($1, $2, $3, 'alerts', now())`, tenant, both.ID, (cursor + stream.AlertQueueBase)); err != nil {
		t.Fatal(err)
	}
	if err := s.RewindDestination(ctx, tenant, both.ID, 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Destination(ctx, tenant, both.ID); got.Pending != 2 {
		t.Errorf("after a rewind %d pending, want the alert event and change 1, to be taken again", got.Pending)
	}
	_, err := s.Pool().Exec(ctx, `INSERT INTO destination_attempts (tenant_id, destination_id, position, status, duration_ms)
		VALUES ($1, $2, $3, 200, 5)`, tenant, both.ID, (cursor + stream.AlertQueueBase))
	if err != nil {
		t.Fatal(err)
	}
	as, _, err := s.DestinationAttempts(ctx, tenant, both.ID, domain.Page{})
	if err != nil || len(as) != 1 || as[0].Type != "alert.fired" || as[0].ChangeID != fmt.Sprintf("alert_%d_%d", tenant, cursor) {
		t.Errorf("attempts %+v, %v; want the alert event's, by type and webhook-id", as, err)
	}
}
