package queue_test

import (
	"context"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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
