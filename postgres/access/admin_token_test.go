package access_test

import (
	"context"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// TestAdminTokenLookup: an admin token resolves while its creator is an
// enabled admin, and not while they are disabled (again once enabled:
// nothing was revoked), nor once expired; a tenant's routes answer it as
// a token of another tenant (ENOTFOUND), and the admin API a tenant's
// token with EFORBIDDEN.
func TestAdminTokenLookup(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := pgtest.AsCLI(context.Background())
	root := pgtest.NewOperator(t, s, "root@example.com", true)
	second := pgtest.NewOperator(t, s, "second@example.com", true)
	token, err := s.CreateAdminToken(ctx, domain.NewAdminToken{Name: " ops ", CreatorEmail: "ROOT@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.AdminForToken(ctx, token)
	if err != nil || g.Name != "ops" || g.Creator != "root@example.com" || g.ID == 0 {
		t.Fatalf("AdminForToken = %+v, %v", g, err)
	}
	_, err = s.TenantForToken(ctx, "acme", token)
	pgtest.WantCode(t, err, domain.ENOTFOUND)
	tenantToken, err := s.CreateAPIToken(ctx, p.TenantID, domain.NewAPIToken{Name: "ci", Access: domain.TokenRead})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.AdminForToken(ctx, tenantToken)
	pgtest.WantCode(t, err, domain.EFORBIDDEN)
	_, err = s.AdminForToken(ctx, token+"x")
	pgtest.WantCode(t, err, domain.EUNAUTHORIZED)

	opCtx := pgtest.AsOperator(context.Background())
	if err := s.SetDisabled(opCtx, second, root.ID, true); err != nil {
		t.Fatal(err)
	}
	_, err = s.AdminForToken(ctx, token)
	pgtest.WantCode(t, err, domain.EUNAUTHORIZED)
	_, err = s.TenantForToken(ctx, "acme", token)
	pgtest.WantCode(t, err, domain.EUNAUTHORIZED)
	if err := s.SetDisabled(opCtx, second, root.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AdminForToken(ctx, token); err != nil {
		t.Fatalf("enabled again: %v", err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE admin_tokens SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	_, err = s.AdminForToken(ctx, token)
	pgtest.WantCode(t, err, domain.EUNAUTHORIZED)
	listed, err := s.AdminTokens(ctx)
	if err != nil || len(listed) != 1 || listed[0].Works || listed[0].LastUsedAt.IsZero() || listed[0].ExpiresAt.IsZero() ||
		listed[0].CreatedBy != "tidemark CLI (test)" {
		t.Fatalf("AdminTokens = %+v, %v", listed, err)
	}
	if _, err := s.CreateAdminToken(ctx, domain.NewAdminToken{Name: "", CreatorEmail: "root@example.com"}); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("no name: %v, want EINVALID", err)
	}
}
