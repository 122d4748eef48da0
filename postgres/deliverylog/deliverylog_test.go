package deliverylog_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// TestDeliveryLog: the list is newest first, filtered by provider, status
// and status class and time, pages both ways, counts up to its cap, and
// never shows another tenant's deliveries; an accepted delivery has its
// processing time, a refused one none.
func TestDeliveryLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, crm := pgtest.Setup(t, postgres.New)
	shop := pgtest.Provider(t, s, "acme", "shop")
	other := pgtest.Provider(t, s, "other", "crm")
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	var ids []string // crm's, oldest first
	for i := range 5 {
		d := pgtest.Delivery(crm)
		d.ReceivedAt = base.Add(time.Duration(i) * time.Second)
		if _, err := s.Ingest(ctx, d, crm, []domain.Event{pgtest.Event("e"+string(rune('a'+i)), "c-1", int64(i+1), `{}`)}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
	}
	refused := pgtest.Delivery(crm)
	refused.ReceivedAt, refused.Status, refused.Signature, refused.Reason = base.Add(10*time.Second), 401, domain.SignatureInvalid, "signature invalid"
	if err := s.LogRefusals(ctx, nil, []domain.Delivery{refused}); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, refused.ID)
	for _, p := range []domain.ProviderEndpoint{shop, other} {
		d := pgtest.Delivery(p)
		d.ReceivedAt = base.Add(20 * time.Second)
		if _, err := s.Ingest(ctx, d, p, nil); err != nil {
			t.Fatal(err)
		}
	}

	crmOnly := domain.DeliveryFilter{Provider: "crm"}
	var walked []string
	page, err := s.DeliveryLog(ctx, crm.TenantID, crmOnly, domain.Page{Limit: 4})
	if err != nil || len(page.Deliveries) != 4 || page.Newer != "" || page.Older == "" {
		t.Fatalf("first page: %+v %v", page, err)
	}
	if got := page.Deliveries[0]; got.ID != refused.ID || got.Status != 401 || got.Outcomes["applied"] != 0 {
		t.Errorf("newest first: %+v", got)
	}
	if got := page.Deliveries[1].Outcomes; got["applied"] != 1 {
		t.Errorf("outcomes %v", got)
	}
	for _, d := range page.Deliveries {
		walked = append(walked, d.ID)
	}
	older, err := s.DeliveryLog(ctx, crm.TenantID, crmOnly, domain.Page{Limit: 4, Cursor: page.Older})
	if err != nil || len(older.Deliveries) != 2 || older.Older != "" || older.Newer == "" {
		t.Fatalf("older page: %+v %v", older, err)
	}
	for _, d := range older.Deliveries {
		walked = append(walked, d.ID)
	}
	for i, id := range walked {
		if id != ids[len(ids)-1-i] {
			t.Fatalf("walk %v, want %v reversed", walked, ids)
		}
	}
	back, err := s.DeliveryLog(ctx, crm.TenantID, crmOnly, domain.Page{Limit: 4, Before: older.Newer})
	if err != nil || len(back.Deliveries) != 4 || back.Deliveries[0].ID != refused.ID || back.Newer != "" || back.Older == "" {
		t.Fatalf("back to the newest: %+v %v", back, err)
	}
	// A page before one in the middle: newest first, with pages both sides.
	mid, err := s.DeliveryLog(ctx, crm.TenantID, crmOnly, domain.Page{Limit: 2, Before: older.Newer})
	if err != nil || len(mid.Deliveries) != 2 || mid.Deliveries[0].ID != ids[3] || mid.Deliveries[1].ID != ids[2] || mid.Newer == "" || mid.Older == "" {
		t.Fatalf("middle page: %+v %v", mid, err)
	}

	for _, c := range []struct {
		f    domain.DeliveryFilter
		want int
	}{
		{domain.DeliveryFilter{Provider: "crm", Class: 4}, 1},
		{domain.DeliveryFilter{Class: 2}, 6},
		{domain.DeliveryFilter{Provider: "crm", Status: 200}, 5},
		{domain.DeliveryFilter{Provider: "shop"}, 1},
		{domain.DeliveryFilter{From: base.Add(2 * time.Second), Before: base.Add(4 * time.Second)}, 2},
	} {
		got, err := s.DeliveryLog(ctx, crm.TenantID, c.f, domain.Page{})
		n, cerr := s.CountDeliveries(ctx, crm.TenantID, c.f, 1000)
		if err != nil || cerr != nil || len(got.Deliveries) != c.want || n != int64(c.want) {
			t.Errorf("%s: %d listed, %d counted, want %d (%v %v)", c.f, len(got.Deliveries), n, c.want, err, cerr)
		}
	}
	if n, err := s.CountDeliveries(ctx, crm.TenantID, crmOnly, 3); err != nil || n != 4 {
		t.Errorf("capped count %d %v, want 4 (more than 3)", n, err)
	}
	if _, err := s.DeliveryLog(ctx, crm.TenantID, domain.DeliveryFilter{Class: 4, Status: 401}, domain.Page{}); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("class with status: %v", err)
	}

	// Tenant isolation.
	theirs, err := s.DeliveryLog(ctx, other.TenantID, domain.DeliveryFilter{}, domain.Page{})
	if err != nil || len(theirs.Deliveries) != 1 || theirs.Deliveries[0].Provider != "crm" {
		t.Fatalf("other tenant: %+v %v", theirs, err)
	}
	for _, d := range theirs.Deliveries {
		for _, id := range ids {
			if d.ID == id {
				t.Fatal("another tenant's list shows acme's delivery")
			}
		}
	}
	if n, _ := s.CountDeliveries(ctx, other.TenantID, domain.DeliveryFilter{}, 1000); n != 1 {
		t.Errorf("other tenant counts %d", n)
	}

	// Processing time: an accepted delivery's write time; none for a refusal.
	got, err := s.Delivery(ctx, crm.TenantID, ids[0])
	if err != nil || got.AnsweredAt.IsZero() || got.Events[0].Revision == nil || *got.Events[0].Revision != 1 {
		t.Errorf("accepted: answered %v, events %+v, %v", got.AnsweredAt, got.Events, err)
	}
	if got, err := s.Delivery(ctx, crm.TenantID, refused.ID); err != nil || !got.AnsweredAt.IsZero() {
		t.Errorf("refused: answered %v %v", got.AnsweredAt, err)
	}
}

