package api_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// sfSession is a Salesforce session id as "Send Session ID" puts it in an
// outbound message: a live API session of the sending user.
const sfSession = "00D5e000000AbCd!AQ4AQFakeSessionIdThatMustNotBeStored.x9"

// withSession is the contact fixture carrying sfSession.
func withSession(t *testing.T) []byte {
	return bytes.Replace(webtest.SfFixture(t, "contact.xml"), []byte(`<SessionId xsi:nil="true"/>`),
		[]byte(`<SessionId>`+sfSession+`</SessionId>`), 1)
}

// TestSessionIdNotStored (review 3, M2): a Salesforce outbound message's
// SessionId is blanked before the body is stored: neither the delivery
// log nor the inspector's answer to a read-only token holds it, and the
// stored body still replays to the same events.
func TestSessionIdNotStored(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	sf := webtest.SfProvider(e, "sf", nil)
	sf.Acked(withSession(t))
	const eventID = webtest.SfOrg + ":04l5e00000ZzYxWAAV"
	if got := webtest.SfOutcomes(e, eventID); strings.Join(got, ",") != "applied" {
		t.Fatalf("outcomes %v, want applied", got)
	}

	var stored string
	if err := e.Store.Pool().QueryRow(context.Background(), `SELECT convert_from(body, 'UTF8') FROM deliveries`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stored, "AQ4AQFake") || !strings.Contains(stored, "<SessionId></SessionId>") {
		t.Fatalf("stored body keeps the session id or lost the element:\n%s", stored)
	}
	if n := webtest.SfCount(e, `SELECT count(*) FROM events WHERE position('AQ4AQFake' in convert_from(payload, 'UTF8')) > 0`); n != 0 {
		t.Fatalf("%d event payloads hold the session id", n)
	}

	reader := e.TokenWith("acme", domain.NewAPIToken{Name: "bi", Access: domain.TokenRead})
	d, raw := e.LatestDelivery(reader, "sf")
	if strings.Contains(raw, "AQ4AQFake") || !strings.Contains(d["body"].(string), "<SessionId></SessionId>") {
		t.Fatalf("the inspector shows a read-only token the session id: %s", raw)
	}

	// The stored body replays as the message did: the same event, found
	// a duplicate.
	status, replayed := webtest.ReplayAPI(e, e.Token("acme"), d["id"].(string))
	if got := webtest.Outcome(t, status, replayed); got != "duplicate" {
		t.Fatalf("replay outcome %s, want duplicate", got)
	}
	if got := webtest.SfOutcomes(e, eventID); strings.Join(got, ",") != "applied,duplicate" {
		t.Fatalf("outcomes %v, want applied then duplicate", got)
	}
}

// TestInspectorRedactsCommonCredentialNames (review 3, L5): headers and
// query parameters named like credentials that no kind declares are
// redacted by the generic rule.
func TestInspectorRedactsCommonCredentialNames(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	sf := webtest.SfProvider(e, "sf", nil)
	const secret = "abcdefghijklmnopqrstuvwxyz0123456789"
	u := sf.E.Srv.URL + "/webhooks/acme/sf?token=" + url.QueryEscape(sf.Token) + "&sig=" + secret + "&page=2"
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(webtest.SfFixture(t, "contact.xml")))
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	req.Header.Set("X-Auth-Key", secret)
	req.Header.Set("X-Session", secret)
	req.Header.Set("X-Request-Id", "req-42")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("delivery answered %d", resp.StatusCode)
	}
	d, raw := e.LatestDelivery(token, "sf")
	if strings.Contains(raw, secret) {
		t.Fatalf("the answer holds a credential whole: %s", raw)
	}
	headers := d["headers"].(map[string]any)
	assertJSON(t, "X-Auth-Key", headers["X-Auth-Key"], `["abcd…"]`)
	assertJSON(t, "X-Session", headers["X-Session"], `["abcd…"]`)
	assertJSON(t, "X-Request-Id", headers["X-Request-Id"], `["req-42"]`)
	if q, _ := d["query"].(string); !strings.Contains(q, "sig=abcd…") && !strings.Contains(q, "sig="+url.QueryEscape("abcd…")) ||
		!strings.Contains(q, "page=2") {
		t.Fatalf("query %q, want sig redacted and page kept", q)
	}
}
