package access_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/access"
)

// TestSignInChecksBounded: no more password checks run at once than the
// node has places for (one for every two CPUs; 2 here), and no more wait
// than its waiting room holds (1 here); a sign-in past them is refused as
// busy at once, gives its throttle slots back and is not audited, so that
// bcrypt work a second is bounded whatever floods in. Not parallel: it
// replaces the package's gate and compare.
func TestSignInChecksBounded(t *testing.T) {
	s := signInStore(t)
	defer access.SetPasswordChecks(2, 1)()
	var running, most atomic.Int64
	inside, release := make(chan struct{}, 5), make(chan struct{})
	restore := access.SetCompareHash(func(hash, password []byte) error {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		inside <- struct{}{}
		<-release
		running.Add(-1)
		return bcrypt.ErrMismatchedHashAndPassword
	})
	defer restore()

	const n = 5 // MaxLoginChecks: every attempt gets its slots
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		answers = map[string]int{}
		busy    = make(chan struct{}, n)
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := trySignIn(context.Background(), s, "ops@example.com", "wrong password", "203.0.113.7")
			if got == "busy" {
				busy <- struct{}{}
			}
			mu.Lock()
			answers[got]++
			mu.Unlock()
		}()
	}
	// Two checks run and one waits; the two others are refused while the
	// checks still run.
	for range 2 {
		<-inside
	}
	for range n - 3 {
		select {
		case <-busy:
		case <-time.After(20 * time.Second):
			mu.Lock()
			t.Fatalf("no busy refusal while two checks run and one waits: %v", answers)
		}
	}
	close(release)
	wg.Wait()
	if most.Load() != 2 || answers["wrong"] != 3 || answers["busy"] != n-3 {
		t.Fatalf("%d checks at most at once, answers %v; want 2, 3 wrong and %d busy", most.Load(), answers, n-3)
	}
	// The busy ones gave their slots back: the account and the address hold
	// the three checked.
	var account, address int
	err := s.Pool().QueryRow(context.Background(), `SELECT
		(SELECT cardinality(checks) FROM login_throttle WHERE email = 'ops@example.com'),
		(SELECT cardinality(checks) FROM login_throttle WHERE email = '')`).Scan(&account, &address)
	if err != nil || account != 3 || address != 3 {
		t.Fatalf("throttle slots: account %d, address %d (%v); want 3 and 3", account, address, err)
	}
	if got := auditSummaries(t, s); len(got) != 1 || got[domain.SignInWrongPassword] != 3 {
		t.Fatalf("audit log holds %v, want the 3 wrong passwords only", got)
	}
	// With places free again the account has 2 slots left.
	restore()
	if got := trySignIn(context.Background(), s, "ops@example.com", signInPassword, "203.0.113.7"); got != "signed in" {
		t.Fatalf("after the busy refusals: %s", got)
	}
}
