package console

import (
	"errors"
	"hash/maphash"
	"net/netip"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/httpx"
)

// The in-memory sign-in budgets each node keeps in front of PostgreSQL's
// throttle (domain.MaxLoginChecks), so that floods cost no query, row or
// hash. They are looser than it and spent only by attempts that are not
// successes, the account's first:
//
//   - an account from a client address (IPv6: its /64) has bursts of
//     accountBurst, then one every accountEvery;
//   - the address over all accounts has a much larger budget, and for
//     IPv6 so has its /48; they shield the database from floods across
//     many accounts (made-up emails) and are spent only by attempts that
//     got past the account's budget, so failures against one account
//     cannot use them up: a correct password for another account from
//     the same address still signs in.
const (
	accountBurst = 10
	accountEvery = 30 * time.Second
	addressBurst = 100
	addressEvery = 5 * time.Second
	networkBurst = 400
	networkEvery = time.Second
)

// signInBudgets are the budgets of the accounts at an address, of the
// addresses and of the IPv6 /48s. Each table holds at most 65,536 keys
// and makes room by forgetting the key used longest ago.
type signInBudgets struct {
	seed      maphash.Seed
	accounts  *httpx.Budget[accountAt]
	addresses *httpx.Budget[netip.Prefix]
	networks  *httpx.Budget[netip.Prefix]
}

// accountAt is an account at a client address; the email is kept as a
// hash, so a flood of long made-up emails costs a few bytes a key.
type accountAt struct {
	email  uint64
	client netip.Prefix
}

func newSignInBudgets() *signInBudgets {
	every := func(d time.Duration) float64 { return float64(time.Second) / float64(d) }
	return &signInBudgets{seed: maphash.MakeSeed(),
		accounts:  httpx.NewBudget[accountAt](every(accountEvery), accountBurst),
		addresses: httpx.NewBudget[netip.Prefix](every(addressEvery), addressBurst),
		networks:  httpx.NewBudget[netip.Prefix](every(networkEvery), networkBurst)}
}

// hash is the key of an email, as PostgreSQL's throttle compares them.
func (b *signInBudgets) hash(email string) uint64 {
	return maphash.String(b.seed, domain.NormalizeEmail(email))
}

// signInTicket is an attempt's tokens, taken by take and settled by its
// outcome.
type signInTicket struct {
	b       *signInBudgets
	account accountAt
	client  netip.Prefix
	network netip.Prefix // invalid for IPv4
}

// take takes a token of the account at client, then of client and of its
// /48. Past a budget it takes none and answers the refusal to show (which
// names the account or the address) and how long to wait.
func (b *signInBudgets) take(email string, client netip.Prefix, now time.Time) (t signInTicket, refusal string, wait time.Duration) {
	t = signInTicket{b: b, account: accountAt{b.hash(email), client}, client: client}
	t.network, _ = httpx.ClientNetwork(client)
	// Looked at before any is taken, so that a refused attempt creates no
	// key: a flood of made-up emails past its address's budget cannot push
	// the accounts under attack out of the table.
	if over, wait := b.accounts.Exhausted(t.account, now); over {
		return t, accountRefusal, wait
	}
	if over, wait := b.addresses.Exhausted(client, now); over {
		return t, addressRefusal, wait
	}
	if t.network.IsValid() {
		if over, wait := b.networks.Exhausted(t.network, now); over {
			return t, networkRefusal, wait
		}
	}
	// Concurrent attempts may have taken the last token since.
	if ok, wait := b.accounts.Take(t.account, now); !ok {
		return t, accountRefusal, wait
	}
	if ok, wait := b.addresses.Take(client, now); !ok {
		b.accounts.Give(t.account, now)
		return t, addressRefusal, wait
	}
	if t.network.IsValid() {
		if ok, wait := b.networks.Take(t.network, now); !ok {
			b.accounts.Give(t.account, now)
			b.addresses.Give(client, now)
			return t, networkRefusal, wait
		}
	}
	return t, "", 0
}

// The refusals of take, each followed by how long to wait.
const (
	accountRefusal = "Too many failed sign-ins for this account from your network address."
	addressRefusal = "Too many failed sign-ins from your network address."
	networkRefusal = "Too many failed sign-ins from your network."
)

// settle gives back the tokens the attempt's outcome (Authenticate's
// error) did not spend. A success spends none and clears the account's
// budget at the address, as PostgreSQL clears its checks. A refusal for
// the account (its checks in PostgreSQL) spends only the account's, so
// that an attack on one account leaves its address's budget to the
// others; a refusal for the address only the address's. An attempt that
// found no place to check the password spends none. Anything else (a
// wrong password, an unknown account, an error) spends them all.
func (t signInTicket) settle(err error, now time.Time) {
	account, address := true, true
	switch {
	case err == nil:
		t.b.accounts.Forget(t.account)
		account, address = false, false
	case errors.Is(err, domain.ErrSignInThrottledAccount):
		address = false
	case errors.Is(err, domain.ErrSignInThrottledAddress):
		account = false
	case errors.Is(err, domain.ErrSignInBusy):
		account, address = false, false
	}
	if !account {
		t.b.accounts.Give(t.account, now)
	}
	if !address {
		t.b.addresses.Give(t.client, now)
		if t.network.IsValid() {
			t.b.networks.Give(t.network, now)
		}
	}
}
