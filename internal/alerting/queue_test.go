package alerting_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	domainalerting "github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/internal/alerting"
	"github.com/tidemark/tidemark/internal/queue/queuetest"
	"github.com/tidemark/tidemark/internal/testdb"
)

// TestQueueBacklogFromTheStream: in queued mode the evaluator reads the
// stream: a delivery waiting longer than the window fires queue_backlog;
// once the stream cannot be read, the alert is kept, not resolved.
func TestQueueBacklogFromTheStream(t *testing.T) {
	t.Parallel()
	s, pool := node(t, testdb.NewURL(t), "node")
	p := silentProvider(t, s, pool)
	if _, err := pool.Exec(context.Background(), `UPDATE alert_rules SET enabled = rule = 'queue_backlog' WHERE tenant_id = $1`,
		p.TenantID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(context.Background(), `INSERT INTO alert_rules (tenant_id, rule, enabled, threshold, window_seconds)
		VALUES ($1, 'provider_silent', false, 1, 60) ON CONFLICT (tenant_id, rule) DO UPDATE SET enabled = false`, p.TenantID); err != nil {
		t.Fatal(err)
	}
	q := queuetest.New(t)
	d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID, ReceivedAt: time.Now(),
		Status: 200, Signature: domain.SignatureValid}
	rev := int64(1)
	events := []domain.Event{{EventID: "e-1", Scope: domain.ScopeName{ObjectType: "contact", Action: "snapshot"}, ObjectID: "c-1",
		Revision: &rev, Snapshot: []byte(`{"a":1}`), Payload: []byte(`{}`)}}
	if _, err := q.Enqueue(context.Background(), domain.QueuedDelivery{Delivery: d, TenantSlug: "acme", ProviderName: "crm",
		ProviderKind: "standard", Events: events, Identity: domain.DeliveryIdentity(d.TenantID, d.ProviderID, []byte(`{}`), events)}); err != nil {
		t.Fatal(err)
	}
	e := alerting.Evaluator{Store: s, Queue: q}
	ev, err := e.Evaluate(context.Background(), time.Now().Add(16*time.Minute))
	if err != nil || len(ev.Fired) != 1 || ev.Fired[0].Alert.Rule != domainalerting.QueueBacklog || ev.Fired[0].TenantID != p.TenantID {
		t.Fatalf("a delivery queued past the window fired %+v, %v", ev.Fired, err)
	}
	q.Close()
	ev, err = e.Evaluate(context.Background(), time.Now().Add(17*time.Minute))
	if err != nil || len(ev.Resolved) != 0 {
		t.Fatalf("with the stream unreadable the evaluation resolved %+v, %v", ev.Resolved, err)
	}
	if n := count(t, pool, `SELECT count(*) FROM alerts WHERE resolved_at IS NULL AND rule = 'queue_backlog'`); n != 1 {
		t.Errorf("%d queue_backlog alerts firing, want 1", n)
	}
}
