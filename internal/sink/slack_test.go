package sink_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/whsig"
)

// TestSlackSendsAlertText: an alert event as one line of text, Slack's
// markup escaped, signed like a webhook's message; a change is not sent.
func TestSlackSendsAlertText(t *testing.T) {
	t.Parallel()
	secret := whsig.NewSecret()
	srv, got := receiver(t, http.StatusOK, "")
	d := stream.LeasedDestination{TenantID: 7, ID: 2, TenantSlug: "acme", Kind: "slack", URL: srv.URL + "/services/T/B/X",
		AllowPrivate: true, Format: stream.FormatSlack, Secrets: []string{secret}}
	c := conns(t)
	if a := c.Send(context.Background(), d, alert); a.Status != http.StatusOK || a.Err != "" {
		t.Fatalf("%+v", a)
	}
	r := <-got
	if want := `{"text":":rotating_light: Tidemark acme: crm refused &lt;3&gt; &amp; more."}`; r.body != want {
		t.Errorf("body %s, want %s", r.body, want)
	}
	if err := whsig.Verify(secret, r.header, []byte(r.body), time.Now(), time.Minute); err != nil {
		t.Errorf("signature: %v", err)
	}
	if a := c.Send(context.Background(), d, change); a.Err != "not sent: a slack destination takes alert types only" {
		t.Errorf("a change: %+v", a)
	}
}
