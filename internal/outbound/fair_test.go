package outbound_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/stream"
)

// TestOneTenantCannotHoldEverySlot: a tenant whose 130 destinations all
// have changes to send and never succeed holds at most its share of a
// node's slots, so another tenant's destination created after them is
// delivered within seconds; and a destination with nothing to send holds
// no slot at all.
func TestOneTenantCannotHoldEverySlot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var failed atomic.Int64
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		failed.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(failing.Close)
	raiseDestinationLimit(t, e, 130)
	for range 130 {
		e.destination(t, stream.NewDestination{URL: failing.URL, AllowPrivate: true, MaxInFlight: 1})
	}
	e.ingest(t, "a", 1)
	other := e.tenant(t, "globex")
	rc := newReceiver(t)
	other.httpDestination(t, rc, 1)
	other.httpDestination(t, newReceiver(t), 1)
	e.run(t, fast())
	waitFor(t, 10*time.Second, "acme's destinations sending", func() bool { return failed.Load() >= 16 })
	other.ingest(t, "b", 1)
	waitFor(t, 10*time.Second, "globex's change delivered while acme's 130 destinations fail", func() bool {
		_, delivered, _ := rc.got()
		return len(delivered) == 1
	})
	var acmes int
	if err := e.store.Pool().QueryRow(t.Context(), `SELECT count(*) FROM destinations
		WHERE tenant_id = $1 AND lease_owner IS NOT NULL AND lease_until > now()`, e.p.TenantID).Scan(&acmes); err != nil {
		t.Fatal(err)
	}
	if acmes > 16 {
		t.Errorf("acme holds %d leases of the node's 64, want at most its share, 16", acmes)
	}
	// Both of globex's destinations had the change to send, sent it, and
	// give their leases back once idle.
	waitFor(t, 10*time.Second, "globex's idle destinations give their leases back", func() bool {
		var held int
		e.store.Pool().QueryRow(t.Context(), `SELECT count(*) FROM destinations WHERE tenant_id = $1 AND lease_owner IS NOT NULL`,
			other.p.TenantID).Scan(&held)
		return held == 0
	})
}
