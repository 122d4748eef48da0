package deliveries_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestInspectorAnswerReplaysAndCurl: the inspector shows the answer
// Tidemark sent, the processing time, the delivery's replays after one,
// and a curl command that resends the request without the secret, the
// signature or the authorization header.
func TestInspectorAnswerReplaysAndCurl(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	req := webtest.Signed(t, e.Srv.URL, e.Secret, "m1", webtest.SnapshotBody("c-1", 1, `{"job_title":"CTO"}`))
	req.Header.Set("Authorization", "Bearer topsecret-token-123456")
	signature := req.Header.Get("webhook-signature")
	status, answer := e.Do(req)
	if status != http.StatusOK {
		t.Fatalf("delivery: %d %v", status, answer)
	}
	id := answer["delivery_id"].(string)

	_, doc := b.Get("/t/acme/deliveries/" + id)
	if got := webtest.Text(doc, ".delivery-answer h2"); got != "Answer, rebuilt" || !strings.Contains(webtest.Text(doc, ".answer-rebuilt"), "Not the bytes sent") {
		t.Errorf("the answer panel is titled %q without saying plainly that it is rebuilt", got)
	}
	if got := webtest.Text(doc, ".delivery-answer .answer-line"); !strings.Contains(got, "200") || !strings.Contains(got, "application/json") {
		t.Errorf("answer line %q", got)
	}
	if got := webtest.Text(doc, "pre.answer-body"); !strings.Contains(got, `"delivery_id":"`+id+`"`) || !strings.Contains(got, `"outcome":"applied"`) {
		t.Errorf("answer body %q", got)
	}
	if got := webtest.Text(doc, "td.processing"); !strings.HasSuffix(strings.Fields(got)[1], "ms") && !strings.Contains(got, "s") {
		t.Errorf("processing time %q", got)
	}
	if got := webtest.Text(doc, "td.processing"); strings.Contains(got, "not measured") {
		t.Errorf("processing time not shown: %q", got)
	}
	curl := webtest.Text(doc, "pre.curl-text")
	if !strings.HasPrefix(curl, "curl -X POST '"+e.Srv.URL+"/webhooks/acme/crm'") || !strings.Contains(curl, "-H 'Webhook-Id: m1'") ||
		!strings.Contains(curl, "-H 'Webhook-Signature: <redacted>'") || !strings.Contains(curl, "-H 'Authorization: <redacted>'") ||
		!strings.Contains(curl, `--data-binary '{"type":"contact.snapshot"`) {
		t.Errorf("curl:\n%s", curl)
	}
	page, _ := doc.Html()
	for _, secret := range []string{e.Secret, signature, strings.TrimPrefix(signature, "v1,"), "topsecret-token-123456"} {
		if strings.Contains(curl, secret) || strings.Contains(page, secret) {
			t.Errorf("the page or its curl holds a secret %q", secret)
		}
	}
	if sig := strings.TrimPrefix(signature, "v1,"); strings.Contains(curl, sig[:4]) {
		t.Errorf("the curl holds the start of the signature %q", sig[:4])
	}
	if webtest.Text(doc, ".delivery-replays .empty") == "" {
		t.Error("no empty state before a replay")
	}

	_, _, loc := b.Post("/t/acme/deliveries/"+id+"/replay", url.Values{})
	replayID := strings.TrimPrefix(loc, "/t/acme/deliveries/")
	_, doc = b.Get("/t/acme/deliveries/" + id)
	rows := doc.Find(".delivery-replays table.replays-of tbody tr")
	if rows.Length() != 1 || !strings.Contains(rows.Text(), "1 duplicate") ||
		rows.Find(`a[href^="/t/acme/deliveries/`+replayID+`"]`).Length() != 1 {
		t.Errorf("replays: %d rows %q", rows.Length(), rows.Text())
	}
	// A replay answered JSON and kept its original's body for the curl.
	_, doc = b.Get(loc)
	if got := webtest.Text(doc, "pre.answer-body"); !strings.Contains(got, `"outcome":"duplicate"`) {
		t.Errorf("replay's answer %q", got)
	}
}

