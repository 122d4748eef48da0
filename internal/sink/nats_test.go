package sink_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/queue/queuetest"
	"github.com/tidemark/tidemark/internal/sink"
	"github.com/tidemark/tidemark/internal/whsig"
)

// TestNATSPublishes: a change published to JetStream on
// PREFIX.{tenant}.{provider}.{object_type}, acknowledged as 200, with
// Nats-Msg-Id and signed; an alert event is not sent.
func TestNATSPublishes(t *testing.T) {
	t.Parallel()
	prefix := queuetest.Stream(t)
	nc, err := nats.Connect(queuetest.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: prefix, Subjects: []string{prefix + ".>"}})
	if err != nil {
		t.Fatal(err)
	}
	secret := whsig.NewSecret()
	d := stream.LeasedDestination{TenantID: 7, ID: 3, TenantSlug: "acme", Kind: "nats", NATSURL: queuetest.URL(), Subject: prefix,
		AllowPrivate: true, Format: stream.FormatStandard, Secrets: []string{secret}}
	c := conns(t)
	if a := c.Send(ctx, d, change); a.Status != http.StatusOK || a.Err != "" {
		t.Fatalf("%+v", a)
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	for k, v := range msg.Headers() {
		h[http.CanonicalHeaderKey(k)] = v
	}
	if msg.Subject() != prefix+".acme.crm.contact" || msg.Headers().Get(jetstream.MsgIDHeader) != change.ID() ||
		!strings.Contains(string(msg.Data()), `"type":"record.applied"`) {
		t.Errorf("subject %s, headers %v, body %s", msg.Subject(), msg.Headers(), msg.Data())
	}
	if err := whsig.Verify(secret, h, msg.Data(), time.Now(), time.Minute); err != nil {
		t.Errorf("signature: %v", err)
	}
	if a := c.Send(ctx, d, alert); a.Err != "not sent: alert events are sent to url destinations only" {
		t.Errorf("an alert: %+v", a)
	}
}

// TestNATSSubject: what a NATS token cannot hold becomes "_".
func TestNATSSubject(t *testing.T) {
	t.Parallel()
	if got := sink.Subject("p.q", "a.b", "c*d", "e> f"); got != "p.q.a_b.c_d.e__f" {
		t.Errorf("subject %q", got)
	}
}
