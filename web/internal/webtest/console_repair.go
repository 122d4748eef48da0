package webtest

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
)

// deleteContact ingests a HubSpot-style deletion of contact id of acme/crm at revision.
func (e *Env) DeleteContact(id string, revision int64) {
	e.T.Helper()
	ctx := context.Background()
	p, err := e.Store.Endpoint(ctx, "acme", "crm")
	if err != nil {
		e.T.Fatal(err)
	}
	d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID,
		ReceivedAt: time.Now(), Status: 200, Signature: domain.SignatureValid}
	ev := domain.Event{EventID: "del-" + id, Scope: domain.ScopeName{ObjectType: "contact", Action: "deletion"},
		ObjectID: id, Revision: &revision, Snapshot: json.RawMessage(`{}`), Property: domain.PropertyDeleted, Payload: []byte(`{}`)}
	if _, err := e.Store.Ingest(ctx, d, p, []domain.Event{ev}); err != nil {
		e.T.Fatal(err)
	}
}
