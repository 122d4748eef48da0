package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestSvixNamedDelivery: a standard provider accepts a
// delivery signed under the svix-* header names, keeps svix-signature
// redacted, and replays it under its svix-id.
func TestSvixNamedDelivery(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	body := webtest.SnapshotBody("c-1", 1, `{"job_title":"CTO"}`)
	ts := time.Now().Unix()
	sig, err := provider.SignStandard(e.Secret, "msg_svix_1", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	status, answer := e.Post("/webhooks/acme/crm", body, map[string]string{
		"svix-id": "msg_svix_1", "svix-timestamp": strconv.FormatInt(ts, 10), "svix-signature": sig})
	if got := webtest.Outcome(t, status, answer); got != "applied" {
		t.Fatalf("outcome %s, want applied", got)
	}
	assertJSON(t, "event id", answer["results"].([]any)[0].(map[string]any)["event_id"], `"msg_svix_1"`)

	d, raw := e.DeliveryJSON(token, answer["delivery_id"].(string))
	if strings.Contains(raw, sig[4:]) {
		t.Fatalf("the answer holds svix-signature whole: %s", raw)
	}
	headers := d["headers"].(map[string]any)
	assertJSON(t, "svix-id", headers["Svix-Id"], `["msg_svix_1"]`)
	if got, _ := headers["Svix-Signature"].([]any); len(got) != 1 || got[0] != sig[:4]+"…" {
		t.Fatalf("Svix-Signature kept as %v", headers["Svix-Signature"])
	}
	if got := webtest.ReplayOutcome(e, token, answer["delivery_id"].(string)); got != "duplicate" {
		t.Fatalf("replay: %s, want duplicate", got)
	}

	// A wrong signature under those names is refused as under the others.
	status, refused := e.Post("/webhooks/acme/crm", body, map[string]string{
		"svix-id": "msg_svix_2", "svix-timestamp": strconv.FormatInt(ts, 10), "svix-signature": "v1,Zm9yZ2Vk"})
	webtest.AssertError(t, status, refused, http.StatusUnauthorized, "no svix-signature matches")
}
