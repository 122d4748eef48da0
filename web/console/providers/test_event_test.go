package providers

import (
	"net/http"
	"testing"
)

// TestTestEventMessage: the flash after "Send test event" says the outcome
// and the record in words, and a refusal its reason, never the raw JSON.
func TestTestEventMessage(t *testing.T) {
	for _, tc := range []struct {
		status int
		answer string
		want   string
	}{
		{http.StatusOK, `{"delivery_id":"d1","results":[{"event_id":"e1","outcome":"applied","contact_id":"tidemark-test","revision":12,"current_revision":12}]}`,
			"Test event sent: applied (contact tidemark-test, revision 12)."},
		{http.StatusOK, `{"delivery_id":"d1","results":[{"outcome":"revision_conflict","contact_id":"c-1","revision":3,"reason":"same revision, other snapshot"}]}`,
			"Test event sent: revision conflict (contact c-1, revision 3): same revision, other snapshot."},
		{http.StatusOK, `{"results":[{"outcome":"applied","object_type":"lead","object_id":"a@example.com"},{"outcome":"duplicate","object_type":"lead","object_id":"a@example.com"}]}`,
			"Test event sent: applied (lead a@example.com); duplicate (lead a@example.com)."},
		{http.StatusAccepted, `{"delivery_id":"d1","queued":true}`,
			"Test event queued: a worker applies it shortly; its outcome shows in the recent deliveries."},
		{http.StatusUnauthorized, `{"error":"invalid signature"}`, "Test event refused: 401 Unauthorized: invalid signature"},
		{http.StatusBadGateway, "upstream down\n", "Test event refused: 502 Bad Gateway: upstream down"},
	} {
		if got := testEventMessage(tc.status, []byte(tc.answer)); got != tc.want {
			t.Errorf("%d %s:\n got %q\nwant %q", tc.status, tc.answer, got, tc.want)
		}
	}
}
