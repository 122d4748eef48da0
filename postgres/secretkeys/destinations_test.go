package secretkeys_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// signingSecrets are what destination id signs with on s.
func signingSecrets(t *testing.T, s *postgres.Store, tenantID, id int64) []string {
	t.Helper()
	got, err := s.SigningSecrets(pgtest.AsCLI(context.Background()), tenantID, id)
	if err != nil {
		t.Fatalf("signing secrets of destination %d: %v", id, err)
	}
	return got
}

// TestRekeyDestinationSecrets: the start-up check names the old key while
// destination secrets are under it; rekey moves them (a rotated one in its
// grace too) under the first key, so that with the old key dropped every
// destination still signs with the secrets it was given. An expired secret
// never signs again and is left as it is.
func TestRekeyDestinationSecrets(t *testing.T) {
	t.Parallel()
	ctx := pgtest.AsCLI(context.Background())
	pool := testdb.New(t)
	old, _ := keyStore(t, pool, pgtest.Key)
	tn, err := old.CreateTenant(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	create := func(url string) (stream.Destination, string) {
		t.Helper()
		d, secret, err := old.CreateDestination(ctx, tn.ID, stream.NewDestination{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		return d, secret
	}
	rotate := func(id int64) string {
		t.Helper()
		secret, err := old.RotateDestinationSecret(ctx, tn.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		return secret
	}
	a, aSecret := create("https://203.0.113.5/hook")
	b, bFirst := create("https://203.0.113.5/b")
	bSecond := rotate(b.ID) // bFirst signs on in its grace
	c, _ := create("https://203.0.113.5/c")
	cSecond := rotate(c.ID)
	if _, err := pool.Exec(ctx, `UPDATE destination_secrets SET expires_at = now() - interval '1 minute'
		WHERE tenant_id = $1 AND destination_id = $2 AND expires_at IS NOT NULL`, tn.ID, c.ID); err != nil {
		t.Fatal(err)
	}

	newOnly, _ := keyStore(t, pool, otherKey)
	err = newOnly.CheckSecrets(ctx)
	if err == nil || !strings.Contains(err.Error(), "key id "+keyID(t, pgtest.Key)+" (4 active secrets of 3 destinations)") {
		t.Fatalf("check with only the new key: %v, want the old key id with the destinations' counts", err)
	}
	both, _ := keyStore(t, pool, otherKey, pgtest.Key)
	if err := both.CheckSecrets(ctx); err != nil {
		t.Fatalf("check with both keys: %v", err)
	}

	if _, err := both.RekeySecrets(ctx, 3); err != nil {
		t.Fatalf("rekey: %v", err)
	}
	if err := newOnly.CheckSecrets(ctx); err != nil {
		t.Fatalf("check with only the new key after rekey: %v", err)
	}
	for _, tc := range []struct {
		id   int64
		want []string
	}{{a.ID, []string{aSecret}}, {b.ID, []string{bSecond, bFirst}}, {c.ID, []string{cSecond}}} {
		if got := signingSecrets(t, newOnly, tn.ID, tc.id); !slices.Equal(got, tc.want) {
			t.Fatalf("destination %d after rekey, with only the new key: %d secrets, want the %d it was given", tc.id, len(got), len(tc.want))
		}
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM destination_secrets WHERE key_id = $1`, keyID(t, pgtest.Key)).Scan(&left); err != nil || left != 1 {
		t.Fatalf("%d secrets left under the old key (%v), want only the expired one", left, err)
	}
}
