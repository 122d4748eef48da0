package ingest_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
)

// TestLogRefusals: one call adds each count to its provider's
// DeliveryRejected counter for its hour and keeps the samples with their
// reasons (a body only where one was given); a second call adds to the
// same counters; rows of a provider that does not exist are dropped
// without failing the batch.
func TestLogRefusals(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	erp := newProvider(t, s, "acme", "erp")
	ctx := context.Background()
	now := time.Now().UTC()
	hour, earlier := now.Truncate(time.Hour), now.Truncate(time.Hour).Add(-time.Hour)
	gone := domain.RefusalCount{TenantID: p.TenantID, ProviderID: 1 << 40, Hour: hour, N: 7}
	sample := func(prov domain.ProviderEndpoint, id int64, status int, sig, reason string, body []byte) domain.Delivery {
		return domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: prov.TenantID, ProviderID: id,
			ReceivedAt: now, Status: status, Signature: sig, Reason: reason, Body: body}
	}
	err := s.LogRefusals(ctx, []domain.RefusalCount{
		{TenantID: p.TenantID, ProviderID: p.ID, Hour: hour, N: 5},
		{TenantID: p.TenantID, ProviderID: p.ID, Hour: earlier, N: 2},
		{TenantID: erp.TenantID, ProviderID: erp.ID, Hour: hour, N: 1},
		gone,
	}, []domain.Delivery{
		sample(p, p.ID, http.StatusUnauthorized, domain.SignatureInvalid, "no signature matches", nil),
		sample(erp, erp.ID, http.StatusBadRequest, domain.SignatureValid, "", []byte(`{"type":`)),
		sample(p, gone.ProviderID, http.StatusUnauthorized, domain.SignatureMissing, "missing", nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.LogRefusals(ctx, []domain.RefusalCount{{TenantID: p.TenantID, ProviderID: p.ID, Hour: hour, N: 3}}, nil); err != nil {
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
