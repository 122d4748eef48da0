package access_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pg"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// idHasher is the store's IDHasher, its key opened as the store does.
func idHasher(t *testing.T, s *postgres.Store) domain.IDHasher {
	t.Helper()
	keys, err := pg.NewKeyring([][]byte{pgtest.Key})
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := s.Pool().Query(context.Background(), `SELECT 0, 0, 1, key_id, aad_version, ciphertext FROM id_hash_key`)
	sealed, err := pgx.CollectExactlyOneRow(rows, pg.ScanSealedSecret)
	if err != nil {
		t.Fatal(err)
	}
	key, err := keys.Open(sealed)
	if err != nil {
		t.Fatal(err)
	}
	return domain.NewIDHasher([]byte(key))
}

// TestRefusedSignInNamesAreKeyed (review 4's L5): an unknown account's
// sign-in is audited under a keyed hash of its email, which nobody can
// confirm by hashing a guess, and equal emails still match.
func TestRefusedSignInNamesAreKeyed(t *testing.T) {
	t.Parallel()
	s := signInStore(t)
	for _, address := range []string{"203.0.113.7", "198.51.100.9"} { // each the first of its address
		trySignIn(context.Background(), s, "Nobody@Example.com", "hunter2 secret", address)
	}
	rows, _ := s.Pool().Query(context.Background(), `SELECT target FROM audit_log WHERE summary = 'unknown account' ORDER BY id`)
	targets, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(targets) != 2 {
		t.Fatalf("audited %q, %v; want two unknown accounts", targets, err)
	}
	sum := sha256.Sum256([]byte("nobody@example.com"))
	unkeyed := "unknown:" + hex.EncodeToString(sum[:8])
	if targets[0] == unkeyed || len(targets[0]) != len(unkeyed) || targets[1] != targets[0] {
		t.Fatalf("unknown accounts audited as %q; the unkeyed hash is %q: want one keyed name of the same length", targets, unkeyed)
	}
}
