package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestReplayJobAPI: the estimate, the job's shapes from start to done, its
// result summary and its audit entries.
func TestReplayJobAPI(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	e.RejectedHistory(5)
	e.Deliver1("other", webtest.SnapshotBody("c-x", 1, `{}`)) // applied: outside the filter

	status, body := webtest.StartReplay(e, token, `{"provider": "crm", "outcome": "rejected", "dry_run": true}`)
	if status != http.StatusOK {
		t.Fatalf("dry run: %d %v", status, body)
	}
	assertJSON(t, "dry run", body, `{"total": 5}`)
	status, body = webtest.StartReplay(e, token, `{"provider": "crm", "outcome": "rejected"}`)
	if status != http.StatusAccepted {
		t.Fatalf("start: %d %v", status, body)
	}
	webtest.AssertKeys(t, body, "id", "status", "total", "done", "filter", "counts", "summary", "created_by", "created_at",
		"started_at", "finished_at", "error")
	if body["status"] != "queued" || body["total"] != float64(5) || body["done"] != float64(0) || body["created_by"] != "test" {
		t.Fatalf("started job %v", body)
	}
	assertJSON(t, "filter", body["filter"], `{"provider": "crm", "status": null, "outcome": "rejected", "from": null, "to": null}`)
	id := int64(body["id"].(float64))
	base := fmt.Sprintf("/api/v1/tenants/acme/replays/%d", id)

	webtest.Worker(e, "w1")
	webtest.WaitJob(e, id, "done", func(j domain.ReplayJob) bool { return j.Status == domain.ReplayDone })
	status, body = e.Get(base, token)
	if status != http.StatusOK || body["status"] != "done" || body["done"] != float64(5) || body["finished_at"] == nil {
		t.Fatalf("finished job %d %v", status, body)
	}
	assertJSON(t, "counts", body["counts"], `{"applied": 5}`)
	if body["summary"] != "5 of 5 deliveries: 5 applied" {
		t.Errorf("summary %q", body["summary"])
	}
	status, body = e.Get("/api/v1/tenants/acme/replays", token)
	if jobs := webtest.List(t, status, body, "replays"); len(jobs) != 1 || jobs[0]["id"] != float64(id) {
		t.Fatalf("jobs %v", jobs)
	}
	status, body = e.Post(base+"/cancel", nil, map[string]string{"Authorization": "Bearer " + token})
	webtest.AssertError(t, status, body, http.StatusConflict, "has already ended (done)")
	want := []string{
		fmt.Sprintf("test replay_start replay job %d: provider crm, outcome rejected; 5 deliveries match", id),
		fmt.Sprintf("test replay_done replay job %d: 5 of 5 deliveries: 5 applied", id),
	}
	if got := e.AuditEntries(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit %q, want %q", got, want)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"outcome": "lost"}`, "outcome must be one of"},
		{`{"outcomes": "rejected"}`, "body must be a JSON object"},
		{`{"from": "2026-12-01T00:00:00Z", "to": "2026-11-01T00:00:00Z"}`, "start of the time range"},
	} {
		status, body := webtest.StartReplay(e, token, tc.body)
		webtest.AssertError(t, status, body, http.StatusBadRequest, tc.want)
	}
	status, body = e.Get("/api/v1/tenants/acme/replays/999", token)
	webtest.AssertError(t, status, body, http.StatusNotFound, "not found")
}

// TestReplayJobResumesAfterRestart: a worker stopped mid-job gives it
// back; a new worker continues from its position, and every delivery is
// replayed exactly once.
func TestReplayJobResumesAfterRestart(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	const n = 300
	e.RejectedHistory(n)
	status, body := webtest.StartReplay(e, token, `{}`)
	if status != http.StatusAccepted || body["total"] != float64(n) {
		t.Fatalf("start: %d %v", status, body)
	}
	id := int64(body["id"].(float64))

	stop := webtest.Worker(e, "first")
	webtest.WaitJob(e, id, "some progress", func(j domain.ReplayJob) bool { return j.Done >= 20 })
	stop()
	mid := webtest.Job(e, id)
	if mid.Status != domain.ReplayRunning || mid.Done >= n {
		t.Fatalf("after the stop: %s with %d of %d done, want running mid-job", mid.Status, mid.Done, n)
	}
	if replays, _ := webtest.ReplayCounts(e); replays != mid.Done {
		t.Fatalf("%d replays stored, the job counts %d", replays, mid.Done)
	}

	webtest.Worker(e, "second")
	done := webtest.WaitJob(e, id, "done", func(j domain.ReplayJob) bool { return j.Status == domain.ReplayDone })
	if done.Done != n || done.Counts["applied"] != n || len(done.Counts) != 1 {
		t.Fatalf("finished with %d done, counts %v; want %d applied", done.Done, done.Counts, n)
	}
	if replays, originals := webtest.ReplayCounts(e); replays != n || originals != n {
		t.Fatalf("%d replays of %d originals, want %d of %d", replays, originals, n, n)
	}
	t.Logf("stopped after %d of %d deliveries", mid.Done, n)
}

