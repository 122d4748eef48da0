package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// TestRecordAuditTargetsAreKeyed (review 4's L5): the audit target of a
// record erase is not the unkeyed hash of its id, which anyone could
// confirm by hashing a guessed email, yet the record's timeline still
// shows it, beside the entries written before the key (unkeyed hash) and
// before ids were hashed (raw id).
func TestRecordAuditTargetsAreKeyed(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	const id = "zed@example.com"
	ref := domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: id}
	sum := sha256.Sum256([]byte(id))
	unkeyed := "crm/contact/#" + hex.EncodeToString(sum[:8])
	for _, old := range []string{unkeyed, "crm/contact/" + id} {
		if _, err := s.pool.Exec(context.Background(), `INSERT INTO audit_log (tenant_id, actor_kind, actor, action, target, summary)
VALUES ($1, 'cli', 'before', 'record_reset', $2, 'revision 1 forgotten')`, p.TenantID, old); err != nil {
			t.Fatal(err)
		}
	}
	wantOutcome(t, ingestEvent(t, s, p, event("e1", id, 1, `{"a":1}`)), domain.Applied)
	if _, err := s.EraseRecord(ownerCtx(), p.TenantID, ref); err != nil {
		t.Fatal(err)
	}
	var target string
	if err := s.pool.QueryRow(context.Background(), `SELECT target FROM audit_log WHERE tenant_id = $1 AND action = 'record_erase'`,
		p.TenantID).Scan(&target); err != nil {
		t.Fatal(err)
	}
	if target == unkeyed || !strings.HasPrefix(target, "crm/contact/#") || len(target) != len(unkeyed) {
		t.Fatalf("erase audited as %q; the unkeyed hash of the id is %q: want a keyed hash of the same length", target, unkeyed)
	}
	tl, err := s.RecordTimeline(context.Background(), p.TenantID, ref, 10)
	if err != nil {
		t.Fatal(err)
	}
	var repairs []string
	for _, e := range tl.Entries {
		if e.Repair != "" {
			repairs = append(repairs, e.Repair+" by "+e.By)
		}
	}
	if want := "record_erase by owner@example.com, record_reset by before, record_reset by before"; strings.Join(repairs, ", ") != want {
		t.Fatalf("timeline repairs %q, want %s", repairs, want)
	}
}

// TestIDHashKeyMadeOnce: nodes that need the id hash key at once, on a
// database without one, agree on one key, and so on every name.
func TestIDHashKeyMadeOnce(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	names := make([]string, 4)
	var wg sync.WaitGroup
	for i := range names {
		s := pgtest.On(t, New, pool)
		wg.Go(func() {
			h, err := s.ids.Hasher(context.Background())
			if err != nil {
				t.Error(err)
			}
			names[i] = h.HashedID("zed@example.com")
		})
	}
	wg.Wait()
	if rows := pgtest.Scalar(t, pool, `SELECT count(*) FROM id_hash_key`); rows != 1 || names[0] == domain.LegacyIDHasher.HashedID("zed@example.com") ||
		strings.Count(strings.Join(names, " "), names[0]) != len(names) {
		t.Fatalf("%d keys, names %q: want one key, one keyed name", rows, names)
	}
}
