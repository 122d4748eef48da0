package access_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/access"
)

// TestSignInFloodAuditsLittle: 100 sign-ins with made-up emails from one
// address add a handful of audit rows, not one each; the attempts are
// counted per address, window and outcome; no typed email reaches the
// log, only a short hash of it. Past the address's limit (lowered to 20)
// they leave no throttle row each.
func TestSignInFloodAuditsLittle(t *testing.T) {
	t.Parallel()
	s := signInStore(t)
	access.SetAddressChecks(s.Sessions, 20)
	ctx := context.Background()
	long := strings.Repeat("x", 200)
	for i := range 100 {
		trySignIn(ctx, s, fmt.Sprintf("%s%d@nowhere.example", long, i), "wrong password", "203.0.113.9")
	}
	got := auditSummaries(t, s)
	if got[domain.SignInUnknownAccount]+got[domain.SignInThrottled] > 3 {
		t.Fatalf("100 made-up sign-ins added audit rows %v, want at most a handful", got)
	}
	var counted int64
	if err := s.Pool().QueryRow(ctx, `SELECT coalesce(sum(attempts), 0) FROM sign_in_refusals WHERE address_key = '203.0.113.9'`).Scan(&counted); err != nil {
		t.Fatal(err)
	}
	if counted != 100 {
		t.Fatalf("counted %d refused sign-ins, want 100", counted)
	}
	var rows int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM login_throttle WHERE address_key = '203.0.113.9' AND email <> ''`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 20 {
		t.Fatalf("%d throttle rows of accounts, want the 20 checked", rows)
	}
	var longest int
	var leaked bool
	err := s.Pool().QueryRow(ctx, `SELECT coalesce(max(greatest(length(target), length(actor))), 0), coalesce(bool_or(target LIKE '%nowhere%' OR actor LIKE '%nowhere%'), false)
		FROM audit_log WHERE action = 'sign_in'`).Scan(&longest, &leaked)
	if err != nil {
		t.Fatal(err)
	}
	if leaked || longest > 40 {
		t.Fatalf("audit targets of unknown accounts: longest %d, typed email kept %v; want a short hash", longest, leaked)
	}
}

// TestSignInHashHoldsNoConnection: the password check runs with no
// connection of the pool acquired and no transaction open, so slow hashes
// cannot hold the read pool.
func TestSignInHashHoldsNoConnection(t *testing.T) {
	s := signInStore(t)
	var checks, held atomic.Int64
	restore := access.SetCompareHash(func(hash, password []byte) error {
		checks.Add(1)
		held.Add(int64(s.Pool().Stat().AcquiredConns()))
		var open int
		if err := s.Pool().QueryRow(context.Background(),
			`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`).Scan(&open); err != nil {
			t.Error(err)
		}
		held.Add(int64(open))
		return bcrypt.CompareHashAndPassword(hash, password)
	})
	defer restore()
	for _, try := range []struct{ email, password, want string }{
		{"ops@example.com", signInPassword, "signed in"},
		{"ops@example.com", "wrong password", "wrong"},
		{"nobody@example.com", "wrong password", "wrong"},
	} {
		if got := trySignIn(context.Background(), s, try.email, try.password, "203.0.113.7"); got != try.want {
			t.Fatalf("%+v: %s", try, got)
		}
	}
	if checks.Load() != 3 || held.Load() != 0 {
		t.Fatalf("%d password checks saw %d connections held or transactions open, want none", checks.Load(), held.Load())
	}
}
