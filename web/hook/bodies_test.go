package hook_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/queue"
	"github.com/tidemark/tidemark/internal/queue/queuetest"
	"github.com/tidemark/tidemark/postgres/leases"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestQueuedSessionIdBlanked (review 3, M2): in queued mode the SessionId
// of a Salesforce outbound message is blanked before the body is queued,
// so the worker stores none.
func TestQueuedSessionIdBlanked(t *testing.T) {
	t.Parallel()
	q := queuetest.New(t)
	e := setupQueued(t, q)
	webtest.SfProvider(e, "sf", nil).Acked(bytes.Replace(webtest.SfFixture(t, "contact.xml"),
		[]byte(`<SessionId xsi:nil="true"/>`), []byte(`<SessionId>00D5e000000AbCd!AQ4AQFakeSessionId</SessionId>`), 1))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		q.Work(ctx, e.Store, leases.New(e.Store.Pool().Config().ConnConfig), &queue.WorkerStats{})
		close(done)
	}()
	defer func() { cancel(); <-done }()
	var body []string
	for deadline := time.Now().Add(10 * time.Second); len(body) == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		body = e.Strings(`SELECT convert_from(body, 'UTF8') FROM deliveries WHERE body IS NOT NULL`)
	}
	if len(body) != 1 || strings.Contains(body[0], "AQ4AQFake") || !strings.Contains(body[0], "<SessionId></SessionId>") {
		t.Fatalf("the worker stored %q, want the body with its SessionId blanked", body)
	}
}