// TestInspectorBackLink: the back link returns to the page named in back
// when it is inside the tenant's console, and to the event history
// otherwise: never to another site.
func TestInspectorBackLink(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("viewer@example.com", false, "acme")
	_, answer := e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{}`))
	id := answer["delivery_id"].(string)
	for back, want := range map[string]string{
		"":                                   "/t/acme/events",
		"/t/acme/deliveries?provider=crm":    "/t/acme/deliveries?provider=crm",
		"/t/acme/replays/3?outcome=rejected": "/t/acme/replays/3?outcome=rejected",
		"https://evil.example":               "/t/acme/events",
		"//evil.example/t/acme/":             "/t/acme/events",
		"/\\evil.example":                    "/t/acme/events",
		"/t/other/events":                    "/t/acme/events",
		"javascript:alert(1)":                "/t/acme/events",
		"/t/acme/../../evil":                 "/t/acme/events",
	} {
		_, doc := b.Get("/t/acme/deliveries/" + id + "?back=" + url.QueryEscape(back))
		if got, _ := doc.Find("a.back-link").Attr("href"); got != want {
			t.Errorf("back %q: link %q, want %q", back, got, want)
		}
	}
	// The delivery list links each delivery with itself as back.
	_, doc := b.Get("/t/acme/deliveries?provider=crm")
	href, _ := doc.Find("table.delivery-list tbody tr a").First().Attr("href")
	if href != "/t/acme/deliveries/"+id+"?back="+url.QueryEscape("/t/acme/deliveries?provider=crm") {
		t.Errorf("list link %q", href)
	}
	_, doc = b.Get(href)
	if got, _ := doc.Find("a.back-link").Attr("href"); got != "/t/acme/deliveries?provider=crm" || webtest.Text(doc, "a.back-link") != "← Deliveries" {
		t.Errorf("back from the list: %q", got)
	}
}

// TestDeliveryList: filtered by provider and status (accepted, refused),
// with its count; a bad status is a 400 with the reason.
func TestDeliveryList(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("viewer@example.com", false, "acme")
	e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{}`))
	e.Deliver1("m2", webtest.SnapshotBody("c-2", 1, `{}`))
	e.Deliver("acme", "crm", provider.NewStandardSecret(), "m3", webtest.SnapshotBody("c-3", 1, `{}`))
	e.FlushRefusals()
	_, doc := b.Get("/t/acme/deliveries?status=refused")
	if refused := doc.Find("table.delivery-list tbody tr").Length(); refused != 1 || !strings.Contains(webtest.Text(doc, "td.outcomes"), "no event") {
		t.Fatalf("refused: %d rows", refused)
	}
	status, doc := b.Get("/t/acme/deliveries?provider=crm&status=accepted")
	if status != http.StatusOK || doc.Find("table.delivery-list tbody tr").Length() != 2 || webtest.Text(doc, ".pager .count") != "1–2 of 2" {
		t.Errorf("accepted: %d, %d rows, count %q", status, doc.Find("table.delivery-list tbody tr").Length(), webtest.Text(doc, ".pager .count"))
	}
	if got := webtest.Text(doc, "table.delivery-list tbody tr td.outcomes"); !strings.Contains(got, "1 applied") {
		t.Errorf("outcomes %q", got)
	}
	if status, _ := b.Get("/t/acme/deliveries?status=banana"); status != http.StatusBadRequest {
		t.Errorf("bad status: %d", status)
	}
}

// TestReplayPreviewAndJobDeliveries: the estimate lists the deliveries a
// job would replay; the job's page lists each original with its replay,
// and its outcome filter keeps those rejected again.
func TestReplayPreviewAndJobDeliveries(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	var ids []string
	for _, m := range []string{"m1", "m2"} {
		_, answer := e.Deliver1(m, webtest.SnapshotBody("c-"+m, 1, `{}`))
		ids = append(ids, answer["delivery_id"].(string))
	}
	_, doc := b.Get("/t/acme/replays")
	if !strings.Contains(webtest.Text(doc, ".replays-empty"), "after fixing") {
		t.Errorf("empty state %q", webtest.Text(doc, ".replays-empty"))
	}
	_, doc = b.Get("/t/acme/replays?provider=crm&estimate=1")
	rows := doc.Find("table.replay-preview tbody tr")
	if rows.Length() != 2 || rows.First().Find(`a[href^="/t/acme/deliveries/`+ids[0]+`"]`).Length() != 1 ||
		!strings.Contains(rows.First().Text(), "200") || !strings.Contains(rows.First().Text(), "1 applied") {
		t.Fatalf("preview: %d rows %q", rows.Length(), rows.Text())
	}
	status, _, loc := b.Post("/t/acme/replays", url.Values{"provider": {"crm"}})
	if status != http.StatusSeeOther {
		t.Fatalf("start: %d", status)
	}
	jobID, err := strconv.ParseInt(strings.TrimPrefix(loc, "/t/acme/replays/"), 10, 64)
	if err != nil {
		t.Fatalf("job page %q", loc)
	}
	webtest.Worker(e, "w1")
	webtest.WaitJob(e, jobID, "done", func(j domain.ReplayJob) bool { return j.Status == domain.ReplayDone })
	_, doc = b.Get(loc)
	rows = doc.Find("table.replay-job-list tbody tr")
	if rows.Length() != 2 || !strings.Contains(rows.First().Find("td.outcomes").Text(), "1 duplicate") ||
		rows.First().Find(`td.original a[href^="/t/acme/deliveries/`+ids[1]+`?back="]`).Length() != 1 {
		t.Errorf("job deliveries: %d rows %q", rows.Length(), rows.Text())
	}
	if got := webtest.Text(doc, "td.started-by"); got != "ops@example.com" {
		t.Errorf("started by %q", got)
	}
	_, doc = b.Get(loc + "?outcome=rejected")
	if doc.Find("table.replay-job-list tbody tr").Length() != 0 || !strings.Contains(webtest.Text(doc, ".replay-job-deliveries .empty"), "rejected") {
		t.Errorf("rejected again: %q", webtest.Text(doc, ".replay-job-deliveries"))
	}
	_, doc = b.Get(loc + "?outcome=duplicate")
	if doc.Find("table.replay-job-list tbody tr").Length() != 2 {
		t.Errorf("duplicate again: %d rows", doc.Find("table.replay-job-list tbody tr").Length())
	}
}
