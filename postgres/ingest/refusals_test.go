package ingest_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
)

// TestLogRefusals: one call adds each count to its provider's count of
// its minute and to its DeliveryRejected counter for its hour (two
// minutes of an hour in one), and keeps the samples with their reasons (a
// body only where one was given); a second call adds to the same counts;
// counts naming the same minute twice add up; rows of a provider that
// does not exist are dropped without failing the batch.
func TestLogRefusals(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	erp := newProvider(t, s, "acme", "erp")
	ctx := context.Background()
	now := time.Now().UTC()
	hour, earlier := now.Truncate(time.Hour), now.Truncate(time.Hour).Add(-time.Hour)
	minute, next := hour.Add(17*time.Minute), hour.Add(18*time.Minute)
	gone := domain.RefusalCount{TenantID: p.TenantID, ProviderID: 1 << 40, Minute: minute, N: 7}
	sample := func(prov domain.ProviderEndpoint, id int64, status int, sig, reason string, body []byte) domain.Delivery {
		return domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: prov.TenantID, ProviderID: id,
			ReceivedAt: now, Status: status, Signature: sig, Reason: reason, Body: body}
	}
	err := s.LogRefusals(ctx, []domain.RefusalCount{
		{TenantID: p.TenantID, ProviderID: p.ID, Minute: minute, N: 4},
		{TenantID: p.TenantID, ProviderID: p.ID, Minute: next, N: 1},
		{TenantID: p.TenantID, ProviderID: p.ID, Minute: earlier, N: 2},
		{TenantID: erp.TenantID, ProviderID: erp.ID, Minute: minute, N: 1},
		gone,
	}, []domain.Delivery{
		sample(p, p.ID, http.StatusUnauthorized, domain.SignatureInvalid, "no signature matches", nil),
		sample(erp, erp.ID, http.StatusBadRequest, domain.SignatureValid, "", []byte(`{"type":`)),
		sample(p, gone.ProviderID, http.StatusUnauthorized, domain.SignatureMissing, "missing", nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.LogRefusals(ctx, []domain.RefusalCount{{TenantID: p.TenantID, ProviderID: p.ID, Minute: minute, N: 1},
		{TenantID: p.TenantID, ProviderID: p.ID, Minute: minute, N: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.LogRefusals(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}

	counted := func(prov int64, bucket time.Time) (n int64) {
		t.Helper()
		err := s.Pool().QueryRow(ctx, `SELECT coalesce(sum(n), 0) FROM outcome_counters
			WHERE tenant_id = $1 AND provider_id = $2 AND bucket = $3 AND outcome = $4`,
			p.TenantID, prov, bucket, domain.DeliveryRejected).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []struct {
		name   string
		prov   int64
		bucket time.Time
		want   int64
	}{{"crm this hour", p.ID, hour, 8}, {"crm last hour", p.ID, earlier, 2}, {"erp", erp.ID, hour, 1}, {"deleted provider", gone.ProviderID, hour, 0}} {
		if got := counted(c.prov, c.bucket); got != c.want {
			t.Errorf("%s: %d refusals counted, want %d", c.name, got, c.want)
		}
	}
	perMinute := func(prov int64, m time.Time) (n int64) {
		t.Helper()
		err := s.Pool().QueryRow(ctx, `SELECT coalesce(sum(n), 0) FROM refusal_minutes WHERE tenant_id = $1 AND provider_id = $2 AND minute = $3`,
			p.TenantID, prov, m).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []struct {
		name   string
		prov   int64
		minute time.Time
		want   int64
	}{{"crm's minute", p.ID, minute, 7}, {"crm's next minute", p.ID, next, 1}, {"crm's minute of the last hour", p.ID, earlier, 2},
		{"erp", erp.ID, minute, 1}, {"deleted provider", gone.ProviderID, minute, 0}} {
		if got := perMinute(c.prov, c.minute); got != c.want {
			t.Errorf("%s: %d refusals counted in the minute, want %d", c.name, got, c.want)
		}
	}

	rows, err := s.Pool().Query(ctx, `SELECT provider_id, status, signature, coalesce(reason, ''), body FROM deliveries
		WHERE tenant_id = $1 ORDER BY provider_id`, p.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		provider          int64
		status            int
		signature, reason string
		body              []byte
	}
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.provider, &r.status, &r.signature, &r.reason, &r.body); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if len(got) != 2 || got[0].provider != p.ID || got[0].status != 401 || got[0].reason != "no signature matches" || got[0].body != nil ||
		got[1].provider != erp.ID || got[1].status != 400 || got[1].signature != "valid" || string(got[1].body) != `{"type":` {
		t.Fatalf("sampled deliveries %+v", got)
	}
}
