package pubsubtest

import (
	"encoding/binary"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub/eventbusv1"
)

// Replay ids are opaque to clients ("Replaying an Event Stream": never
// compute one); the fake's are a marker byte and the event's position.
const replayMarker = 0xfa

func replayID(pos int) []byte {
	b := make([]byte, 9)
	b[0] = replayMarker
	binary.BigEndian.PutUint64(b[1:], uint64(pos))
	return b
}

func position(id []byte) (int, bool) {
	if len(id) != 9 || id[0] != replayMarker {
		return 0, false
	}
	return int(binary.BigEndian.Uint64(id[1:])), true
}

// Expire drops every event up to and including replay id from retention,
// as 72 hours would: a subscription from an earlier one is refused with
// the corrupted-replay error, EARLIEST starts after it.
func (s *Server) Expire(id []byte) {
	pos, ok := position(id)
	if !ok {
		panic("pubsubtest: Expire of a replay id the fake did not make")
	}
	s.mu.Lock()
	s.expired = max(s.expired, pos+1)
	s.mu.Unlock()
}

// Subscribe serves one subscription. The first FetchRequest names the
// topic and the replay position; every request adds its num_requested to
// what the stream may be sent. Events go out as they are published, at
// most as many as requested; after keepAlive without any, an answer with
// no events, the latest replay id and the pending count.
func (s *Server) Subscribe(stream eventbusv1.PubSub_SubscribeServer) error {
	ctx := stream.Context()
	if err := s.authorize(ctx); err != nil {
		return err
	}
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.counts.Subscribes++
	s.counts.Open++
	s.counts.MaxOpen = max(s.counts.MaxOpen, s.counts.Open)
	defer func() {
		s.mu.Lock()
		s.counts.Open--
		s.mu.Unlock()
	}()
	s.counts.FetchRequests++
	cursor := len(s.log)
	switch first.GetReplayPreset() {
	case eventbusv1.ReplayPreset_EARLIEST:
		cursor = s.expired
	case eventbusv1.ReplayPreset_CUSTOM:
		pos, ok := position(first.GetReplayId())
		if !ok || pos < s.expired || pos >= len(s.log) {
			s.mu.Unlock()
			return s.refusal(ctx, codes.InvalidArgument, CodeReplayIDCorrupted,
				"The Replay ID validation failed. Ensure that the Replay ID is valid.")
		}
		cursor = pos + 1
	}
	s.mu.Unlock()
	topic := first.GetTopicName()
	if _, err := s.GetTopic(ctx, &eventbusv1.TopicRequest{TopicName: topic}); err != nil {
		return err
	}

	requests := make(chan int32)
	go func() {
		defer close(requests)
		for {
			req, err := stream.Recv()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.counts.FetchRequests++
			s.mu.Unlock()
			select {
			case requests <- req.GetNumRequested():
			case <-ctx.Done():
				return
			}
		}
	}()
	pending := 0
	request := func(n int32) {
		pending += int(n)
		s.mu.Lock()
		s.counts.MaxOutstanding = max(s.counts.MaxOutstanding, pending)
		s.mu.Unlock()
	}
	request(first.GetNumRequested())
	idle := time.NewTimer(s.keepAlive)
	defer idle.Stop()
	for {
		s.mu.Lock()
		var batch []*eventbusv1.ConsumerEvent
		for ; cursor < len(s.log) && len(batch) < pending; cursor++ {
			if e := s.log[cursor]; s.inTopic(e.entity, topic) {
				batch = append(batch, &eventbusv1.ConsumerEvent{ReplayId: replayID(cursor),
					Event: &eventbusv1.ProducerEvent{Id: fmt.Sprintf("fake-event-%d", cursor), SchemaId: e.schemaID, Payload: e.payload}})
			}
		}
		latest := replayID(max(len(s.log)-1, 0))
		changed := s.changed
		s.counts.Delivered += len(batch)
		s.mu.Unlock()
		if len(batch) > 0 {
			pending -= len(batch)
			if err := stream.Send(&eventbusv1.FetchResponse{Events: batch, LatestReplayId: batch[len(batch)-1].ReplayId,
				PendingNumRequested: int32(pending)}); err != nil {
				return err
			}
			idle.Reset(s.keepAlive)
			continue
		}
		select {
		case n, ok := <-requests:
			if !ok {
				return nil
			}
			request(n)
		case <-changed:
		case <-idle.C:
			s.mu.Lock()
			s.counts.KeepAlives++
			s.mu.Unlock()
			if err := stream.Send(&eventbusv1.FetchResponse{LatestReplayId: latest, PendingNumRequested: int32(pending)}); err != nil {
				return err
			}
			idle.Reset(s.keepAlive)
		case <-ctx.Done():
			return nil
		}
	}
}
