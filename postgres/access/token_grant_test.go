package access_test

import (
	"context"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// TestGrantForToken: a token alone finds its tenant, with its name and
// access, among several tenants; an unknown, revoked or expired token is
// EUNAUTHORIZED, and a working admin token EFORBIDDEN.
func TestGrantForToken(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := pgtest.AsCLI(context.Background())
	other, err := s.CreateTenant(ctx, "globex", "Globex")
	if err != nil {
		t.Fatal(err)
	}
	acmeToken, err := s.CreateAPIToken(ctx, p.TenantID, domain.NewAPIToken{Name: "bi", Access: domain.TokenRead})
	if err != nil {
		t.Fatal(err)
	}
	globexToken, err := s.CreateAPIToken(ctx, other.ID, domain.NewAPIToken{Name: "ops", Access: domain.TokenWrite})
	if err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]domain.TokenGrant{
		acmeToken:   {Tenant: domain.Tenant{Slug: "acme"}, Name: "bi", Access: domain.TokenRead},
		globexToken: {Tenant: domain.Tenant{Slug: "globex"}, Name: "ops", Access: domain.TokenWrite},
	} {
		g, err := s.GrantForToken(ctx, token)
		if err != nil || g.Tenant.Slug != want.Tenant.Slug || g.Tenant.ID == 0 || g.Name != want.Name || g.Access != want.Access || g.ID == 0 {
			t.Fatalf("GrantForToken = %+v, %v; want %+v", g, err, want)
		}
	}
	_, err = s.GrantForToken(ctx, acmeToken+"x")
	pgtest.WantCode(t, err, domain.EUNAUTHORIZED)

	pgtest.NewOperator(t, s, "root@example.com", true)
	admin, err := s.CreateAdminToken(ctx, domain.NewAdminToken{Name: "a", CreatorEmail: "root@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.GrantForToken(ctx, admin)
	pgtest.WantCode(t, err, domain.EFORBIDDEN)

	if _, err := s.Pool().Exec(ctx, `UPDATE api_tokens SET revoked_at = now() WHERE tenant_id = $1`, p.TenantID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE tenant_id = $1`, other.ID); err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{acmeToken, globexToken} {
		_, err = s.GrantForToken(ctx, token)
		pgtest.WantCode(t, err, domain.EUNAUTHORIZED)
	}
}
