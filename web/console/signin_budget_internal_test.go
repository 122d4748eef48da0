package console

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/httpx"
)

var errWrong = domain.Errorf(domain.EUNAUTHORIZED, "Wrong email or password.")

// signInTry takes and settles one sign-in of email from client with the
// outcome err, and answers the refusal, if any.
func signInTry(b *signInBudgets, email, client string, err error, now time.Time) string {
	t, refusal, _ := b.take(email, netip.MustParsePrefix(client), now)
	if refusal == "" {
		t.settle(err, now)
	}
	return refusal
}

// TestSignInBudgetSustainedFlood: one wrong password every 10 s for one
// account from a shared address, for an hour, as the attacker
// sent; PostgreSQL checks the first 5 and refuses the rest for the
// account. Most attempts are refused in memory, for the account, and
// another account's sign-in from the address is never refused: the
// address's budget is not even dented.
func TestSignInBudgetSustainedFlood(t *testing.T) {
	t.Parallel()
	b := newSignInBudgets()
	now := time.Now()
	refused, checked := 0, 0
	for i := range 360 {
		at := now.Add(time.Duration(i) * 10 * time.Second)
		outcome := error(domain.ErrSignInThrottledAccount)
		if checked < domain.MaxLoginChecks {
			outcome = errWrong
		}
		switch r := signInTry(b, "victim@example.com", "203.0.113.7/32", outcome, at); r {
		case "":
			checked++
		case accountRefusal:
			refused++
		default:
			t.Fatalf("attempt %d refused for %q", i+1, r)
		}
		if i%30 == 29 {
			if r := signInTry(b, "ops@example.com", "203.0.113.7/32", nil, at); r != "" {
				t.Fatalf("after %d failures for another account, a sign-in was refused: %q", i+1, r)
			}
		}
		if over, _ := b.addresses.Exhausted(netip.MustParsePrefix("203.0.113.7/32"), at); over {
			t.Fatalf("the address's budget ran out after %d attempts", i+1)
		}
	}
	if refused < 200 {
		t.Fatalf("only %d of 360 attempts against one account were refused in memory", refused)
	}
}

// TestSignInBudgetAcrossAccounts: failures across many accounts (made-up
// emails) spend the address's budget, which is much larger than an
// account's; past it every sign-in from the address is refused, for the
// address, while other addresses are not affected. Refused attempts
// create no keys.
func TestSignInBudgetAcrossAccounts(t *testing.T) {
	t.Parallel()
	b := newSignInBudgets()
	now := time.Now()
	for i := range addressBurst {
		if r := signInTry(b, fmt.Sprintf("x%d@nowhere.example", i), "203.0.113.7/32", errWrong, now); r != "" {
			t.Fatalf("failure %d within the address's budget refused: %q", i+1, r)
		}
	}
	if r := signInTry(b, "ops@example.com", "203.0.113.7/32", nil, now); r != addressRefusal {
		t.Fatalf("past the address's budget: %q, want the address's refusal", r)
	}
	if r := signInTry(b, "ops@example.com", "198.51.100.9/32", nil, now); r != "" {
		t.Fatalf("another address: %q", r)
	}
	if r := signInTry(b, "ops@example.com", "203.0.113.7/32", nil, now.Add(addressEvery)); r != "" {
		t.Fatalf("after the address's refill: %q", r)
	}
	if r := signInTry(b, "ops@example.com", "203.0.113.7/32", nil, now.Add(addressEvery)); r != "" {
		t.Fatalf("a success spends none of the address's budget: %q", r)
	}
	accounts := b.accounts.Len()
	for i := range 50 {
		signInTry(b, fmt.Sprintf("y%d@nowhere.example", i), "203.0.113.7/32", errWrong, now.Add(addressEvery))
	}
	if got := b.accounts.Len(); got != accounts+1 {
		t.Fatalf("%d account keys after 50 made-up emails past the address's budget, want %d (the one within it)", got, accounts+1)
	}
}

