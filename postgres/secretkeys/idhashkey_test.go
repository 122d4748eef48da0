package secretkeys_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// eraseAudited ingests and erases contact id and returns the erase's
// audit target, the newest.
func eraseAudited(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, id string) string {
	t.Helper()
	ctx := pgtest.AsOperator(context.Background())
	pgtest.Ingest(t, s, p, pgtest.Event("e-"+id, id, 1, `{"a":1}`))
	if _, err := s.EraseRecord(ctx, p.TenantID, domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: id}); err != nil {
		t.Fatal(err)
	}
	var target string
	if err := s.Pool().QueryRow(ctx, `SELECT target FROM audit_log WHERE tenant_id = $1 AND action = 'record_erase' ORDER BY id DESC LIMIT 1`,
		p.TenantID).Scan(&target); err != nil {
		t.Fatal(err)
	}
	return target
}

// TestIDHashKeySurvivesRekey (review 4's L5): audit targets are hashed
// under a key of the database, not plain SHA-256; the start-up check
// counts that key, and `secrets rekey` seals it again under the new
// encryption key without changing it, so a store with only the new key
// names the record as before.
func TestIDHashKeySurvivesRekey(t *testing.T) {
	t.Parallel()
	ctx := pgtest.AsOperator(context.Background())
	pool := testdb.New(t)
	old, _ := keyStore(t, pool, pgtest.Key)
	p := pgtest.Provider(t, old, "acme", "crm")
	const id = "zed@example.com"
	before := eraseAudited(t, old, p, id)
	sum := sha256.Sum256([]byte(id))
	if unkeyed := "crm/contact/#" + hex.EncodeToString(sum[:8]); before == unkeyed {
		t.Fatalf("erase audited as %q, the unkeyed hash of the id", before)
	}

	newOnly, _ := keyStore(t, pool, otherKey)
	if err := newOnly.CheckSecrets(ctx); err == nil || !strings.Contains(err.Error(), ", 1 id hash key of 1 database)") {
		t.Fatalf("check with only the new key: %v, want the id hash key counted", err)
	}
	both, _ := keyStore(t, pool, otherKey, pgtest.Key)
	if n, err := both.RekeySecrets(ctx, 1); err != nil || n.IDHashKey != 1 {
		t.Fatalf("rekey: %+v, %v; want the id hash key re-encrypted", n, err)
	}
	var sealedUnder string
	if err := pool.QueryRow(ctx, `SELECT key_id FROM id_hash_key`).Scan(&sealedUnder); err != nil || sealedUnder != keyID(t, otherKey) {
		t.Fatalf("id hash key under %q, %v; want the new key's id", sealedUnder, err)
	}
	if err := newOnly.CheckSecrets(ctx); err != nil {
		t.Fatalf("check with only the new key after rekey: %v", err)
	}
	fresh, _ := keyStore(t, pool, otherKey) // loads the key anew
	if after := eraseAudited(t, fresh, p, id); after != before {
		t.Fatalf("after rekey the record is audited as %q, before as %q", after, before)
	}
}
