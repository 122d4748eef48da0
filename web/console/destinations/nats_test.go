package destinations_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestOwnerCreatesNATSDestination: the form takes a NATS destination's
// credentials, requires them (review 4's M6: the console could only make a
// NATS destination that connected to a server admitting anyone), and never
// shows them back, not even in a refused form.
func TestOwnerCreatesNATSDestination(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	owner := e.Operator("owner@example.com", false, "acme")
	user, _ := nkeys.CreateUser()
	seed, _ := user.Seed()
	nats := url.Values{"nats_url": {"nats://203.0.113.11:4222"}, "subject": {"crm.changes"}, "max_in_flight": {"8"}}
	with := func(k, v string) url.Values {
		f := url.Values{}
		for key, vs := range nats {
			f[key] = vs
		}
		f.Set(k, v)
		return f
	}

	for _, tc := range []struct {
		form url.Values
		says string
	}{
		{nats, "nats_url needs credentials"},
		{with("nats_nkey", "SUNOTASEED"), "nats_nkey is not a user nkey seed"},
		{with("nats_creds", string(seed)), "nats_creds: its user JWT does not decode"},
	} {
		status, doc, _ := owner.Post("/t/acme/destinations", tc.form)
		alert := webtest.Text(doc, ".dest-new [role=alert]")
		if status != http.StatusUnprocessableEntity || !strings.Contains(alert, tc.says) {
			t.Errorf("create %v: %d %q, want 422 saying %q", tc.form, status, alert, tc.says)
		}
		if html, _ := doc.Html(); strings.Contains(html, string(seed)) {
			t.Error("the refused form shows the seed back")
		}
	}
	if ds := destinations(t, e, "acme"); len(ds) != 0 {
		t.Fatalf("refused creates stored %d destinations", len(ds))
	}

	status, doc, _ := owner.Post("/t/acme/destinations", with("nats_nkey", string(seed)))
	if status != http.StatusOK || !strings.HasPrefix(webtest.Text(doc, "#destination-secret"), "whsec_") {
		t.Fatalf("create with an nkey seed: %d %q", status, webtest.Text(doc, ".dest-new [role=alert]"))
	}
	if html, _ := doc.Html(); strings.Contains(html, string(seed)) {
		t.Fatal("the page shows the seed")
	}
	if ds := destinations(t, e, "acme"); len(ds) != 1 || ds[0].NATSAuth != stream.NATSAuthNKey || ds[0].AllowPrivate {
		t.Fatalf("stored %+v", ds)
	}
}
