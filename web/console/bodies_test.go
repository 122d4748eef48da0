package console_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestConsoleShowsNoSessionId (review 3, M2): a viewer's delivery page
// shows a Salesforce outbound message without the SessionId it carried.
func TestConsoleShowsNoSessionId(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	sf := webtest.SfProvider(e, "sf", nil)
	sf.Acked(bytes.Replace(webtest.SfFixture(t, "contact.xml"), []byte(`<SessionId xsi:nil="true"/>`),
		[]byte(`<SessionId>00D5e000000AbCd!AQ4AQFakeSessionId</SessionId>`), 1))
	d, _ := e.LatestDelivery(e.Token("acme"), "sf")
	b := e.WithRole("viewer@example.com", domain.RoleViewer)
	status, doc := b.Get("/t/acme/deliveries/" + d["id"].(string))
	if status != http.StatusOK {
		t.Fatalf("inspector: %d", status)
	}
	page, _ := doc.Html()
	if body := webtest.Text(doc, "pre.delivery-body"); !strings.Contains(body, "<SessionId></SessionId>") || strings.Contains(page, "AQ4AQFake") {
		t.Fatalf("the page shows the session id, or no body: %s", body)
	}
}
