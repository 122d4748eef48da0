package access_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

func TestOperatorLifecycle(t *testing.T) {
	t.Parallel()
	s, _ := pgtest.Setup(t, postgres.New)
	ctx := pgtest.AsOperator(context.Background())
	root := pgtest.NewOperator(t, s, "root@example.com", true)
	ops := pgtest.NewOperator(t, s, "ops@example.com", false)
	signIn := func(password string) error {
		_, err := s.Authenticate(ctx, "ops@example.com", password, "192.0.2.9")
		return err
	}
	epoch := func() int64 {
		u, err := s.User(ctx, ops.ID)
		if err != nil {
			t.Fatal(err)
		}
		return u.SessionEpoch
	}
	if err := signIn(pgtest.Password); err != nil {
		t.Fatal(err)
	}

	// Disabled: no sign-in with the right password, and every session ends.
	before := epoch()
	if err := s.SetDisabled(ctx, root, ops.ID, true); err != nil {
		t.Fatal(err)
	}
	if u, _ := s.User(ctx, ops.ID); !u.Disabled || u.SessionEpoch != before+1 {
		t.Fatalf("disabled operator %+v, want disabled with epoch %d", u, before+1)
	}
	if err := signIn(pgtest.Password); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
		t.Fatalf("a disabled operator signed in: %v", err)
	}
	ops2, err := s.Operators(ctx)
	if err != nil || ops2[0].Email != "ops@example.com" || ops2[0].DisabledAt.IsZero() || !ops2[1].DisabledAt.IsZero() {
		t.Fatalf("operators %+v, %v", ops2, err)
	}
	if err := s.SetDisabled(ctx, root, ops.ID, false); err != nil {
		t.Fatal(err)
	}
	if err := signIn(pgtest.Password); err != nil {
		t.Fatalf("re-enabled: %v", err)
	}

	// A new password works at once, the old one no longer, and sessions end.
	before = epoch()
	if err := s.ResetPassword(ctx, "ops@example.com", "another good password"); err != nil {
		t.Fatal(err)
	}
	if err := signIn(pgtest.Password); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
		t.Fatalf("the old password still works: %v", err)
	}
	if err := signIn("another good password"); err != nil || epoch() != before+1 {
		t.Fatalf("new password: %v, epoch %d after %d", err, epoch(), before)
	}
	before = epoch()
	if err := s.SignOutEverywhere(ctx, ops.ID); err != nil || epoch() != before+1 {
		t.Fatalf("sign out everywhere: %v, epoch %d after %d", err, epoch(), before)
	}

	refusals := []struct {
		name string
		err  error
		code string
	}{
		{"short password", s.ResetPassword(ctx, "ops@example.com", "short"), domain.EINVALID},
		{"password past bcrypt's 72 bytes", s.ResetPassword(ctx, "ops@example.com", string(make([]byte, 73))), domain.EINVALID},
		{"unknown email", s.ResetPassword(ctx, "nobody@example.com", "a good password"), domain.ENOTFOUND},
		{"unknown operator", s.SetDisabled(ctx, root, 9999, true), domain.ENOTFOUND},
		{"sign out unknown", s.SignOutEverywhere(ctx, 9999), domain.ENOTFOUND},
		{"disable yourself", s.SetDisabled(ctx, root, root.ID, true), domain.ECONFLICT},
		{"not an admin", s.SetDisabled(ctx, ops, root.ID, true), domain.ENOTFOUND},
	}
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) { pgtest.WantCode(t, r.err, r.code) })
	}
}

// TestLastAdminRace has two admins take each other's admin standing away
// at the same instant. Both transactions are held inside, past locking
// their target, until both are there: a check that read the other admin
// before writing would let both through. The database lets one.
func TestLastAdminRace(t *testing.T) {
	t.Parallel()
	testdb.SkipOnCitus(t, "its barrier watches pg_locks on the coordinator, and on Citus the audit log's waits are on the workers")
	s, _ := pgtest.Setup(t, postgres.New)
	a := pgtest.NewOperator(t, s, "a@example.com", true)
	b := pgtest.NewOperator(t, s, "b@example.com", true)
	ctx := pgtest.AsOperator(context.Background())
	url := s.Pool().Config().ConnString()
	stores := [2]*postgres.Store{pgtest.On(t, postgres.New, pgtest.WarmPool(t, url, "admin race a", 2)), pgtest.On(t, postgres.New, pgtest.WarmPool(t, url, "admin race b", 2))}
	cli := domain.User{IsAdmin: true}

	races := []struct {
		name   string
		change func(st *postgres.Store, actor, target domain.User) error
		undo   func(target domain.User) error
	}{
		{"disable each other", func(st *postgres.Store, actor, target domain.User) error {
			return st.SetDisabled(ctx, actor, target.ID, true)
		}, func(target domain.User) error { return s.SetDisabled(ctx, cli, target.ID, false) }},
		{"remove each other's admin flag", func(st *postgres.Store, actor, target domain.User) error {
			return st.SetAdmin(ctx, actor, target.ID, false)
		}, func(target domain.User) error { return s.SetAdmin(ctx, cli, target.ID, true) }},
	}
	for _, race := range races {
		for round := range 3 {
			errs := raceEachOther(t, s, func(i int) error {
				actor, target := a, b
				if i == 1 {
					actor, target = b, a
				}
				return race.change(stores[i], actor, target)
			})
			won := 0
			for i, err := range errs {
				switch {
				case err == nil:
					won++
					if err := race.undo([]domain.User{b, a}[i]); err != nil {
						t.Fatal(err)
					}
				case err != domain.ErrLastAdmin:
					t.Fatalf("%s, round %d: %v", race.name, round, err)
				}
			}
			if won != 1 {
				t.Fatalf("%s, round %d: %d of 2 changes went through, want exactly 1", race.name, round, won)
			}
		}
	}
	if n := pgtest.Scalar(t, s.Pool(), `SELECT count(*) FROM users WHERE is_admin AND disabled_at IS NULL`); n != 2 {
		t.Fatalf("%d enabled admins after the races were undone, want 2", n)
	}
	if n := pgtest.Scalar(t, s.Pool(), `SELECT n FROM enabled_admins`); n != 2 {
		t.Fatalf("the counter says %d enabled admins, want 2", n)
	}
}

// raceEachOther runs change(0) and change(1) at once, each in its own
// transaction, and holds both inside until both have reached their audit
// entry (after locking their target): a table lock on audit_log, taken
// first, is the barrier.
func raceEachOther(t *testing.T, s *postgres.Store, change func(i int) error) [2]error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gate, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Rollback(context.Background())
	if _, err := gate.Exec(ctx, `LOCK TABLE audit_log IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var (
		errs [2]error
		wg   sync.WaitGroup
	)
	for i := range 2 {
		wg.Go(func() { errs[i] = change(i) })
	}
	for waiting := 0; waiting < 2; {
		if ctx.Err() != nil {
			t.Fatalf("only %d changes reached the barrier", waiting)
		}
		time.Sleep(5 * time.Millisecond)
		err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_locks
			WHERE relation = 'audit_log'::regclass AND NOT granted
			  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := gate.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return errs
}
