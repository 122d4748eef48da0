package access_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/access"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

const signInPassword = "correct horse battery"

// signInStore is a store with operator ops@example.com.
func signInStore(t *testing.T) *postgres.Store {
	t.Helper()
	s, err := postgres.New(testdb.New(t), pgtest.Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateUser(pgtest.AsCLI(context.Background()), "ops@example.com", signInPassword, false, "", ""); err != nil {
		t.Fatal(err)
	}
	return s
}

// trySignIn tries a sign-in as the console does (the person signing in is
// the actor) and says how it was answered: "signed in", "wrong" (the
// password was checked), "throttled" (for the account at the address),
// "throttled address" (for the address over all accounts), "busy" (no
// place to check the password), or the error.
func trySignIn(ctx context.Context, s *postgres.Store, email, password, address string) string {
	ctx = domain.WithActor(ctx, domain.Actor{Kind: domain.ActorOperator, Name: email, Address: address})
	_, err := s.Authenticate(ctx, email, password, address)
	switch msg := domain.ErrorMessage(err); {
	case err == nil:
		return "signed in"
	case strings.HasPrefix(msg, "Wrong email or password"):
		return "wrong"
	case errors.Is(err, domain.ErrSignInThrottledAccount):
		return "throttled"
	case errors.Is(err, domain.ErrSignInThrottledAddress):
		return "throttled address"
	case errors.Is(err, domain.ErrSignInBusy):
		return "busy"
	default:
		return err.Error()
	}
}

// TestSignInThrottleRace sends 40 wrong passwords for one account from one
// address at once: at most MaxLoginChecks of them may reach the password
// check, the others are throttled, whatever the interleaving. The throttle
// that read the failures before the check and wrote them after let all 40
// through.
func TestSignInThrottleRace(t *testing.T) {
	t.Parallel()
	s := signInStore(t)
	const n = 40
	var (
		start   = make(chan struct{})
		wg      sync.WaitGroup
		mu      sync.Mutex
		answers = map[string]int{}
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got := trySignIn(context.Background(), s, "ops@example.com", "wrong password", "203.0.113.7")
			mu.Lock()
			answers[got]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	if answers["wrong"] != domain.MaxLoginChecks || answers["throttled"] != n-domain.MaxLoginChecks {
		t.Fatalf("%d concurrent wrong passwords were answered %v; want %d checked and the rest throttled",
			n, answers, domain.MaxLoginChecks)
	}
	// Throttled attempts are counted, and only the window's first audited.
	if got := auditSummaries(t, s); got[domain.SignInWrongPassword] != domain.MaxLoginChecks || got[domain.SignInThrottled] != 1 {
		t.Fatalf("audit log holds %v", got)
	}
	var throttled int
	if err := s.Pool().QueryRow(context.Background(), `SELECT attempts FROM sign_in_refusals WHERE outcome = 'throttled'`).Scan(&throttled); err != nil || throttled != n-domain.MaxLoginChecks {
		t.Fatalf("counted %d throttled sign-ins (%v), want %d", throttled, err, n-domain.MaxLoginChecks)
	}
}

func TestSignInThrottleRules(t *testing.T) {
	t.Parallel()
	type try struct{ email, password, address, want string }
	tries := func(email, address, want string, times int) []try {
		var out []try
		for range times {
			out = append(out, try{email, "wrong password", address, want})
		}
		return out
	}
	wrong := func(email, address string, times int) []try { return tries(email, address, "wrong", times) }
	throttled := func(email, address string, times int) []try { return tries(email, address, "throttled", times) }
	cases := []struct {
		name  string
		tries [][]try
	}{
		{"a throttled address does not lock the account out elsewhere", [][]try{
			wrong("ops@example.com", "203.0.113.7", 5),
			{{"ops@example.com", signInPassword, "203.0.113.7", "throttled"}},
			{{"ops@example.com", signInPassword, "198.51.100.9", "signed in"}},
			{{"ops@example.com", "wrong password", "203.0.113.7", "throttled"}},
		}},
		{"a success clears the address's failures", [][]try{
			wrong("ops@example.com", "203.0.113.7", 4),
			{{"ops@example.com", signInPassword, "203.0.113.7", "signed in"}},
			wrong("ops@example.com", "203.0.113.7", 5),
			{{"ops@example.com", signInPassword, "203.0.113.7", "throttled"}},
		}},
		{"IPv6 addresses count per /64", [][]try{
			wrong("ops@example.com", "2001:db8:1:2::1", 3),
			wrong("ops@example.com", "2001:db8:1:2:ffff:ffff:ffff:ffff", 2),
			{{"ops@example.com", signInPassword, "2001:db8:1:2::99", "throttled"}},
			{{"ops@example.com", signInPassword, "2001:db8:1:3::1", "signed in"}},
		}},
		{"unknown accounts count like known ones", [][]try{
			wrong("nobody@example.com", "203.0.113.7", 5),
			{{"nobody@example.com", "wrong password", "203.0.113.7", "throttled"}},
			{{"NOBODY@example.com ", "wrong password", "203.0.113.7", "throttled"}},
		}},
		{"an address is throttled over all accounts", [][]try{
			wrong("a@example.com", "203.0.113.7", 5), wrong("b@example.com", "203.0.113.7", 5),
			wrong("c@example.com", "203.0.113.7", 5), wrong("d@example.com", "203.0.113.7", 5),
			{{"ops@example.com", signInPassword, "203.0.113.7", "throttled address"}},
			{{"ops@example.com", signInPassword, "198.51.100.9", "signed in"}},
		}},
		{"failures against one account spend none of the address's slots", [][]try{
			wrong("a@example.com", "203.0.113.7", 5),
			throttled("a@example.com", "203.0.113.7", 25), // more than the address's limit
			{{"ops@example.com", signInPassword, "203.0.113.7", "signed in"}},
		}},
		{"a throttled account is told so where its address is throttled too", [][]try{
			wrong("a@example.com", "203.0.113.7", 5), wrong("b@example.com", "203.0.113.7", 5),
			wrong("c@example.com", "203.0.113.7", 5), wrong("d@example.com", "203.0.113.7", 5),
			{{"a@example.com", "wrong password", "203.0.113.7", "throttled"}},
			{{"e@example.com", "wrong password", "203.0.113.7", "throttled address"}},
		}},
		{"successes give the address's slot back", [][]try{
			wrong("a@example.com", "203.0.113.7", 5), wrong("b@example.com", "203.0.113.7", 5),
			wrong("c@example.com", "203.0.113.7", 5), wrong("d@example.com", "203.0.113.7", 4),
			{{"ops@example.com", signInPassword, "203.0.113.7", "signed in"}},
			{{"ops@example.com", signInPassword, "203.0.113.7", "signed in"}},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := signInStore(t)
			// The address's limit as low as 20, so that four accounts
			// reach it in a few checks.
			access.SetAddressChecks(s.Sessions, 4*domain.MaxLoginChecks)
			for _, group := range c.tries {
				for i, try := range group {
					if got := trySignIn(context.Background(), s, try.email, try.password, try.address); got != try.want {
						t.Fatalf("try %d of %+v: %s", i+1, try, got)
					}
				}
			}
		})
	}
}

// TestSignInAudit: every attempt is recorded with the email (a hash of it
// for an unknown account), the outcome and the client address, never the
// password; a client that hangs up does not undo its attempt.
func TestSignInAudit(t *testing.T) {
	t.Parallel()
	s := signInStore(t)
	ctx := context.Background()
	gone, cancel := context.WithCancel(ctx)
	cancel()
	for _, try := range []struct {
		ctx                      context.Context
		email, password, address string
	}{
		{ctx, "ops@example.com", signInPassword, "203.0.113.7"},
		{ctx, "Ops@Example.com", "hunter2 secret", "203.0.113.7"},
		{gone, "nobody@example.com", "hunter2 secret", "2001:db8::1"},
	} {
		trySignIn(try.ctx, s, try.email, try.password, try.address)
	}
	rows, _ := s.Pool().Query(ctx, `SELECT actor_kind, actor, action, target, summary, client_address FROM audit_log WHERE action = 'sign_in' ORDER BY id`)
	var got []string
	for rows.Next() {
		var kind, actor, action, target, summary, address string
		if err := rows.Scan(&kind, &actor, &action, &target, &summary, &address); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Join([]string{kind, actor, action, target, summary, address}, "|"))
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	unknown := idHasher(t, s).SignInAuditName("unknown", "nobody@example.com") // an unknown account is named by a hash
	want := []string{
		"operator|ops@example.com|sign_in|ops@example.com|succeeded|203.0.113.7",
		"operator|Ops@Example.com|sign_in|ops@example.com|wrong password|203.0.113.7",
		"operator|" + unknown + "|sign_in|" + unknown + "|unknown account|2001:db8::1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(strings.Join(got, ""), "hunter2") {
		t.Fatal("a password reached the audit log")
	}
}

// auditSummaries counts the sign_in entries by summary.
func auditSummaries(t *testing.T, s *postgres.Store) map[string]int {
	t.Helper()
	rows, _ := s.Pool().Query(context.Background(), `SELECT summary, count(*) FROM audit_log WHERE action = 'sign_in' GROUP BY summary`)
	got := map[string]int{}
	for rows.Next() {
		var summary string
		var n int
		if err := rows.Scan(&summary, &n); err != nil {
			t.Fatal(err)
		}
		got[summary] = n
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return got
}

// TestSignInForgetsStaleRows: a success drops throttle rows nobody used
// within the window, and keeps recent ones.
func TestSignInForgetsStaleRows(t *testing.T) {
	t.Parallel()
	s := signInStore(t)
	ctx := context.Background()
	_, err := s.Pool().Exec(ctx, `INSERT INTO login_throttle (email, address_key, checks, last_at) VALUES
		('old@example.com', '192.0.2.1', ARRAY[now() - interval '1 hour'], now() - interval '1 hour'),
		('new@example.com', '192.0.2.1', ARRAY[now() - interval '1 minute'], now() - interval '1 minute')`)
	if err != nil {
		t.Fatal(err)
	}
	if got := trySignIn(ctx, s, "ops@example.com", signInPassword, "203.0.113.7"); got != "signed in" {
		t.Fatal(got)
	}
	var left []string
	rows, _ := s.Pool().Query(ctx, `SELECT email FROM login_throttle WHERE email <> '' ORDER BY email`)
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		left = append(left, e)
	}
	if strings.Join(left, ",") != "new@example.com" {
		t.Fatalf("throttle rows left: %v, want only the recent one", left)
	}
}
