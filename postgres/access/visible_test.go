package access_test

import (
	"context"
	"slices"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// TestVisibleTenants: an operator sees the workspaces they belong to, in
// slug order, and an admin every workspace: the console's home and its
// workspace menu. On Citus the correlated lookup of memberships it used
// was refused, and the console showed nobody a workspace.
func TestVisibleTenants(t *testing.T) {
	t.Parallel()
	s := signInStore(t)
	ctx := pgtest.AsCLI(context.Background())
	for _, slug := range []string{"globex", "acme", "initech"} {
		if _, err := s.CreateTenant(ctx, slug, ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, slug := range []string{"initech", "acme"} {
		if err := s.AddMembership(ctx, domain.NewMembership{Email: "ops@example.com", TenantSlug: slug, Role: domain.RoleViewer}); err != nil {
			t.Fatal(err)
		}
	}
	u, err := s.Authenticate(ctx, "ops@example.com", signInPassword, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		admin bool
		want  []string
	}{{false, []string{"acme", "initech"}}, {true, []string{"acme", "globex", "initech"}}} {
		u.IsAdmin = c.admin
		tenants, err := s.VisibleTenants(context.Background(), u)
		if err != nil {
			t.Fatalf("admin %v: %v", c.admin, err)
		}
		var got []string
		for _, tn := range tenants {
			got = append(got, tn.Slug)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("admin %v sees %v, want %v", c.admin, got, c.want)
		}
	}
}
