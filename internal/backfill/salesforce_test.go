package backfill_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/backfill"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/pull/salesforce/salesforcetest"
	"github.com/tidemark/tidemark/postgres"
)

type salesforceAPI struct {
	*postgres.Store
	org *salesforcetest.Server
}

func (s salesforceAPI) APICredentials(context.Context, int64, int64) (pull.Credentials, bool, error) {
	return s.org.Credentials(), true, nil
}

// TestSalesforceBackfillAsksForTheMessagesFields: a backfill of Salesforce
// asks the API for the fields the provider's outbound messages carried, so
// a contact an outbound message brought is redundant (not a revision
// conflict for its extra fields) and one it missed is applied.
func TestSalesforceBackfillAsksForTheMessagesFields(t *testing.T) {
	t.Parallel()
	store, ctx, tenant := setup(t)
	if _, err := store.ConnectProvider(ctx, tenant.ID, "sf", "salesforce", "", map[string]string{"org_id": "00D000000000001AAA"}); err != nil {
		t.Fatal(err)
	}
	ep, err := store.Endpoint(ctx, "acme", "sf")
	if err != nil {
		t.Fatal(err)
	}
	org := salesforcetest.New(t)
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	stamp := at.Format("2006-01-02T15:04:05.000Z")
	// The org's contacts have more fields than the outbound message sends.
	org.Put("Contact", "003000000000001", at, map[string]any{"Email": "ann@example.com", "LastName": "Lee", "Phone": "555"})
	org.Put("Contact", "003000000000002", at.Add(time.Minute), map[string]any{"Email": "bo@example.com", "LastName": "Bo", "Phone": "556"})

	// The outbound message of the first, as the parser makes it: Id, the
	// revision field and the two fields the message was set up with.
	rev, revAt, err := provider.SalesforceRevision(stamp)
	if err != nil {
		t.Fatal(err)
	}
	snapshot, _ := json.Marshal(map[string]any{"Id": "003000000000001", "SystemModstamp": stamp, "Email": "ann@example.com", "LastName": "Lee"})
	webhook := domain.Event{EventID: "00D000000000001AAA:04l000000000001", Scope: domain.ScopeName{ObjectType: "contact", Action: "outbound"},
		ObjectID: "003000000000001", Revision: &rev, RevisionTime: revAt, Snapshot: snapshot, Timestamp: stamp, Payload: []byte("<Notification/>")}
	d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: tenant.ID, ProviderID: ep.ID, ReceivedAt: time.Now(),
		Status: 200, Signature: domain.SignatureValid}
	if res, err := store.Ingest(ctx, d, ep, []domain.Event{webhook}); err != nil || res[0].Outcome != domain.Applied {
		t.Fatalf("the outbound message: %v %v", res, err)
	}

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := &backfill.Runner{Store: salesforceAPI{store, org}, Sources: backfill.NewSources(store, log), Log: log}
	rep, err := r.Run(ctx, backfill.Pass{Tenant: "acme", Provider: "sf", From: at.Add(-time.Minute), To: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes[domain.Redundant] != 1 || rep.Missed() != 1 || rep.Events != 2 {
		t.Fatalf("backfill: %v, want the received contact redundant and the missed one applied", rep.Outcomes)
	}
	var fields string
	if err := store.Pool().QueryRow(ctx, `SELECT string_agg(k, ',' ORDER BY k) FROM records, jsonb_object_keys(snapshot) k
		WHERE tenant_id = $1 AND object_id = '003000000000002'`, tenant.ID).Scan(&fields); err != nil {
		t.Fatal(err)
	}
	if fields != "Email,Id,LastName,SystemModstamp" {
		t.Errorf("the missed contact was stored with fields %s, want the outbound message's", fields)
	}
}