// TestReplaysOf: a delivery's replays, newest first, paged both ways, with
// their outcomes; none for another tenant.
func TestReplaysOf(t *testing.T) {
	t.Parallel()
	ctx := pgtest.AsOperator(context.Background())
	s, p := pgtest.Setup(t, postgres.New)
	other := pgtest.Provider(t, s, "other", "crm")
	orig := pgtest.Delivery(p)
	orig.ReceivedAt = time.Now().Add(-time.Minute)
	e := pgtest.Event("m1", "c-1", 1, `{}`)
	if _, err := s.Ingest(ctx, orig, p, []domain.Event{e}); err != nil {
		t.Fatal(err)
	}
	var replays []string
	for i := range 3 {
		d := pgtest.Delivery(p)
		d.ReceivedAt, d.ReplayOf = orig.ReceivedAt.Add(time.Duration(i+1)*time.Second), orig.ID
		if _, err := s.Replay(ctx, d, p, []domain.Event{e}); err != nil {
			t.Fatal(err)
		}
		replays = append(replays, d.ID)
	}
	page, err := s.ReplaysOf(ctx, p.TenantID, orig.ID, domain.Page{Limit: 2})
	if err != nil || len(page.Deliveries) != 2 || page.Deliveries[0].ID != replays[2] || page.Older == "" || page.Newer != "" {
		t.Fatalf("first page %+v %v", page, err)
	}
	if got := page.Deliveries[0]; got.ReplayOf != orig.ID || got.Outcomes["duplicate"] != 1 {
		t.Errorf("replay %+v", got)
	}
	older, err := s.ReplaysOf(ctx, p.TenantID, orig.ID, domain.Page{Limit: 2, Cursor: page.Older})
	if err != nil || len(older.Deliveries) != 1 || older.Deliveries[0].ID != replays[0] || older.Newer == "" {
		t.Fatalf("older %+v %v", older, err)
	}
	newer, err := s.ReplaysOf(ctx, p.TenantID, orig.ID, domain.Page{Limit: 2, Before: older.Newer})
	if err != nil || len(newer.Deliveries) != 2 || newer.Deliveries[0].ID != replays[2] {
		t.Fatalf("newer %+v %v", newer, err)
	}
	if theirs, err := s.ReplaysOf(ctx, other.TenantID, orig.ID, domain.Page{}); err != nil || len(theirs.Deliveries) != 0 {
		t.Fatalf("another tenant sees %+v %v", theirs, err)
	}
}
