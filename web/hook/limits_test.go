package hook_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// paddedBody is a signed-able standard delivery of at least size bytes.
func paddedBody(contact string, size int) []byte {
	return webtest.SnapshotBody(contact, 1, `{"pad":"`+strings.Repeat("x", size)+`"}`)
}

// TestWebhookBodyLimitPerProvider: the body limit is the provider's own,
// else its kind's (1 MiB, 5 MiB for Salesforce), and a 413 says what the
// limit is and how to raise it.
func TestWebhookBodyLimitPerProvider(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	ctx := webtest.CliContext()
	big := paddedBody("c-big", provider.DefaultMaxBody)

	status, answer := e.Deliver1("m-big", big)
	msg, _ := answer["error"].(string)
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "limit of 1 MiB") ||
		!strings.Contains(msg, "provider update --tenant acme --provider crm --max-body") {
		t.Fatalf("a body over the default limit: %d %q, want 413 naming 1 MiB and how to raise it", status, msg)
	}

	p, err := e.Store.ProviderSummary(ctx, e.Tenant("acme").ID, "crm")
	if err != nil {
		t.Fatal(err)
	}
	two := int64(2 << 20)
	if _, err := e.Store.SetProviderLimits(ctx, p.TenantID, p.ID, domain.ProviderLimits{MaxBody: &two}); err != nil {
		t.Fatal(err)
	}
	if got := e.Outcome("acme", "crm", e.Secret, "m-big", big); got != "applied" {
		t.Fatalf("the same body under a 2 MiB limit: %s, want applied", got)
	}
	status, answer = e.Deliver1("m-bigger", paddedBody("c-big", int(two)))
	if msg, _ := answer["error"].(string); status != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "limit of 2 MiB") {
		t.Fatalf("a body over the provider's own limit: %d %q, want 413 naming 2 MiB", status, msg)
	}

	// Salesforce's envelopes of 100 notifications get 5 MiB by default.
	sf := webtest.SfProvider(e, "sf", nil)
	if status, answer, _ := sf.Post([]byte(strings.Repeat(" ", 2<<20))); status == http.StatusRequestEntityTooLarge {
		t.Fatalf("2 MiB to a salesforce provider: 413 %q, want it read (5 MiB is the kind's default)", answer)
	}
	if status, answer, _ := sf.Post([]byte(strings.Repeat(" ", 5<<20+1))); status != http.StatusRequestEntityTooLarge ||
		!strings.Contains(answer, "limit of 5 MiB") {
		t.Fatalf("over 5 MiB to a salesforce provider: %d %q, want 413 naming 5 MiB", status, answer)
	}
}

// TestWebhookBudgetStartsAfterBody: a sender that takes longer than the
// ingest budget (3 s) to upload its body still gets its delivery processed:
// the budget bounds the database work, not the upload.
func TestWebhookBudgetStartsAfterBody(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	body := webtest.SnapshotBody("c-slow", 1, `{"job_title":"Director"}`)
	ts := time.Now().Unix()
	sig, err := provider.SignStandard(e.Secret, "m-slow", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.Write(body[:10])
		time.Sleep(3500 * time.Millisecond)
		pw.Write(body[10:])
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+"/webhooks/acme/crm", pr)
	req.Header.Set("webhook-id", "m-slow")
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	status, answer := e.Do(req)
	if got := webtest.Outcome(t, status, answer); got != "applied" {
		t.Fatalf("slow upload: %s, want applied", got)
	}
}
