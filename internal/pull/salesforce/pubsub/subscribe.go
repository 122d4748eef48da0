package pubsub

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub/eventbusv1"
)

// Position is where a subscription starts.
type Position struct {
	// ReplayID, when set, starts after the event it names (the last one
	// written).
	ReplayID []byte
	// Earliest starts at the oldest event Salesforce retains (72 hours of
	// change events); otherwise, without ReplayID, at the next new one.
	Earliest bool
}

// Subscription reads one topic. Next is not safe for concurrent use.
type Subscription struct {
	client *Client
	ctx    context.Context
	cancel context.CancelFunc
	stream grpc.BidiStreamingClient[eventbusv1.FetchRequest, eventbusv1.FetchResponse]
	topic  string
	batch  int32
	// pending is how many events were asked for and not yet received: a
	// new FetchRequest is sent only once it is zero and the events
	// received were all taken, so the server never holds more than batch
	// requested events for us and a slow consumer never buffers more.
	pending int32
	queue   []*eventbusv1.ConsumerEvent
	latest  []byte
}

// Subscribe opens a subscription to topic (a channel such as
// /data/ChangeEvents) from position, asking for batch events at a time
// (1 to MaxRequested; 0 is MaxRequested). Refusals come from Next, as the
// server answers the first request on the stream.
func (c *Client) Subscribe(ctx context.Context, topic string, from Position, batch int) (*Subscription, error) {
	if batch <= 0 || batch > MaxRequested {
		batch = MaxRequested
	}
	ctx, cancel := context.WithCancel(ctx)
	stream, err := c.api.Subscribe(ctx)
	if err != nil {
		cancel()
		return nil, classify("Subscribe "+topic, err, nil)
	}
	first := &eventbusv1.FetchRequest{TopicName: topic, NumRequested: int32(batch), ReplayPreset: eventbusv1.ReplayPreset_LATEST}
	switch {
	case from.ReplayID != nil:
		first.ReplayPreset, first.ReplayId = eventbusv1.ReplayPreset_CUSTOM, from.ReplayID
	case from.Earliest:
		first.ReplayPreset = eventbusv1.ReplayPreset_EARLIEST
	}
	s := &Subscription{client: c, ctx: ctx, cancel: cancel, stream: stream, topic: topic, batch: int32(batch)}
	if err := s.send(first); err != nil {
		cancel()
		return nil, err
	}
	return s, nil
}

func (s *Subscription) send(req *eventbusv1.FetchRequest) error {
	if err := s.stream.Send(req); err != nil {
		// The stream's own error comes with Recv.
		_, err = s.stream.Recv()
		return classify("Subscribe "+s.topic, err, s.stream.Trailer())
	}
	s.pending += req.NumRequested
	return nil
}

// Next returns the next change event, waiting for one. Keep-alive answers
// (no events) only move LatestReplayID. It fails with an error wrapping
// ErrReplayIDCorrupted, ErrAuthentication or an *Error (see Retryable)
// when the stream ends, or when an event cannot be decoded; after an
// error, open a new subscription.
func (s *Subscription) Next() (ChangeEvent, error) {
	for len(s.queue) == 0 {
		if s.pending == 0 {
			if err := s.send(&eventbusv1.FetchRequest{TopicName: s.topic, NumRequested: s.batch}); err != nil {
				return ChangeEvent{}, err
			}
		}
		resp, err := s.stream.Recv()
		if err != nil {
			return ChangeEvent{}, classify("Subscribe "+s.topic, err, s.stream.Trailer())
		}
		s.latest = resp.GetLatestReplayId()
		s.queue = resp.GetEvents()
		s.pending = max(s.pending-int32(len(s.queue)), 0)
	}
	next := s.queue[0]
	s.queue = s.queue[1:]
	d, err := s.client.decoderFor(s.ctx, next.GetEvent().GetSchemaId())
	if err != nil {
		return ChangeEvent{}, err
	}
	ev, err := d.decode(next.GetEvent().GetPayload())
	if err != nil {
		return ChangeEvent{}, fmt.Errorf("event %x: %w", next.GetReplayId(), err)
	}
	ev.ReplayID, ev.SchemaID = next.GetReplayId(), next.GetEvent().GetSchemaId()
	return ev, nil
}

// LatestReplayID is the newest replay id of the topic the server last
// reported, with events or in a keep-alive. Once every event received was
// written, a subscriber may resume from it.
func (s *Subscription) LatestReplayID() []byte { return s.latest }

// Close ends the subscription.
func (s *Subscription) Close() { s.cancel() }