// TestSignInBudgetNetwork: IPv6 failures count per /64 and per /48 as
// well, so that the 65,536 /64s of a /48 do not each bring a budget of
// their own; another /48 is not affected.
func TestSignInBudgetNetwork(t *testing.T) {
	t.Parallel()
	b := newSignInBudgets()
	now := time.Now()
	per64 := addressBurst / 2 // each /64 stays within its own budget
	for i := range networkBurst {
		client := fmt.Sprintf("2001:db8:1:%x::/64", i/per64)
		if r := signInTry(b, fmt.Sprintf("x%d@nowhere.example", i), client, errWrong, now); r != "" {
			t.Fatalf("failure %d from %s within the /48's budget refused: %q", i+1, client, r)
		}
	}
	for _, c := range []struct{ client, want string }{
		{"2001:db8:1:ffff::/64", networkRefusal}, // a fresh /64 of the same /48
		{"2001:db8:1:0::/64", networkRefusal},
		{"2001:db8:2::/64", ""}, // another /48
		{"203.0.113.7/32", ""},  // IPv4 has no /48
	} {
		if r := signInTry(b, "ops@example.com", c.client, nil, now); r != c.want {
			t.Errorf("%s: %q, want %q", c.client, r, c.want)
		}
	}
	if r := signInTry(b, "ops@example.com", "2001:db8:1:ffff::/64", nil, now.Add(networkEvery)); r != "" {
		t.Fatalf("after the /48's refill: %q", r)
	}
}

// newBudgetsOf makes budgets of burst tokens that barely refill.
func newBudgetsOf(burst int) (*httpx.Budget[accountAt], *httpx.Budget[netip.Prefix], *httpx.Budget[netip.Prefix]) {
	return httpx.NewBudget[accountAt](1e-6, burst), httpx.NewBudget[netip.Prefix](1e-6, burst), httpx.NewBudget[netip.Prefix](1e-6, burst)
}

// TestSignInBudgetSettle: which budgets each outcome spends. A refusal
// for the account (PostgreSQL's checks) spends only the account's, one
// for the address only the address's, a busy refusal none; a success
// spends none and clears the account's.
func TestSignInBudgetSettle(t *testing.T) {
	t.Parallel()
	now := time.Now()
	const client = "2001:db8:1:2::/64"
	tokens := func(b *signInBudgets) (account, address, network bool) {
		a, _ := b.accounts.Exhausted(accountAt{b.hash("ops@example.com"), netip.MustParsePrefix(client)}, now)
		d, _ := b.addresses.Exhausted(netip.MustParsePrefix(client), now)
		n, _ := b.networks.Exhausted(netip.MustParsePrefix("2001:db8:1::/48"), now)
		return a, d, n
	}
	for _, c := range []struct {
		outcome                   error
		account, address, network bool // spent
	}{
		{errWrong, true, true, true},
		{domain.ErrSignInThrottledAccount, true, false, false},
		{domain.ErrSignInThrottledAddress, false, true, true},
		{domain.ErrSignInBusy, false, false, false},
		{nil, false, false, false},
	} {
		b := newSignInBudgets()
		b.accounts, b.addresses, b.networks = newBudgetsOf(1)
		signInTry(b, "ops@example.com", client, c.outcome, now)
		if a, d, n := tokens(b); a != c.account || d != c.address || n != c.network {
			t.Errorf("%v spent account %v, address %v, /48 %v; want %v %v %v", c.outcome, a, d, n, c.account, c.address, c.network)
		}
	}
	// A success clears the account's failures at the address.
	b := newSignInBudgets()
	for range accountBurst - 1 {
		signInTry(b, "ops@example.com", client, errWrong, now)
	}
	signInTry(b, "ops@example.com", client, nil, now)
	for i := range accountBurst {
		if r := signInTry(b, "ops@example.com", client, errWrong, now); r != "" {
			t.Fatalf("failure %d after a success refused: %q", i+1, r)
		}
	}
	if r := signInTry(b, "OPS@example.com ", client, nil, now); r != accountRefusal {
		t.Fatalf("past the account's budget, as typed otherwise: %q", r)
	}
}
