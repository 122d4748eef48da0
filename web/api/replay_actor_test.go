package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestReplayJobEndsWithItsToken is the review's L2: a job started with a
// read-write token kept replaying after the token was revoked. The worker
// re-checks the job's actor for every slice it claims and fails the job,
// saying why.
func TestReplayJobEndsWithItsToken(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.TokenWith("acme", domain.NewAPIToken{Name: "rw2", Access: domain.TokenWrite})
	e.RejectedHistory(5)
	status, body := webtest.StartReplay(e, token, `{"provider": "crm", "outcome": "rejected"}`)
	if status != http.StatusAccepted {
		t.Fatalf("start: %d %v", status, body)
	}
	id := int64(body["id"].(float64))
	tokens, err := e.Store.APITokens(context.Background(), e.Tenant("acme").ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range tokens {
		if k.Name == "rw2" {
			if err := e.Store.RevokeAPIToken(webtest.CliContext(), e.Tenant("acme").ID, k.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	webtest.Worker(e, "w1")
	job := webtest.WaitJob(e, id, "the job's end", func(j domain.ReplayJob) bool { return !j.Active() })
	if job.Status != domain.ReplayFailed || job.Done != 0 || !strings.Contains(job.Error, `API token "rw2"`) ||
		!strings.Contains(job.Error, "revoked") {
		t.Fatalf("the job of a revoked token ended %s after %d deliveries: %q", job.Status, job.Done, job.Error)
	}
}