// TestReplayJobCancelWhileRunning: a job cancelled while a worker runs it
// stops, and its count is exactly the replays it stored.
func TestReplayJobCancelWhileRunning(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	const n = 300
	e.RejectedHistory(n)
	_, body := webtest.StartReplay(e, token, `{}`)
	id := int64(body["id"].(float64))
	webtest.Worker(e, "w1")
	webtest.WaitJob(e, id, "some progress", func(j domain.ReplayJob) bool { return j.Done >= 10 })
	status, body := e.Post(fmt.Sprintf("/api/v1/tenants/acme/replays/%d/cancel", id), nil,
		map[string]string{"Authorization": "Bearer " + token})
	if status != http.StatusOK || body["status"] != "cancelled" {
		t.Fatalf("cancel: %d %v", status, body)
	}
	time.Sleep(200 * time.Millisecond) // the worker finds out at its next step
	j := webtest.Job(e, id)
	if j.Status != domain.ReplayCancelled || j.Done >= n {
		t.Fatalf("after the cancel: %+v", j)
	}
	if replays, _ := webtest.ReplayCounts(e); replays != j.Done {
		t.Fatalf("%d replays stored, the cancelled job counts %d", replays, j.Done)
	}
	if got := e.AuditEntries(); len(got) != 2 || !strings.Contains(got[1], fmt.Sprintf("replay_cancel replay job %d: cancelled after", id)) {
		t.Fatalf("audit %q", got)
	}
}

// TestReplayJobOneAtATime: two requests racing to start a job of one
// tenant: one starts it, the other is refused with 409, every round.
func TestReplayJobOneAtATime(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{}`))
	for round := range 5 {
		start := make(chan struct{})
		var wg sync.WaitGroup
		statuses := make([]int, 2)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+"/api/v1/tenants/acme/replays", strings.NewReader(`{}`))
				req.Header.Set("Authorization", "Bearer "+token)
				<-start
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				statuses[i] = resp.StatusCode
			}()
		}
		close(start)
		wg.Wait()
		accepted, refused := 0, 0
		for _, s := range statuses {
			switch s {
			case http.StatusAccepted:
				accepted++
			case http.StatusConflict:
				refused++
			}
		}
		if accepted != 1 || refused != 1 {
			t.Fatalf("round %d: statuses %v, want one 202 and one 409", round, statuses)
		}
		jobs, _, err := e.Store.ReplayJobs(context.Background(), e.Tenant("acme").ID, domain.Page{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Store.CancelReplayJob(webtest.CliContext(), e.Tenant("acme").ID, jobs[0].ID); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConsoleReplays: the replays page counts what a filter matches before
// a job is confirmed, the job's page polls its progress while it runs, and
// a second job is refused while one is active.
func TestConsoleReplays(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	e.RejectedHistory(3)

	status, doc := b.Get("/t/acme/replays")
	if status != http.StatusOK || doc.Find("form.replay-filters").Length() != 1 || doc.Find("form.replay-confirm").Length() != 0 {
		t.Fatalf("replays page: %d", status)
	}
	status, doc = b.Get("/t/acme/replays?estimate=1&provider=crm&outcome=rejected&status=200")
	if status != http.StatusOK || webtest.Text(doc, ".replay-estimate strong.estimate") != "3" {
		t.Fatalf("estimate: %d %q", status, webtest.Text(doc, ".replay-estimate"))
	}
	confirm := doc.Find("form.replay-confirm")
	if got := strings.TrimSpace(confirm.Find("button").Text()); got != "Replay 3 deliveries" {
		t.Fatalf("confirm button %q", got)
	}
	form := url.Values{}
	confirm.Find("input[type=hidden]").Each(func(_ int, s *goquery.Selection) {
		form.Set(s.AttrOr("name", ""), s.AttrOr("value", ""))
	})
	status, _, loc := b.Post("/t/acme/replays", form)
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/t/acme/replays/") {
		t.Fatalf("confirm: %d to %q", status, loc)
	}
	status, doc = b.Get(loc)
	if status != http.StatusOK || doc.Find(`#replay-progress[hx-get="`+loc+`"][hx-trigger="every 1s"]`).Length() != 1 {
		t.Fatalf("a queued job's page does not poll: %d", status)
	}
	if !strings.HasPrefix(webtest.ShownFlash(doc), "Replay job ") || doc.Find(`form[action="`+loc+`/cancel"]`).Length() != 1 {
		t.Fatalf("flash %q, or no cancel button", webtest.ShownFlash(doc))
	}
	status, _, again := b.Post("/t/acme/replays", form)
	_, doc = b.Get(again)
	if status != http.StatusSeeOther || !strings.Contains(webtest.ShownFlash(doc), "is still queued or running") {
		t.Fatalf("a second job: %d, flash %q", status, webtest.ShownFlash(doc))
	}

	webtest.Worker(e, "w1")
	var id int64
	fmt.Sscanf(strings.TrimPrefix(loc, "/t/acme/replays/"), "%d", &id)
	webtest.WaitJob(e, id, "done", func(j domain.ReplayJob) bool { return j.Status == domain.ReplayDone })
	_, doc = b.Get(loc)
	if doc.Find("#replay-progress[hx-get]").Length() != 0 || webtest.Text(doc, `td[data-count="applied"]`) != "3" {
		t.Fatalf("a finished job's page polls, or its result is wrong: %q", webtest.Text(doc, "#replay-progress"))
	}
	_, doc = b.Get("/t/acme/replays")
	if got := webtest.Text(doc, "table.replay-jobs tbody tr td:nth-child(5)"); got != "3 applied" {
		t.Fatalf("jobs table result %q", got)
	}
}
