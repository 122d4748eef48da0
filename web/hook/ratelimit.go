package hook

import (
	"net/netip"
	"time"

	"github.com/tidemark/tidemark/web/httpx"
)

// RefusalLimits bound how fast refused deliveries are answered with their
// own status; past them the answer is 429 with Retry-After. Only refusals
// use the budgets: an accepted delivery never does. Zero fields take the
// defaults (docs/contract/webhooks.md#refusal-budgets).
type RefusalLimits struct {
	// PerAddress: refusals a second from one client address (IPv6: one
	// /64) to one endpoint, or to unknown names; default 20.
	PerAddress   float64
	AddressBurst int     // default 40
	PerProvider  float64 // refusals a second for one provider, from all addresses; default 100
	// ProviderBurst defaults to 200.
	ProviderBurst int
}

func (l RefusalLimits) withDefaults() RefusalLimits {
	if l.PerAddress <= 0 {
		l.PerAddress = 20
	}
	if l.AddressBurst <= 0 {
		l.AddressBurst = 40
	}
	if l.PerProvider <= 0 {
		l.PerProvider = 100
	}
	if l.ProviderBurst <= 0 {
		l.ProviderBurst = 200
	}
	return l
}

// addressKey is an address's budget for one endpoint; provider 0 is its
// budget for unknown names. Providers send every tenant's webhooks from
// the same few addresses, so one tenant's refusals must not spend the
// budget of another's endpoint.
type addressKey struct {
	addr     netip.Prefix
	provider int64
}

// refusalLimiter holds the per-address and per-provider budgets.
type refusalLimiter struct {
	addresses *httpx.Budget[addressKey]
	providers *httpx.Budget[int64]
}

func newRefusalLimiter(l RefusalLimits) *refusalLimiter {
	l = l.withDefaults()
	return &refusalLimiter{addresses: httpx.NewBudget[addressKey](l.PerAddress, l.AddressBurst),
		providers: httpx.NewBudget[int64](l.PerProvider, l.ProviderBurst)}
}

// refuse spends one refusal of the address for the provider (0: an
// unknown name) and, when known, of the provider. It reports which budget
// ran out, if one did, and when to retry. Only requests already refused
// call it: a delivery that authenticates never spends or meets a budget.
func (rl *refusalLimiter) refuse(addr netip.Prefix, providerID int64, now time.Time) (over string, wait time.Duration) {
	if ok, wait := rl.addresses.Take(addressKey{addr, providerID}, now); !ok {
		return "address", wait
	}
	if providerID == 0 {
		return "", 0
	}
	if ok, wait := rl.providers.Take(providerID, now); !ok {
		return "provider", wait
	}
	return "", 0
}
