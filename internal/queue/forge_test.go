package queue_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/queue"
	"github.com/tidemark/tidemark/internal/queue/queuetest"
)

// publishRaw publishes msg as anyone with access to NATS could, around
// the queue's own publishing.
func (b *bundle) publishRaw(subject string, data []byte) {
	b.publishMsg(&nats.Msg{Subject: subject, Data: data, Header: nats.Header{}})
}

func (b *bundle) publishMsg(msg *nats.Msg) {
	b.t.Helper()
	nc, err := nats.Connect(queuetest.URL())
	if err != nil {
		b.t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.PublishMsg(context.Background(), msg); err != nil {
		b.t.Fatal(err)
	}
}

// deadLetters returns the reasons of the messages in the dead-letter
// stream.
func (b *bundle) deadLetters() []string {
	b.t.Helper()
	nc, err := nats.Connect(queuetest.URL())
	if err != nil {
		b.t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	s, err := js.Stream(ctx, b.q.DeadStream())
	if err != nil {
		b.t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		b.t.Fatal(err)
	}
	var reasons []string
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		reasons = append(reasons, m.Header.Get("Tidemark-Dead-Reason"))
	}
	return reasons
}

// awaitDead waits until the dead-letter stream holds n messages, each with
// a reason containing want.
func (b *bundle) awaitDead(n int, want string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		reasons := b.deadLetters()
		if len(reasons) == n {
			for _, r := range reasons {
				if !strings.Contains(r, want) {
					b.t.Errorf("dead letter's reason %q, want it to say %q", r, want)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("dead letters %q, want %d", reasons, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// workWith runs one worker with keys until the test ends.
func (b *bundle) workWith(keys [][]byte) *queue.WorkerStats {
	b.t.Helper()
	w, err := queue.Open(queue.Config{URL: queuetest.URL(), Stream: b.q.Stream(), Keys: keys, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stats := &queue.WorkerStats{}
	done := make(chan struct{})
	go func() { w.Work(ctx, b.store, b.leases(), stats); w.Close(); close(done) }()
	b.t.Cleanup(func() { cancel(); <-done })
	return stats
}

// tenant creates another tenant with a standard provider "crm".
func (b *bundle) tenant(slug string) domain.ProviderEndpoint {
	b.t.Helper()
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	tenant, err := b.store.CreateTenant(ctx, slug, "")
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.store.ConnectProvider(ctx, tenant.ID, "crm", "standard", "whsec_"+"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", nil); err != nil {
		b.t.Fatal(err)
	}
	ep, err := b.store.Endpoint(ctx, slug, "crm")
	if err != nil {
		b.t.Fatal(err)
	}
	return ep
}

// TestAlteredMessagesAreNotApplied: a genuine message edited by one byte,
// one copied to another tenant's subject, and one whose envelope names
// another tenant than the one it was signed for are each moved to the
// dead-letter stream with the reason; none is applied, and the genuine
// delivery queued behind them is.
func TestAlteredMessagesAreNotApplied(t *testing.T) {
	t.Parallel()
	b := setup(t)
	beta := b.tenant("beta")
	// beta's subject: the same partition as acme's would do, but take
	// whichever beta's id gives.
	betaSubject := fmt.Sprintf("%s.in.%d.%d", b.q.Stream(), beta.TenantID%queue.Partitions, beta.TenantID)

	edited := queue.Sealed(b.q, b.delivery("edited", "c-1", 100), b.delivery("edited", "c-1", 100))
	edited.Data[len(edited.Data)/2] ^= 1
	b.publishMsg(edited)

	copied := queue.Sealed(b.q, b.delivery("copied", "c-1", 101), b.delivery("copied", "c-1", 101))
	copied.Subject = betaSubject
	b.publishMsg(copied)

	other := b.delivery("other", "b-1", 102)
	other.Delivery.TenantID, other.Delivery.ProviderID, other.TenantSlug = beta.TenantID, beta.ID, "beta"
	b.publishMsg(queue.Sealed(b.q, other, b.delivery("other", "b-1", 102))) // signed for acme, names beta

	b.enqueue(b.delivery("e-1", "c-1", 1))
	stats := b.workWith(queuetest.Keys)
	b.await(`SELECT count(*) FROM events WHERE tenant_id = $1 AND outcome = 'applied'`, 1)
	b.awaitDead(3, "refused, not applied")
	reasons := strings.Join(b.deadLetters(), "\n")
	for _, want := range []string{"signature does not match", "signed for tenant"} {
		if !strings.Contains(reasons, want) {
			t.Errorf("dead letters' reasons lack %q:\n%s", want, reasons)
		}
	}
	if got := b.count(`SELECT count(*) FROM events WHERE tenant_id = $1 AND event_id IN ('edited', 'copied', 'other')`); got != 0 {
		t.Errorf("%d altered events logged", got)
	}
	if got := b.count(`SELECT (SELECT count(*) FROM deliveries WHERE tenant_id <> $1) + (SELECT count(*) FROM events WHERE tenant_id <> $1)`); got != 0 {
		t.Errorf("%d deliveries and events logged for beta", got)
	}
	if got := stats.DeadLetters.Load(); got != 3 {
		t.Errorf("%d dead letters counted, want 3", got)
	}
}

// TestRekeyedQueue: a message sealed under the old first key is applied by
// a worker whose keyring holds the new key and the old one; one sealed
// under a key the worker lacks is a dead letter naming the key id.
func TestRekeyedQueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	old := queuetest.Keys[0]
	fresh := []byte("fedcba9876543210fedcba9876543210")
	b.enqueue(b.delivery("e-1", "c-1", 1)) // sealed by b.q, under old
	b.workWith([][]byte{fresh, old})
	b.await(`SELECT count(*) FROM events WHERE tenant_id = $1 AND outcome = 'applied'`, 1)

	b2 := setup(t)
	b2.enqueue(b2.delivery("e-1", "c-1", 1))
	b2.workWith([][]byte{fresh})
	b2.awaitDead(1, "not among TIDEMARK_ENCRYPTION_KEY's keys")
	if got := b2.count(`SELECT count(*) FROM events WHERE tenant_id = $1`); got != 0 {
		t.Errorf("%d events applied under a key the worker lacks", got)
	}
}

// TestStreamHoldsNoPlaintext: what NATS stores of a queued delivery (its
// data and headers) contains neither the body nor the snapshot.
func TestStreamHoldsNoPlaintext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	qd := b.delivery("e-1", "c-secret-contact", 7)
	qd.Events[0].Snapshot = []byte(`{"job_title":"Chief Whisperer"}`)
	qd.Delivery.Body = []byte(`{"type":"contact.snapshot","data":{"email":"dave.private@example.com"}}`)
	b.enqueue(qd)
	nc, err := nats.Connect(queuetest.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	s, err := js.Stream(context.Background(), b.q.Stream())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.GetMsg(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	all.Write(raw.Data)
	for k, v := range raw.Header {
		fmt.Fprintf(&all, "%s: %s\n", k, v)
	}
	for _, secret := range []string{"Chief Whisperer", "dave.private", "c-secret-contact", "contact.snapshot"} {
		if bytes.Contains(all.Bytes(), []byte(secret)) {
			t.Errorf("the stream's message contains %q in clear", secret)
		}
	}
}

// TestDeadLettersExpire: the dead-letter stream keeps messages at most the
// retention it is given (serve's --retention).
func TestDeadLettersExpire(t *testing.T) {
	t.Parallel()
	stream := queuetest.Stream(t)
	q, err := queue.Open(queue.Config{URL: queuetest.URL(), Stream: stream, Keys: queuetest.Keys, DeadMaxAge: 200 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()
	if err := q.Ensure(ctx, true); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(queuetest.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	s, err := js.Stream(ctx, q.DeadStream())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.MaxAge; got != 200*time.Hour {
		t.Errorf("dead letters' MaxAge %s, want the retention 200h", got)
	}
}

// TestQueueNeedsKeys: a queue without keys does not open.
func TestQueueNeedsKeys(t *testing.T) {
	t.Parallel()
	if _, err := queue.Open(queue.Config{URL: queuetest.URL()}); err == nil || !strings.Contains(err.Error(), "TIDEMARK_ENCRYPTION_KEY") {
		t.Errorf("Open without keys: %v", err)
	}
}
