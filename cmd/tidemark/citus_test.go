package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/citustest"
	"github.com/tidemark/tidemark/internal/provider"
)

// TestServeOnCitus runs the commands an operator runs on a Citus
// coordinator with two workers: migrate, citus distribute (twice: the
// second changes nothing), then serve, and sends it deliveries of every
// outcome one after the other, each answered as on one PostgreSQL.
func TestServeOnCitus(t *testing.T) {
	t.Parallel()
	c := citustest.Start(t)
	env := map[string]string{"DATABASE_URL": c.URL(), "TIDEMARK_ENCRYPTION_KEY": crashKey}
	if _, _, err := tidemark(t, env, "", "migrate"); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	out, _, err := tidemark(t, env, "", "citus", "distribute", "--shards", "4")
	if err != nil {
		t.Fatalf("citus distribute: %v", err)
	}
	for _, want := range []string{"with 2 workers", "reference tables: tenants, users, enabled_admins", "distributed by tenant_id: ", " deliveries,"} {
		if !strings.Contains(out, want) {
			t.Errorf("citus distribute said %q, want %q in it", out, want)
		}
	}
	if out, _, err := tidemark(t, env, "", "citus", "distribute"); err != nil || !strings.Contains(out, "nothing to do") {
		t.Errorf("second citus distribute: %q %v, want nothing to do", out, err)
	}
	secret := crashProviders(t, env, map[string]string{crashStandard: provider.Standard.Name()})[crashStandard]
	srv := startServer(t, buildTidemark(t), serverEnv(c.URL(), crashKey))

	for _, d := range []struct{ id, body, want string }{
		{"e1", string(snapshotBody("c-1", 1, `{"title":"VP"}`)), "applied"},
		{"e1", string(snapshotBody("c-1", 1, `{"title":"VP"}`)), "duplicate"},
		{"e2", string(snapshotBody("c-1", 3, `{"title":"CEO"}`)), "applied"},
		{"e3", string(snapshotBody("c-1", 2, `{"title":"CTO"}`)), "stale"},
		{"e4", string(snapshotBody("c-1", 3, `{"title":"CFO"}`)), "revision_conflict"},
		{"e5", `{"type":"contact.snapshot","data":{"contact_id":"c-1","snapshot":{}}}`, "unversioned"},
		{"e6", `{"type":"contact.snapshot","data":{}}`, "rejected"},
	} {
		if got := firstOutcome(postStandard(t, srv.base, secret, d.id, []byte(d.body))); got != d.want {
			t.Errorf("delivery %s: outcome %q, want %q", d.id, got, d.want)
		}
	}
	status, _, err := postSigned(http.DefaultClient, srv.base, crashDelivery{provider: crashStandard, id: "forged",
		body: snapshotBody("c-1", 9, `{}`)}, "whsec_"+strings.Repeat("A", 43)+"=")
	if err != nil || status != http.StatusUnauthorized {
		t.Errorf("a forged delivery: %d %v, want 401", status, err)
	}
}
