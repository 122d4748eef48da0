package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestReplayRefersToOriginalBody (M7): replays store no copy of the
// original's body, yet the inspector shows each replay with it.
func TestReplayRefersToOriginalBody(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	big := `{"job_title":"` + strings.Repeat("x", 900<<10) + `"}`
	_, answer := e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, big))
	orig := answer["delivery_id"].(string)
	o, _ := e.DeliveryJSON(token, orig)
	var ids []string
	for range 20 {
		status, replayed := webtest.ReplayAPI(e, token, orig)
		if got := webtest.Outcome(t, status, replayed); got != "duplicate" {
			t.Fatalf("replay outcome %s", got)
		}
		ids = append(ids, replayed["delivery_id"].(string))
	}
	var stored int64
	if err := e.Store.Pool().QueryRow(context.Background(),
		`SELECT coalesce(sum(octet_length(body)), 0) FROM deliveries WHERE replay_of IS NOT NULL`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 0 {
		t.Fatalf("replays stored %d bytes of bodies, want none", stored)
	}
	for _, id := range ids[:2] {
		d, _ := e.DeliveryJSON(token, id)
		if d["body"] != o["body"] || d["replay_of"] != orig {
			t.Fatalf("replay %s shows body of %d bytes, want the original's", id, len(d["body"].(string)))
		}
	}
}
