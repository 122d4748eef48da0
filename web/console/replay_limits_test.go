package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestConsoleLargeReplayNeedsConfirm (M7): above 10,000 deliveries the
// estimate asks for a confirmation, and the job starts only with it.
func TestConsoleLargeReplayNeedsConfirm(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	_, answer := e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{}`))
	e.Exec(`INSERT INTO deliveries (tenant_id, id, received_at, provider_id, status, signature, event_count, body, method,
            path, query, headers, client_address)
        SELECT tenant_id, gen_random_uuid(), received_at, provider_id, status, signature, event_count, body, method,
            path, query, headers, client_address
        FROM deliveries, generate_series(1, 10000) WHERE id = '` + answer["delivery_id"].(string) + `'`)
	status, doc := b.Get("/t/acme/replays?estimate=1&provider=crm")
	if status != http.StatusOK || doc.Find(`form.replay-confirm input[name=confirm]`).Length() != 1 {
		t.Fatalf("estimate page %d has no confirmation field", status)
	}
	form := url.Values{"provider": {"crm"}}
	_, _, loc := b.Post("/t/acme/replays", form)
	if _, doc = b.Get(loc); !strings.Contains(webtest.ShownFlash(doc), "10001 deliveries") {
		t.Fatalf("unconfirmed start: flash %q", webtest.ShownFlash(doc))
	}
	form.Set("confirm", "1")
	_, _, loc = b.Post("/t/acme/replays", form)
	if _, doc = b.Get(loc); !strings.Contains(webtest.ShownFlash(doc), "started for 10001 deliveries") {
		t.Fatalf("confirmed start: flash %q", webtest.ShownFlash(doc))
	}
}

// TestConsoleDeliveryReplaysPaged (M7): the inspector shows a page of
// replays and links to the pages around it.
func TestConsoleDeliveryReplaysPaged(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	token := e.Token("acme")
	_, answer := e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{}`))
	orig := answer["delivery_id"].(string)
	webtest.ReplayOutcome(e, token, orig)
	e.Exec(`INSERT INTO deliveries (tenant_id, id, received_at, provider_id, status, signature, event_count, replay_of,
            method, path, query, headers, client_address)
        SELECT tenant_id, gen_random_uuid(), received_at + g * interval '1 ms', provider_id, status, signature, event_count,
            replay_of, method, path, query, headers, client_address
        FROM deliveries, generate_series(1, 59) AS g WHERE replay_of = '` + orig + `'`)
	// 60 replays, 20 a page, newest first, paged both ways.
	_, doc := b.Get("/t/acme/deliveries/" + orig)
	older, _ := doc.Find(".delivery-replays .pager a[rel=next]").Attr("href")
	if n := doc.Find("table.replays-of tbody tr").Length(); n != 20 || older == "" {
		t.Fatalf("inspector lists %d replays, link %q", n, older)
	}
	for range 2 {
		_, doc = b.Get(older)
		older, _ = doc.Find(".delivery-replays .pager a[rel=next]").Attr("href")
	}
	if n := doc.Find("table.replays-of tbody tr").Length(); n != 20 || older != "" || doc.Find(".delivery-replays .pager a[rel=prev]").Length() != 1 {
		t.Fatalf("last page lists %d replays, older %q", n, older)
	}
	newer, _ := doc.Find(".delivery-replays .pager a[rel=prev]").Attr("href")
	if _, doc = b.Get(newer); doc.Find("table.replays-of tbody tr").Length() != 20 {
		t.Fatalf("newer page lists %d replays", doc.Find("table.replays-of tbody tr").Length())
	}
}
