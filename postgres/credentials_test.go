package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/domain"
)

// TestOperatorTokensEndWithTheirAccess is the review's M1: a read-write
// token an owner created kept answering after the owner was disabled, or
// had their password reset. Each of disable, password reset and sign out
// everywhere revokes the working tokens they created in every tenant, in
// the same transaction, with an audit entry per token.
func TestOperatorTokensEndWithTheirAccess(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	root := newOperator(t, s, "root@example.com", true)
	other, err := s.CreateTenant(asTestCLI(context.Background()), "other", "Other")
	if err != nil {
		t.Fatal(err)
	}
	asRoot := asOperator(context.Background(), "root@example.com")
	for _, c := range []struct {
		name, email, why string
		end              func(id int64) error
	}{
		{"disable", "ann@example.com", "its creator was disabled",
			func(id int64) error { return s.SetDisabled(asRoot, root, id, true) }},
		{"password reset", "bob@example.com", "its creator's password was reset",
			func(int64) error { return s.ResetPassword(asRoot, "bob@example.com", "a brand new password") }},
		{"sign out everywhere", "cyd@example.com", "its creator was signed out everywhere",
			func(id int64) error { return s.SignOutEverywhere(asRoot, id) }},
	} {
		id := newMember(t, s, c.email, "acme", domain.RoleOwner)
		if err := s.AddMembership(asTestCLI(context.Background()), domain.NewMembership{UserID: id, TenantSlug: "other", Role: domain.RoleOwner}); err != nil {
			t.Fatal(err)
		}
		as := asOperator(context.Background(), c.email)
		tokens := map[string]string{}
		for slug, tenantID := range map[string]int64{"acme": p.TenantID, "other": other.ID} {
			tok, err := s.CreateAPIToken(as, tenantID, domain.NewAPIToken{Name: c.email + " script", Access: domain.TokenWrite, CreatedBy: id})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.TenantForToken(as, slug, tok); err != nil {
				t.Fatalf("%s: the token before: %v", c.name, err)
			}
			tokens[slug] = tok
		}
		if err := c.end(id); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for slug, tok := range tokens {
			if _, err := s.TenantForToken(as, slug, tok); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
				t.Errorf("%s: %s's token after it: %v, want EUNAUTHORIZED", c.name, slug, err)
			}
		}
		for _, tenantID := range []int64{p.TenantID, other.ID} {
			log := strings.Join(auditEntries(t, s, tenantID), "\n")
			if want := "token_revoke " + c.email + " script: " + c.why + " by root@example.com"; !strings.Contains(log, want) {
				t.Errorf("%s: the audit log of tenant %d lacks %q:\n%s", c.name, tenantID, want, log)
			}
		}
	}
}

// TestTokenUseWrittenOncePerMinute is F17's residual: every API call
// updated its token's last_used_at, a write per read. The row is written
// at the first use and then at most once a minute.
func TestTokenUseWrittenOncePerMinute(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := asTestCLI(context.Background())
	tok, err := s.CreateAPIToken(ctx, p.TenantID, domain.NewAPIToken{Name: "poller", Access: domain.TokenRead})
	if err != nil {
		t.Fatal(err)
	}
	version := func() (xmin string, used bool) {
		t.Helper()
		err := s.pool.QueryRow(ctx, `SELECT xmin::text, last_used_at IS NOT NULL FROM api_tokens WHERE tenant_id = $1 AND name = 'poller'`,
			p.TenantID).Scan(&xmin, &used)
		if err != nil {
			t.Fatal(err)
		}
		return xmin, used
	}
	use := func() {
		t.Helper()
		if _, err := s.TenantForToken(ctx, "acme", tok); err != nil {
			t.Fatal(err)
		}
	}
	use()
	first, used := version()
	if !used {
		t.Fatal("the first use was not recorded")
	}
	use()
	use()
	if again, _ := version(); again != first {
		t.Fatalf("calls within a minute wrote the token's row again (xmin %s, then %s)", first, again)
	}
	// A use more than a minute after the last one recorded is written.
	if _, err := s.pool.Exec(ctx, `UPDATE api_tokens SET last_used_at = now() - interval '61 seconds' WHERE tenant_id = $1 AND name = 'poller'`,
		p.TenantID); err != nil {
		t.Fatal(err)
	}
	aged, _ := version()
	use()
	if later, _ := version(); later == aged {
		t.Fatal("a use a minute after the last was not recorded")
	}
}

// TestTokenCreationRacesDisable: an owner creating API tokens while an
// admin disables them keeps none that works, whichever commits first.
func TestTokenCreationRacesDisable(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	root := newOperator(t, s, "root@example.com", true)
	ann := newMember(t, s, "ann@example.com", "acme", domain.RoleOwner)
	asAnn := asOperator(context.Background(), "ann@example.com")
	asRoot := asOperator(context.Background(), "root@example.com")
	for round := range 20 {
		if err := s.SetDisabled(asRoot, root, ann, false); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 3 {
			wg.Go(func() {
				<-start
				_, err := s.CreateAPIToken(asAnn, p.TenantID, domain.NewAPIToken{Name: "race", Access: domain.TokenWrite, CreatedBy: ann})
				if err != nil && domain.ErrorCode(err) != domain.EFORBIDDEN {
					t.Errorf("round %d, creator %d: %v", round, i, err)
				}
			})
		}
		wg.Go(func() {
			<-start
			if err := s.SetDisabled(asRoot, root, ann, true); err != nil {
				t.Errorf("round %d: disable: %v", round, err)
			}
		})
		close(start)
		wg.Wait()
		var working int
		err := s.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM api_tokens WHERE created_by_user_id = $1 AND revoked_at IS NULL`, ann).Scan(&working)
		if err != nil || working != 0 {
			t.Fatalf("round %d: %d of ann's tokens still work after she was disabled (%v)", round, working, err)
		}
	}
}
