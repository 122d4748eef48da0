package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
)

// TestTenantDestinationLimit: a tenant has at most 20 destinations unless
// an admin changes it with tenant update; the one past the limit is
// refused as given (exit 2), saying how to make room, and the change of
// limit is audited.
func TestTenantDestinationLimit(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": testdb.NewURL(t), "TIDEMARK_ENCRYPTION_KEY": testEncryptionKey, "USER": "ann"}
	if _, _, err := tidemark(t, env, "", "tenant", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	create := func() error {
		_, _, err := tidemark(t, env, "", "destination", "create", "--tenant", "acme", "--url", "https://203.0.113.7/hook")
		return err
	}
	for i := range domain.DefaultMaxDestinations {
		if err := create(); err != nil {
			t.Fatalf("destination %d of 20: %v", i+1, err)
		}
	}
	err := create()
	if err == nil || domain.ErrorCode(err) != domain.EINVALID ||
		!strings.Contains(err.Error(), "this workspace has 20 destinations, as many as it may have") ||
		!strings.Contains(err.Error(), "tidemark tenant update acme --max-destinations N") {
		t.Fatalf("the 21st destination: %v; want a refusal (exit 2) naming the limit and how to raise it", err)
	}
	out, _, err := tidemark(t, env, "", "tenant", "update", "acme", "--max-destinations", "21")
	if err != nil || out != "updated tenant acme: at most 21 destinations\n" {
		t.Fatalf("tenant update: %v, %q", err, out)
	}
	if err := create(); err != nil {
		t.Fatalf("the 21st destination after the limit was raised: %v", err)
	}
	for _, args := range [][]string{{"acme"}, {"acme", "--max-destinations", "-1"}, {"acme", "--max-destinations", "10001"}} {
		if _, _, err := tidemark(t, env, "", append([]string{"tenant", "update"}, args...)...); err == nil {
			t.Errorf("tenant update %v: no error", args)
		}
	}
	if _, _, err := tidemark(t, env, "", "tenant", "update", "nobody", "--max-destinations", "5"); err == nil ||
		!strings.Contains(err.Error(), `tenant "nobody" not found`) {
		t.Errorf("tenant update of an unknown tenant: %v", err)
	}
	conn, err := pgx.Connect(context.Background(), env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var actor, summary string
	if err := conn.QueryRow(context.Background(), `SELECT actor, summary FROM audit_log WHERE action = 'tenant_update'`).
		Scan(&actor, &summary); err != nil || actor != "ann" || summary != "max destinations 21 (was 20)" {
		t.Errorf("audit of the change of limit: %q %q (%v)", actor, summary, err)
	}
}
