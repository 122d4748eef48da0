package replay_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// TestReplayActorRechecked: the review's L2 for operators and tokens. A
// job's actor keeps its authority while enabled (an admin, or an operator
// or owner member) or working (a read-write token), and loses it when
// disabled, demoted to viewer, removed, revoked or expired.
func TestReplayActorRechecked(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	cli := pgtest.AsCLI(context.Background())
	root := pgtest.NewOperator(t, s, "root@example.com", true)
	ops := pgtest.NewOperator(t, s, "ops@example.com", false)
	if err := s.AddMembership(cli, domain.NewMembership{UserID: ops.ID, TenantSlug: "acme", Role: domain.RoleOperator}); err != nil {
		t.Fatal(err)
	}
	tok, err := s.CreateAPIToken(cli, p.TenantID, domain.NewAPIToken{Name: "rw", Access: domain.TokenWrite})
	if err != nil {
		t.Fatal(err)
	}
	grant, err := s.TenantForToken(cli, "acme", tok)
	if err != nil {
		t.Fatal(err)
	}
	job := func(a domain.Actor) domain.ReplayJob { return domain.ReplayJob{TenantID: p.TenantID, CreatedBy: a} }
	asOps := job(domain.Actor{Kind: domain.ActorOperator, Name: ops.Email, ID: ops.ID})
	asToken := job(domain.Actor{Kind: domain.ActorToken, Name: "rw", ID: grant.ID})
	check := func(what string, j domain.ReplayJob, want string) {
		t.Helper()
		err := s.CheckReplayActor(context.Background(), j)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", what, err)
		case want != "" && (domain.ErrorCode(err) != domain.EFORBIDDEN || !strings.Contains(domain.ErrorMessage(err), want)):
			t.Errorf("%s: %v, want EFORBIDDEN saying %q", what, err, want)
		}
	}
	check("an operator member", asOps, "")
	check("an admin who is no member", job(domain.Actor{Kind: domain.ActorOperator, Name: root.Email, ID: root.ID}), "")
	check("a working token", asToken, "")
	check("the CLI", job(domain.Actor{Kind: domain.ActorCLI, Name: "test"}), "")
	check("a job older than actor ids", job(domain.Actor{Kind: domain.ActorToken, Name: "rw"}), "")

	if _, err := s.SetMemberRole(cli, ops.ID, "acme", domain.RoleViewer); err != nil {
		t.Fatal(err)
	}
	check("a viewer", asOps, "the operator ops@example.com who started the job is no longer an operator of the workspace")
	if _, err := s.RemoveMembership(cli, ops.ID, "acme"); err != nil {
		t.Fatal(err)
	}
	check("a former member", asOps, "is no longer a member of the workspace")
	if err := s.AddMembership(cli, domain.NewMembership{UserID: ops.ID, TenantSlug: "acme", Role: domain.RoleOwner}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetDisabled(pgtest.AsOperator(context.Background()), root, ops.ID, true); err != nil {
		t.Fatal(err)
	}
	check("a disabled operator", asOps, "was disabled")

	if _, err := s.Pool().Exec(cli, `UPDATE api_tokens SET expires_at = now() WHERE tenant_id = $1 AND id = $2`, p.TenantID, grant.ID); err != nil {
		t.Fatal(err)
	}
	check("an expired token", asToken, `the API token "rw" that started the job has expired`)
	if err := s.RevokeAPIToken(cli, p.TenantID, grant.ID); err != nil {
		t.Fatal(err)
	}
	check("a revoked token", asToken, "was revoked")
	check("an unknown token", job(domain.Actor{Kind: domain.ActorToken, Name: "gone", ID: grant.ID + 100}), "no longer exists")
}
