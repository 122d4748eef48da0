package hook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/hook"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestRefusalBudgets: past its refusal budget for an endpoint an address's
// refusals are answered 429 with Retry-After, without a database read; its
// valid deliveries and other addresses are not;
// accepted deliveries never spend the budget, so they pass again once it
// refills and then leave it whole. Past a provider's budget its refusals
// are answered 429 from every address while its valid deliveries pass.
// Guessing tenant or provider names spends the address's budget too.
func TestRefusalBudgets(t *testing.T) {
	t.Parallel()
	e, pool := serverOn(webtest.Setup(t), 2, web.Config{RefusalLimits: hook.RefusalLimits{
		PerAddress: 0.5, AddressBurst: 5, PerProvider: 0.01, ProviderBurst: 10}})
	erp := e.Provider("acme", "erp")
	good := func(c *http.Client, provider, secret, id string) answer {
		return ask(t, c, signedTo(t, e.Srv.URL, "acme", provider, secret, id, webtest.SnapshotBody("c-"+id, 1, `{"a":1}`)))
	}

	attacker := clientAt(t, "127.0.0.2", 1)
	for i := range 5 {
		if a := ask(t, attacker, forged(e.Srv.URL, "acme", "crm", fmt.Sprint(i))); a.status != http.StatusUnauthorized {
			t.Fatalf("refusal %d within the budget answered %+v, want 401", i+1, a)
		}
	}
	a := ask(t, attacker, forged(e.Srv.URL, "acme", "crm", "6"))
	if a.status != http.StatusTooManyRequests || a.retryAfter < 1 || a.retryAfter > 2 || !strings.Contains(a.error, "from this address") {
		t.Fatalf("refusal past the address's budget answered %+v, want 429 with Retry-After of 1 or 2 s (its refill)", a)
	}
	wait := time.Duration(a.retryAfter) * time.Second

	// While it is over budget, its refusals are answered without a database
	// read (the endpoint is cached): with every connection held, a bad
	// signature is still an instant 429.
	// The notification of erp's creation may drop crm from the cache after
	// the refusals above (on a loaded machine): then the refusal waits for
	// a connection, and the check is made again after a valid delivery
	// from elsewhere cached crm again.
	// The budget refills a refusal every 2 s, so a loaded machine's pause
	// between tries could let one through as 401: each try spends it again.
	var held []interface{ Release() }
	spent := 0 // the 429s that spent it again
	for try := 1; ; try++ {
		spent++
		for i := 0; ask(t, attacker, forged(e.Srv.URL, "acme", "crm", fmt.Sprint("spend-", try, "-", i))).status != http.StatusTooManyRequests; i++ {
			if i == 3 {
				t.Fatal("refusals past the address's budget were not answered 429")
			}
		}
		held = held[:0]
		for range 2 {
			c, err := pool.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		began := time.Now()
		a = ask(t, attacker, forged(e.Srv.URL, "acme", "crm", fmt.Sprint("during-", try)))
		took := time.Since(began)
		for _, c := range held {
			c.Release()
		}
		if a.status == http.StatusTooManyRequests && took <= time.Second {
			break
		}
		if a.status != http.StatusServiceUnavailable || try == 3 {
			t.Fatalf("refusal from an address over budget with the pool held: %+v after %v, want an instant 429", a, took)
		}
		if a := good(clientAt(t, "127.0.0.9", 1), "crm", e.Secret, fmt.Sprint("rewarm-", try)); a.status != http.StatusOK {
			t.Fatalf("valid delivery answered %+v", a)
		}
	}
	// A valid delivery from it is not refused for the others' refusals.
	if a := good(attacker, "crm", e.Secret, "during"); a.status != http.StatusOK {
		t.Fatalf("valid delivery from an address over its refusal budget answered %+v, want 200", a)
	}

	if a := ask(t, clientAt(t, "127.0.0.3", 1), forged(e.Srv.URL, "acme", "crm", "other")); a.status != http.StatusUnauthorized {
		t.Fatalf("refusal from another address answered %+v, want 401", a)
	}

	// Once the budget refills, valid deliveries pass, more of them than the
	// budget holds, and spend none of it.
	time.Sleep(wait)
	for i := range 12 {
		if a := good(attacker, "crm", e.Secret, fmt.Sprint("after-", i)); a.status != http.StatusOK {
			t.Fatalf("valid delivery %d after the budget refilled answered %+v, want 200", i+1, a)
		}
	}
	if a := ask(t, attacker, forged(e.Srv.URL, "acme", "crm", "again")); a.status != http.StatusUnauthorized {
		t.Fatalf("a refusal after valid deliveries answered %+v, want 401 (valid deliveries spend no budget)", a)
	}

	// erp's budget (10) is spent from ten addresses; the eleventh refusal is
	// answered 429 though its address has budget left.
	for i := range 10 {
		if a := ask(t, clientAt(t, fmt.Sprintf("127.0.3.%d", i+1), 1), forged(e.Srv.URL, "acme", "erp", fmt.Sprint(i))); a.status != http.StatusUnauthorized {
			t.Fatalf("erp refusal %d answered %+v, want 401", i+1, a)
		}
	}
	eleventh := clientAt(t, "127.0.3.11", 1)
	a = ask(t, eleventh, forged(e.Srv.URL, "acme", "erp", "11"))
	if a.status != http.StatusTooManyRequests || a.retryAfter < 2 || !strings.Contains(a.error, "for this provider") {
		t.Fatalf("refusal past erp's budget answered %+v, want 429 naming the provider, Retry-After of its refill", a)
	}
	if a := good(eleventh, "erp", erp, "valid"); a.status != http.StatusOK {
		t.Fatalf("valid erp delivery while erp is over its refusal budget answered %+v, want 200", a)
	}

	// Guessing names spends the address's budget.
	scanner := clientAt(t, "127.0.0.9", 1)
	for i := range 5 {
		if a := ask(t, scanner, forged(e.Srv.URL, "acme", fmt.Sprint("guess-", i), "x")); a.status != http.StatusNotFound {
			t.Fatalf("unknown provider %d answered %+v, want 404", i+1, a)
		}
	}
	if a := ask(t, scanner, forged(e.Srv.URL, "acme", "guess-6", "x")); a.status != http.StatusTooManyRequests {
		t.Fatalf("sixth unknown provider answered %+v, want 429", a)
	}
	// Past that budget its made-up names cost no query (an instant 429 with
	// the pool held), while a cached endpoint still authenticates.
	held = held[:0]
	for range 2 {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	began := time.Now()
	a = ask(t, scanner, forged(e.Srv.URL, fmt.Sprint("tenant-", time.Now().UnixNano()), "crm", "x"))
	for _, c := range held {
		c.Release()
	}
	if a.status != http.StatusTooManyRequests || time.Since(began) > time.Second {
		t.Fatalf("a made-up tenant from an address past its budget with the pool held: %+v after %v, want an instant 429", a, time.Since(began))
	}
	// A notification of an earlier change may drop crm from the cache
	// between two deliveries: the warm-up is retried.
	warm, retried := clientAt(t, "127.0.0.8", 1), 0
	for try := 1; ; try++ {
		if a := good(warm, "crm", e.Secret, fmt.Sprint("warm-", try)); a.status != http.StatusOK { // crm is cached
			t.Fatalf("valid delivery answered %+v", a)
		}
		a := good(scanner, "crm", e.Secret, fmt.Sprint("scanner-valid-", try))
		if a.status == http.StatusOK {
			break
		}
		if try == 5 {
			t.Fatalf("valid delivery from an address past its budget for unknown names answered %+v, want 200", a)
		}
		retried++
	}

	resp, err := http.Get(e.Srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{fmt.Sprintf(`tidemark_refusals_limited_total{limit="address"} %d`, 4+spent+retried),
		`tidemark_refusals_limited_total{limit="provider"} 1`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// answer is what the receiver answered.
type answer struct {
	status     int
	retryAfter int // seconds; 0 when absent
	error      string
}

func ask(t *testing.T, c *http.Client, req *http.Request) answer {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&body)
	a := answer{status: resp.StatusCode, error: body.Error}
	a.retryAfter, _ = strconv.Atoi(resp.Header.Get("Retry-After"))
	return a
}

// TestSharedAddressRefusalsSpareValidDeliveries: providers send every
// tenant's webhooks from the same few addresses. From one address, acme's
// provider gets 500 bad signatures (a rotated secret) while globex's valid
// deliveries, and acme's own, come from the same address: every valid one
// is answered 200, the bad ones 401 or 429.
func TestSharedAddressRefusalsSpareValidDeliveries(t *testing.T) {
	t.Parallel()
	e, _ := serverOn(webtest.Setup(t), 4, web.Config{})
	globex := e.Provider("globex", "crm")
	shared := clientAt(t, "127.0.0.5", 8)
	const badN, goodN = 500, 40
	var bad, good sync.WaitGroup
	var mu sync.Mutex
	badStatus, goodStatus := map[int]int{}, map[int]int{}
	for w := range 4 {
		bad.Go(func() {
			for i := w; i < badN; i += 4 {
				a := ask(t, shared, forged(e.Srv.URL, "acme", "crm", fmt.Sprint("bad-", i)))
				mu.Lock()
				badStatus[a.status]++
				mu.Unlock()
			}
		})
	}
	for i := range goodN {
		good.Go(func() {
			tenant, secret := "globex", globex
			if i%2 == 1 {
				tenant, secret = "acme", e.Secret
			}
			id := fmt.Sprint("good-", i)
			a := ask(t, shared, signedTo(t, e.Srv.URL, tenant, "crm", secret, id, webtest.SnapshotBody("c-"+id, 1, `{"a":1}`)))
			mu.Lock()
			goodStatus[a.status]++
			mu.Unlock()
		})
		time.Sleep(5 * time.Millisecond)
	}
	good.Wait()
	bad.Wait()
	// acme's own valid deliveries after the flood, while its budget is spent.
	for i := range 5 {
		id := fmt.Sprint("after-", i)
		if a := ask(t, shared, signedTo(t, e.Srv.URL, "acme", "crm", e.Secret, id, webtest.SnapshotBody("c-"+id, 1, `{"a":1}`))); a.status != http.StatusOK {
			t.Fatalf("acme's valid delivery after the flood answered %+v, want 200", a)
		}
	}
	if goodStatus[http.StatusOK] != goodN {
		t.Fatalf("valid deliveries from the flooding address answered %v, want all %d 200", goodStatus, goodN)
	}
	if badStatus[http.StatusTooManyRequests] == 0 || badStatus[http.StatusUnauthorized]+badStatus[http.StatusTooManyRequests] != badN {
		t.Fatalf("bad signatures answered %v, want 401 then 429", badStatus)
	}
}
