package hook_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestShortBurstsOnASlowDatabaseAreNot503: 16, then 64, valid deliveries of
// one tenant, each sent at the same moment to both of two nodes on one
// database, while another connection holds for 500 ms a lock that every
// lookup and write of theirs needs (as a checkpoint, another node's row
// lock or a cold plan would slow them): none is answered 503, and each is
// applied once. With the gate's former 250 ms wait for a lookup slot, most
// were refused.
func TestShortBurstsOnASlowDatabaseAreNot503(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	a, _ := serverOn(e, 10, web.Config{})
	b, _ := serverOn(e, 10, web.Config{})
	client := clientAt(t, "127.0.0.5", 256)
	ctx := context.Background()
	for _, n := range []int{16, 64} {
		name := fmt.Sprintf("burst%d", n)
		secret := e.Provider("acme", name) // new: in neither node's endpoint cache
		lock, err := e.Store.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lock.Exec(ctx, `LOCK TABLE providers IN ACCESS EXCLUSIVE MODE`); err != nil {
			t.Fatal(err)
		}
		var statuses tally
		var wg sync.WaitGroup
		for i := range n {
			id := fmt.Sprintf("%s-%d", name, i)
			body := webtest.SnapshotBody("c-"+id, 1, `{"a":1}`)
			for _, node := range []*webtest.Env{a, b} {
				wg.Go(func() { statuses.add(send(t, client, signedTo(t, node.Srv.URL, "acme", name, secret, id, body))) })
			}
		}
		time.Sleep(500 * time.Millisecond)
		if err := lock.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if got := statuses.n(http.StatusOK); got != 2*n {
			t.Fatalf("%d deliveries at each node: %d answered 200, want %d (answers by status: %v)", n, got, 2*n, statuses.m)
		}
		var applied, duplicate int
		err = e.Store.Pool().QueryRow(ctx, `
SELECT count(*) FILTER (WHERE e.outcome = 'applied'), count(*) FILTER (WHERE e.outcome = 'duplicate')
FROM events e JOIN providers p ON p.tenant_id = e.tenant_id AND p.id = e.provider_id WHERE p.name = $1`, name).Scan(&applied, &duplicate)
		if err != nil {
			t.Fatal(err)
		}
		if applied != n || duplicate != n {
			t.Fatalf("%d deliveries sent to both nodes: %d applied and %d duplicate, want %d of each", n, applied, duplicate, n)
		}
	}
}
