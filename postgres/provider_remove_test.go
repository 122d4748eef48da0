package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
)

// A removed provider's URL finds nothing, its secrets are gone, its
// history stays under "crm (removed)", and the name can be taken again.
func TestRemoveProviderKeepsItsHistory(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := ownerCtx()
	deliverBatch(t, s, p, `{"a":1}`, event("e1", "c-1", 1, `{"a":1}`))
	deliverBatch(t, s, p, `{"a":2}`, event("e2", "c-1", 2, `{"a":2}`))

	plan, err := s.ProviderRemoval(ctx, p.TenantID, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Name != "crm" || plan.Secrets != 1 || plan.Records != 1 || plan.Deliveries != 2 || plan.Events != 2 {
		t.Fatalf("plan %+v", plan)
	}
	if _, err := s.Endpoint(ctx, "acme", "crm"); err != nil {
		t.Fatalf("the plan changed something: %v", err)
	}

	r, err := s.RemoveProvider(ctx, p.TenantID, p.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.RemovedAs != "crm (removed)" || r.Erased != nil || r.Secrets != 1 {
		t.Fatalf("removal %+v", r)
	}
	if _, err := s.Endpoint(ctx, "acme", "crm"); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("endpoint after removal: %v, want ENOTFOUND", err)
	}
	if n := count(t, s, `SELECT count(*) FROM provider_secrets`); n != 0 {
		t.Fatalf("%d secrets left", n)
	}
	if ps, err := s.ProviderSummaries(ctx, p.TenantID); err != nil || len(ps) != 0 {
		t.Fatalf("providers listed after removal: %+v, %v", ps, err)
	}
	events, _, err := s.EventLog(ctx, p.TenantID, domain.EventLogQuery{}, domain.Page{Limit: 10})
	if err != nil || len(events) != 2 || events[0].Provider != "crm (removed)" {
		t.Fatalf("history after removal: %+v, %v", events, err)
	}
	if _, err := s.RemoveProvider(ctx, p.TenantID, p.ID, false); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("removed twice: %v", err)
	}
	got := repairAudit(t, s, p.TenantID, domain.AuditProviderDelete, "crm")
	if len(got) != 1 || got[0] != `owner@example.com: removed as "crm (removed)": deleted 1 signing secret, 0 API credentials, 0 CDC streams, `+
		`0 app installs; cancelled 0 backfills; history kept: 1 records, 2 deliveries, 2 events` {
		t.Fatalf("audit %q", got)
	}

	// The name is free: a new provider takes it, and a second removal
	// keeps both histories apart.
	again := newProvider(t, s, "acme", "crm")
	if again.ID == p.ID {
		t.Fatal("the removed provider came back")
	}
	deliverBatch(t, s, again, `{"a":3}`, event("e3", "c-1", 3, `{"a":3}`))
	if _, snapshot, _ := record(t, s, again, "c-1"); snapshot != `{"a": 3}` {
		t.Fatalf("the new provider's record: %s", snapshot)
	}
	r, err = s.RemoveProvider(ctx, again.TenantID, again.ID, false)
	if err != nil || r.RemovedAs != "crm (removed 2)" {
		t.Fatalf("second removal %+v, %v", r, err)
	}
}

// --erase erases every record and event of the provider and its bodies,
// and leaves other providers' alone.
func TestRemoveProviderErases(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	other := newProvider(t, s, "acme", "other")
	deliverBatch(t, s, p, `{"secret":"Sekret"}`, event("e1", "c-1", 1, `{"t":"Sekret"}`), event("e2", "c-2", 1, `{"t":"Sekret 2"}`))
	deliverBatch(t, s, p, `{"secret":"Sekret 3"}`, event("e3", "c-1", 2, `{"t":"Sekret 3"}`))
	deliverBatch(t, s, other, `{"kept":1}`, event("o1", "c-1", 1, `{"t":"kept"}`))

	r, err := s.RemoveProvider(ownerCtx(), p.TenantID, p.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	if r.Erased == nil || r.Erased.Records != 2 || r.Erased.Events != 3 || r.Erased.Bodies != 2 {
		t.Fatalf("erased %+v", r.Erased)
	}
	for _, c := range []struct {
		what, sql string
		want      int
	}{
		{"records", `SELECT count(*) FROM records WHERE provider_id = $1`, 0},
		{"event content", `SELECT count(*) FROM events WHERE provider_id = $1 AND (payload IS NOT NULL OR snapshot IS NOT NULL)`, 0},
		{"bodies", `SELECT count(*) FROM deliveries WHERE provider_id = $1 AND body IS NOT NULL`, 0},
		{"the other provider's events", `SELECT count(*) FROM events WHERE provider_id = $2 AND payload IS NOT NULL`, 1},
		{"the other provider's records", `SELECT count(*) FROM records WHERE provider_id = $2`, 1},
	} {
		if got := count(t, s, c.sql+` AND $1::bigint IS NOT NULL AND $2::bigint IS NOT NULL`, p.ID, other.ID); got != c.want {
			t.Errorf("%s: %d, want %d", c.what, got, c.want)
		}
	}
	got := repairAudit(t, s, p.TenantID, domain.AuditProviderDelete, "crm")
	if len(got) != 1 || !strings.HasSuffix(got[0], "; erased 2 records, 3 events, 3 accepted revisions, 0 conflicts, 2 delivery bodies") {
		t.Fatalf("audit %q", got)
	}
	if _, err := s.Endpoint(context.Background(), "acme", "other"); err != nil {
		t.Fatalf("the other provider: %v", err)
	}
}

// A removed provider's API credentials and CDC stream go with it: no
// sweep is due for it and no node subscribes to its stream.
func TestRemoveProviderStopsItsBackgroundWork(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := ownerCtx()
	sf, err := s.ConnectProvider(ctx, p.TenantID, "sf", "salesforce", "sf-url-token-0123456789abcdef", map[string]string{"org_id": "00D5e000000AbCdEAK"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetAPICredentials(ctx, p.TenantID, sf.ID, pull.Credentials{ClientID: "3MVG9abc", ClientSecret: "connected-app-secret",
		LoginURL: "https://acme.my.salesforce.com"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetCDC(ctx, p.TenantID, sf.ID, domain.CDCConfig{Enabled: true, Channel: domain.DefaultCDCChannel}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveProviderScope(ctx, p.TenantID, sf.ID, domain.Scope{ScopeName: domain.ScopeName{ObjectType: "Contact", Action: "snapshot"},
		TTL: 72 * time.Hour, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	background := func() (sweeps, streams int) {
		t.Helper()
		due, err := s.SweepsDue(context.Background(), time.Now(), time.Hour, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		refs, err := s.EnabledCDCStreams(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return len(due), len(refs)
	}
	if sweeps, streams := background(); sweeps != 1 || streams != 1 {
		t.Fatalf("before removal: %d sweeps due, %d streams", sweeps, streams)
	}
	r, err := s.RemoveProvider(ctx, p.TenantID, sf.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.Credentials != 1 || r.CDCStreams != 1 || r.Secrets != 1 {
		t.Fatalf("removal %+v", r)
	}
	if sweeps, streams := background(); sweeps != 0 || streams != 0 {
		t.Fatalf("after removal: %d sweeps due, %d streams", sweeps, streams)
	}
}
