package views_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

func TestDeliveryView(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	base := domain.DeliveryDetail{
		DeliveryBrief: domain.DeliveryBrief{ID: "0190-d1", Provider: "crm", ReceivedAt: at, Status: 200,
			Signature: domain.SignatureValid, EventCount: 1},
		TenantSlug: "acme", ProviderKind: "standard",
		Request: domain.Request{Method: "POST", Path: "/webhooks/acme/crm", Query: "a=" + hostile,
			Headers: map[string][]string{"Webhook-Signature": {"v1,a…"}, "X-Hostile": {hostile}}, ClientAddress: "192.0.2.7"},
		Events: []domain.DeliveryEvent{{EventID: "m1", ObjectType: "contact", Action: "snapshot", ObjectID: "c-1",
			Outcome: domain.Rejected, Reason: hostile}},
	}
	for _, tc := range []struct {
		name          string
		body          []byte
		notReplayable string
		wantBody      string // the text of the body shown; "" for none
	}{
		{"JSON body indented", []byte(`{"a":"</script><script>x</script>"}`), "", "{\n  \"a\": \"</script><script>x</script>\"\n}"},
		{"binary body as base64", []byte{0xff, 0xfe, 0}, "", base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe, 0})},
		{"body not kept", nil, "its body was not kept", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := base
			d.Body = tc.body
			doc, html := render(t, views.DeliveryView(acme("events"), views.DeliveryPage{Delivery: d, NotReplayable: tc.notReplayable}))
			if doc.Find("script:not([src])").Length() != 0 || strings.Contains(html, hostile) || strings.Contains(html, "<script>x") {
				t.Error("a delivery's content became markup")
			}
			if got := doc.Find("pre.delivery-body").Text(); got != tc.wantBody {
				t.Errorf("body %q, want %q", got, tc.wantBody)
			}
			if (doc.Find("p.body-not-kept").Length() == 1) != (tc.body == nil) {
				t.Error("the page does not say whether the body was kept")
			}
			if (doc.Find("form.replay-form").Length() == 1) != (tc.notReplayable == "") {
				t.Error("the replay button is shown when it cannot replay, or hidden when it can")
			}
			if got := text(doc, "p.request-line"); got != "POST /webhooks/acme/crm?a="+hostile {
				t.Errorf("request line %q", got)
			}
			if got := seen(doc.Find("table.headers tbody")); got != "Webhook-Signature v1,a… X-Hostile "+hostile {
				t.Errorf("headers %q", got)
			}
			if href := doc.Find("table.delivery-events a.event-link").AttrOr("href", ""); href != "/t/acme/events/0190-d1/0" {
				t.Errorf("event link %q", href)
			}
		})
	}
}

func TestReplayJobLivePolls(t *testing.T) {
	t.Parallel()
	for _, status := range []string{domain.ReplayQueued, domain.ReplayRunning, domain.ReplayDone, domain.ReplayCancelled, domain.ReplayFailed} {
		job := domain.ReplayJob{ID: 4, Status: status, Total: 10, Done: 4, Counts: map[string]int64{"applied": 3, "unparsable": 1}}
		doc, _ := render(t, views.ReplayJobLive(acme("replays"), views.ReplayJobPage{Job: job}))
		active := status == domain.ReplayQueued || status == domain.ReplayRunning
		if got := doc.Find(`#replay-progress[hx-get="/t/acme/replays/4"]`).Length() == 1; got != active {
			t.Errorf("%s: polls = %v", status, got)
		}
		if got := doc.Find(`form[action="/t/acme/replays/4/cancel"]`).Length() == 1; got != active {
			t.Errorf("%s: cancel button = %v", status, got)
		}
		if got := doc.Find("progress").AttrOr("value", ""); got != "40" {
			t.Errorf("%s: progress %q", status, got)
		}
		if got := text(doc, `td[data-count="unparsable"]`); got != "1" {
			t.Errorf("%s: unparsable count %q", status, got)
		}
	}
}

// TestReplayFormsNeedOperator: a viewer sees deliveries and jobs but no
// form that replays or cancels.
func TestReplayFormsNeedOperator(t *testing.T) {
	t.Parallel()
	d := domain.DeliveryDetail{DeliveryBrief: domain.DeliveryBrief{ID: "0190-d1", Status: 200, Signature: domain.SignatureValid},
		Request: domain.Request{Method: "POST"}, Body: []byte(`{}`)}
	job := domain.ReplayJob{ID: 4, Status: domain.ReplayRunning, Total: 10}
	for _, role := range []domain.Role{domain.RoleViewer, domain.RoleOperator, domain.RoleOwner} {
		l := acmeAs("events", role)
		doc, _ := render(t, views.DeliveryView(l, views.DeliveryPage{Delivery: d}))
		jobDoc, _ := render(t, views.ReplayJobLive(l, views.ReplayJobPage{Job: job}))
		estimate, _ := render(t, views.ReplaysView(l, views.ReplaysPage{Estimated: true, Estimate: 3}))
		want := role != domain.RoleViewer
		if got := doc.Find("form.replay-form").Length() == 1; got != want {
			t.Errorf("%s: replay button %v", role, got)
		}
		if got := jobDoc.Find(`form[action$="/cancel"]`).Length() == 1; got != want {
			t.Errorf("%s: cancel button %v", role, got)
		}
		if got := estimate.Find("form.replay-confirm").Length() == 1; got != want {
			t.Errorf("%s: confirm button %v", role, got)
		}
	}
}

// TestDeliveryViewAppBatch: a delivery of an app's URL says that it is
// this workspace's part of the app's batch, naming the portal its events
// came from; a provider URL's says nothing of apps.
func TestDeliveryViewAppBatch(t *testing.T) {
	t.Parallel()
	d := domain.DeliveryDetail{
		DeliveryBrief: domain.DeliveryBrief{ID: "0190-d2", Provider: "hubspot", ReceivedAt: time.Now(), Status: 200,
			Signature: domain.SignatureValid, EventCount: 1},
		TenantSlug: "acme", Request: domain.Request{Method: "POST", Path: "/webhooks/apps/crm-app"},
		Body: []byte(`[{"portalId":62515,"objectId":1,"subscriptionType":"contact.creation"}]`),
	}
	doc, _ := render(t, views.DeliveryView(acme("events"), views.DeliveryPage{Delivery: d}))
	if got := text(doc, "td.app-batch"); !strings.Contains(got, "app crm-app") || !strings.Contains(got, "portal 62515's events alone") {
		t.Errorf("app batch row %q, want app crm-app and portal 62515", got)
	}
	d.Request.Path = "/webhooks/acme/hubspot"
	if doc, _ := render(t, views.DeliveryView(acme("events"), views.DeliveryPage{Delivery: d})); doc.Find("td.app-batch").Length() != 0 {
		t.Error("a provider URL's delivery is shown as part of an app batch")
	}
}
