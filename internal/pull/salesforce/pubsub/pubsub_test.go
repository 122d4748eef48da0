package pubsub_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub"
	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub/pubsubtest"
)

// fixture is a fake Pub/Sub API and a client signed in to it.
type fixture struct {
	fake   *pubsubtest.Server
	client *pubsub.Client
}

func setup(t *testing.T) fixture {
	t.Helper()
	fake := pubsubtest.New(t, 20*time.Millisecond)
	token, instance, tenant := fake.Credentials()
	return fixture{fake: fake, client: dial(t, fake, pubsub.Credentials{AccessToken: token, InstanceURL: instance, TenantID: tenant})}
}

func dial(t *testing.T, fake *pubsubtest.Server, creds pubsub.Credentials) *pubsub.Client {
	t.Helper()
	c, err := pubsub.Dial(t.Context(), pubsub.Config{Address: fake.Addr(), AllowPrivate: true,
		Token: func(context.Context) (pubsub.Credentials, error) { return creds, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (f fixture) subscribe(t *testing.T, topic string, from pubsub.Position, batch int) *pubsub.Subscription {
	t.Helper()
	s, err := f.client.Subscribe(t.Context(), topic, from, batch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// next is the subscription's next event, failing the test after 10 seconds.
func next(t *testing.T, s *pubsub.Subscription) pubsub.ChangeEvent {
	t.Helper()
	type result struct {
		ev  pubsub.ChangeEvent
		err error
	}
	done := make(chan result, 1)
	go func() {
		ev, err := s.Next()
		done <- result{ev, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return pubsub.ChangeEvent{}
}

var t0 = time.Date(2026, 12, 7, 9, 15, 30, 250_000_000, time.UTC)

func update(id, email string, at time.Time) pubsubtest.Change {
	return pubsubtest.Change{Entity: "Contact", Type: "UPDATE", RecordIDs: []string{id}, Commit: at,
		Fields: map[string]any{"Email": email, "LastModifiedDate": at.UnixMilli()}}
}

// TestSubscribeFromEarliestAndFromAReplayID follows "Replaying an Event
// Stream": EARLIEST starts at the oldest retained event, CUSTOM after the
// replay id given, LATEST at the next new one.
func TestSubscribeFromEarliestAndFromAReplayID(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var ids [][]byte
	for i, email := range []string{"a@example.com", "b@example.com", "c@example.com"} {
		ids = append(ids, f.fake.AddChange(update("003A", email, t0.Add(time.Duration(i)*time.Second))))
	}
	all := f.subscribe(t, "/data/ChangeEvents", pubsub.Position{Earliest: true}, 0)
	for i, want := range []string{"a@example.com", "b@example.com", "c@example.com"} {
		ev := next(t, all)
		if got := ev.Fields["Email"]; got == nil || *got != want || !slices.Equal(ev.ReplayID, ids[i]) {
			t.Fatalf("event %d from EARLIEST: Email %v replay %x, want %s %x", i, got, ev.ReplayID, want, ids[i])
		}
	}
	resumed := f.subscribe(t, "/data/ContactChangeEvent", pubsub.Position{ReplayID: ids[0]}, 0)
	if ev := next(t, resumed); *ev.Fields["Email"] != "b@example.com" {
		t.Fatalf("after the first replay id: %s, want b@example.com", *ev.Fields["Email"])
	}

	latest := f.subscribe(t, "/data/ChangeEvents", pubsub.Position{}, 0)
	got := make(chan pubsub.ChangeEvent, 1)
	go func() {
		ev, _ := latest.Next()
		got <- ev
	}()
	// Keep-alives come and go without an event and without asking again.
	deadline := time.Now().Add(10 * time.Second)
	for f.fake.Counts().Subscribes < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	base := f.fake.Counts().KeepAlives
	for f.fake.Counts().KeepAlives < base+3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	requests := f.fake.Counts().FetchRequests
	f.fake.AddChange(update("003A", "d@example.com", t0.Add(time.Minute)))
	select {
	case ev := <-got:
		if *ev.Fields["Email"] != "d@example.com" {
			t.Fatalf("from LATEST: %s, want only the new d@example.com", *ev.Fields["Email"])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event from LATEST")
	}
	if c := f.fake.Counts(); c.KeepAlives < 3 || c.FetchRequests != requests {
		t.Fatalf("keep-alives %d, fetch requests %d then %d: want keep-alives answered without asking again", c.KeepAlives, requests, c.FetchRequests)
	}
	if len(latest.LatestReplayID()) == 0 {
		t.Fatal("no latest replay id after keep-alives and an event")
	}
}

// TestFlowControlNeverExceedsMaxRequested follows "Flow Control
// Considerations": at most 100 events requested and not yet received,
// and the next request only once the consumer took what it got.
func TestFlowControlNeverExceedsMaxRequested(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for i := range 250 {
		f.fake.AddChange(update("003A", "x@example.com", t0.Add(time.Duration(i)*time.Millisecond)))
	}
	s := f.subscribe(t, "/data/ChangeEvents", pubsub.Position{Earliest: true}, 500)
	next(t, s)
	time.Sleep(100 * time.Millisecond) // room for a wrong second request
	if c := f.fake.Counts(); c.FetchRequests != 1 || c.Delivered != pubsub.MaxRequested {
		t.Fatalf("after the first event: %d requests, %d delivered; want 1 request of %d", c.FetchRequests, c.Delivered, pubsub.MaxRequested)
	}
	for range 249 {
		next(t, s)
	}
	if c := f.fake.Counts(); c.MaxOutstanding > pubsub.MaxRequested || c.Delivered != 250 || c.FetchRequests != 3 || c.SchemaRequests != 1 {
		t.Fatalf("counts %+v: want at most %d outstanding, 250 delivered in 3 requests, the schema asked once", c, pubsub.MaxRequested)
	}
}

// TestExpiredReplayIDIsCorrupted follows "Handle Errors": a replay id past
// retention is refused with the replayid.corrupted error code.
func TestExpiredReplayIDIsCorrupted(t *testing.T) {
	t.Parallel()
	f := setup(t)
	first := f.fake.AddChange(update("003A", "a@example.com", t0))
	second := f.fake.AddChange(update("003A", "b@example.com", t0.Add(time.Second)))
	f.fake.AddChange(update("003A", "c@example.com", t0.Add(2*time.Second)))
	f.fake.Expire(second)
	s := f.subscribe(t, "/data/ChangeEvents", pubsub.Position{ReplayID: first}, 0)
	_, err := s.Next()
	if !errors.Is(err, pubsub.ErrReplayIDCorrupted) || pubsub.Retryable(err) {
		t.Fatalf("from an expired replay id: %v (retryable %v), want ErrReplayIDCorrupted, not retryable", err, pubsub.Retryable(err))
	}
	if !strings.Contains(err.Error(), "replayid.corrupted") {
		t.Fatalf("error %q does not name Salesforce's error code", err)
	}
	// EARLIEST now starts after the expired events.
	if ev := next(t, f.subscribe(t, "/data/ChangeEvents", pubsub.Position{Earliest: true}, 0)); *ev.Fields["Email"] != "c@example.com" {
		t.Fatalf("EARLIEST after expiry: %s, want c@example.com", *ev.Fields["Email"])
	}
}

// TestBadCredentialsAreRefusedClearly: a token Salesforce refuses ends
// every call with ErrAuthentication and the documented error code.
func TestBadCredentialsAreRefusedClearly(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, instance, tenant := f.fake.Credentials()
	bad := dial(t, f.fake, pubsub.Credentials{AccessToken: "expired", InstanceURL: instance, TenantID: tenant})
	if _, err := bad.GetTopic(t.Context(), "/data/ChangeEvents"); !errors.Is(err, pubsub.ErrAuthentication) ||
		!strings.Contains(err.Error(), "auth.error") || pubsub.Retryable(err) {
		t.Fatalf("GetTopic with a bad token: %v, want ErrAuthentication naming auth.error, not retryable", err)
	}
	s, err := bad.Subscribe(t.Context(), "/data/ChangeEvents", pubsub.Position{}, 0)
	if err == nil {
		_, err = s.Next()
		s.Close()
	}
	if !errors.Is(err, pubsub.ErrAuthentication) {
		t.Fatalf("Subscribe with a bad token: %v, want ErrAuthentication", err)
	}
	if c := f.fake.Counts(); c.AuthFailures != 2 || c.Subscribes != 0 {
		t.Fatalf("counts %+v: want 2 refused calls and no subscription", c)
	}
	info, err := f.client.GetTopic(t.Context(), "/data/ContactChangeEvent")
	if err != nil || info.GetSchemaId() == "" || info.GetTenantGuid() != tenant || !info.GetCanSubscribe() {
		t.Fatalf("GetTopic with the right credentials: %v %v", info, err)
	}
}

// TestAStoppedServerIsRetryable: a connection that cannot be made is worth
// trying again, unlike a refusal.
func TestAStoppedServerIsRetryable(t *testing.T) {
	t.Parallel()
	c, err := pubsub.Dial(t.Context(), pubsub.Config{Address: "127.0.0.1:1", AllowPrivate: true,
		Token: func(context.Context) (pubsub.Credentials, error) { return pubsub.Credentials{AccessToken: "t"}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := c.GetTopic(ctx, "/data/ChangeEvents"); !pubsub.Retryable(err) {
		t.Fatalf("GetTopic of a closed port: %v, want a retryable error", err)
	}
}
