package outbound_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/queue/queuetest"
	"github.com/tidemark/tidemark/internal/whsig"
)

// TestTwoSendersOneDestination: two senders (two nodes) on one database
// deliver each change exactly once; when the one sending stops in the
// middle of a send, the other takes over and nothing is skipped.
func TestTwoSendersOneDestination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t)
	hold := make(chan struct{})
	var holdOnce sync.Once
	var held sync.WaitGroup
	held.Add(1)
	rc.setAnswer(func(a arrival, _ http.ResponseWriter, r *http.Request) int {
		if a.position == 60 { // the first time, hang until the sender gives up
			first := false
			holdOnce.Do(func() { first = true })
			if first {
				held.Done()
				select {
				case <-hold:
				case <-r.Context().Done():
				}
			}
		}
		return http.StatusOK
	})
	d := e.httpDestination(t, rc, 8)
	owners := map[string]func(){}
	for i := range 2 {
		o := fast()
		o.Owner, o.Drain = fmt.Sprint("node-", i), 500*time.Millisecond
		owners[o.Owner] = e.run(t, o)
	}
	const records = 10
	for rev := int64(1); rev <= 10; rev++ {
		for r := range records {
			e.ingest(t, fmt.Sprint("c", r), rev)
		}
	}
	held.Wait()
	var owner string
	if err := e.store.Pool().QueryRow(context.Background(), `SELECT lease_owner FROM destinations WHERE tenant_id = $1 AND id = $2`,
		e.p.TenantID, d.ID).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s is sending; stopping it in the middle of change 60", owner)
	owners[owner]()
	waitFor(t, 20*time.Second, "every change delivered", func() bool { _, got, _ := rc.got(); return len(got) >= 100 })
	close(hold)
	time.Sleep(300 * time.Millisecond)
	_, delivered, _ := rc.got()
	checkOrder(t, delivered, 100)
	// The stopped node's held request is cut off when its drain ends; the
	// receiver answers it after the other node sent that change again: at
	// most one repeat, which at-least-once delivery allows (the consumer
	// drops it by webhook-id). The other sends in flight finished within
	// the drain and were recorded, so none of them came twice.
	if len(delivered) < 100 || len(delivered) > 101 {
		t.Errorf("%d changes answered 2xx, want each of 100 once, and at most the held one twice", len(delivered))
	}
}

// TestStoppingNodeDrainsItsSends: a node that stops (a deploy) lets the
// sends it has in flight finish and records their answers, so the node
// that takes the destination over sends none of them again. The receiver
// acts on every request it reads, as a real one does, whether or not the
// sender still waits for the answer.
func TestStoppingNodeDrainsItsSends(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t)
	var mu sync.Mutex
	processed := map[int64]int{}
	var slowOnce sync.Once
	inFlight := make(chan struct{})
	rc.setAnswer(func(a arrival, _ http.ResponseWriter, _ *http.Request) int {
		if a.position > 8 { // the first eight are in flight together when the node stops
			slowOnce.Do(func() { close(inFlight) })
			time.Sleep(300 * time.Millisecond)
		}
		mu.Lock()
		processed[a.position]++
		mu.Unlock()
		return http.StatusOK
	})
	e.httpDestination(t, rc, 8)
	o := fast()
	o.Owner, o.Drain = "node-0", 2*time.Second
	stop := e.run(t, o)
	const changes = 40
	for rev := int64(1); rev <= changes/8; rev++ {
		for r := range 8 {
			e.ingest(t, fmt.Sprint("c", r), rev)
		}
	}
	<-inFlight
	stop()
	o.Owner = "node-1"
	e.run(t, o)
	waitFor(t, 20*time.Second, "every change processed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(processed) >= changes
	})
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for pos, n := range processed {
		if n > 1 {
			t.Errorf("change %d processed %d times: a send in flight when node-0 stopped was sent again by node-1", pos, n)
		}
	}
}

// TestPublishesToJetStream: a NATS destination publishes each change to
// PREFIX.{tenant}.{provider}.{object_type} with Nats-Msg-Id, a record's
// changes in order, each signed as a webhook message is, with the headers
// spelled as Standard Webhooks spells them (review 4's M6: they were
// unsigned).
func TestPublishesToJetStream(t *testing.T) {
	t.Parallel()
	prefix := queuetest.Stream(t) // a unique name; its stream is deleted when the test ends
	nc, err := nats.Connect(queuetest.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jsStream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: prefix, Subjects: []string{prefix + ".>"}})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	_, secret := e.destination(t, stream.NewDestination{NATSURL: queuetest.URL(), Subject: prefix, AllowPrivate: true})
	e.run(t, fast())
	for rev := int64(1); rev <= 5; rev++ {
		for _, r := range []string{"a", "b.c", "d e"} {
			e.ingest(t, r, rev)
		}
	}
	cons, err := jsStream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var got []arrival
	for len(got) < 15 {
		msg, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatalf("after %d messages: %v", len(got), err)
		}
		if want := prefix + ".acme.crm.contact"; msg.Subject() != want {
			t.Errorf("subject %s, want %s", msg.Subject(), want)
		}
		var pos int64
		fmt.Sscanf(msg.Headers().Get(jetstream.MsgIDHeader), fmt.Sprintf("chg_%d_%%d", e.p.TenantID), &pos)
		body := string(msg.Data())
		record := body[strings.Index(body, `"object_id":"`)+13:]
		record = record[:strings.IndexByte(record, '"')]
		if !strings.Contains(body, fmt.Sprintf(`"id":"chg_%d_%d"`, e.p.TenantID, pos)) {
			t.Errorf("message %s does not carry its Nats-Msg-Id %d", body, pos)
		}
		h := http.Header{}
		for k, v := range msg.Headers() {
			h[http.CanonicalHeaderKey(k)] = v
		}
		if err := whsig.Verify(secret, h, msg.Data(), time.Now(), 5*time.Minute); err != nil {
			t.Errorf("message %s: %v", msg.Headers().Get(jetstream.MsgIDHeader), err)
		}
		if id := msg.Headers().Get("webhook-id"); id != msg.Headers().Get(jetstream.MsgIDHeader) || msg.Headers().Get("webhook-timestamp") == "" {
			t.Errorf("headers %v: want webhook-id (the change's id) and webhook-timestamp, spelled so", msg.Headers())
		}
		got = append(got, arrival{record: record, position: pos})
	}
	checkOrder(t, got, 15)
}
