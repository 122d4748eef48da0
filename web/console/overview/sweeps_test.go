package overview_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// withCredentials gives acme's provider API credentials.
func withCredentials(t *testing.T, e *webtest.Env, provider string) int64 {
	t.Helper()
	ctx := context.Background()
	p, err := e.Store.ProviderSummary(ctx, e.Tenant("acme").ID, provider)
	if err != nil {
		t.Fatal(err)
	}
	actor := domain.WithActor(ctx, domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	if err := e.Store.SetAPICredentials(actor, p.TenantID, p.ID, pull.Credentials{Token: "pat-test-0123456789"}); err != nil {
		t.Fatal(err)
	}
	return p.ID
}

// TestOverviewLastSweep: per provider, the last sweep's missed changes
// linking to the provider's backfills, "no sweep yet" for one with
// credentials never swept, and a failed sweep as such.
func TestOverviewLastSweep(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("acme", "billing")
	e.Provider("acme", "erp")
	e.Provider("acme", "support")
	b := e.Operator("ops@example.com", false, "acme")
	ctx, tenant := context.Background(), e.Tenant("acme").ID
	crm, erp := withCredentials(t, e, "crm"), withCredentials(t, e, "erp")
	withCredentials(t, e, "billing")

	now := time.Now()
	for _, s := range []struct {
		provider int64
		state    pull.JobState
		missed   int
	}{{crm, pull.Done, 1}, {crm, pull.Done, 3}, {erp, pull.Failed, 0}} {
		j, err := e.Store.StartBackfill(ctx, tenant, s.provider, now.Add(-20*time.Minute), now, "", true)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := e.Store.ClaimBackfill(ctx); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if err := e.Store.FinishBackfill(ctx, tenant, j.ID, pull.Progress{Events: 9, Missed: s.missed}, s.state, ""); err != nil {
			t.Fatal(err)
		}
	}

	_, doc := b.Get("/t/acme")
	cell := func(provider string) string {
		return strings.Join(strings.Fields(doc.Find(`table.outcome-counts tr[data-provider="`+provider+`"] td.last-sweep`).Text()), " ")
	}
	if got := cell("crm"); !strings.HasPrefix(got, "3 missed 20") {
		t.Errorf("crm: %q, want its last sweep's 3 missed and when", got)
	}
	if href := doc.Find(`tr[data-provider="crm"] td.last-sweep a`).AttrOr("href", ""); href != "/t/acme/providers/crm#backfill" {
		t.Errorf("crm's link %q", href)
	}
	for provider, want := range map[string]string{"billing": "no sweep yet", "erp": "failed", "support": "none"} {
		if got := cell(provider); !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q, want %q", provider, got, want)
		}
	}
}
