package ingest

import (
	"testing"
	"time"
)

// TestQueuedEventsFollowPace: how many events may wait ahead of a delivery
// follows what the committer has been writing per second, so a tenant
// sending large batches to a fast committer is not refused, and a slow
// committer refuses early rather than letting deliveries outlive their
// budget in the queue.
func TestQueuedEventsFollowPace(t *testing.T) {
	t.Parallel()
	var q groupQueues
	in3s := time.Now().Add(3 * time.Second)
	if got := q.queuedEventsAllowed(in3s, true); got != minQueuedEvents {
		t.Errorf("before any group: %d, want %d", got, minQueuedEvents)
	}
	q.measured(2000, 200*time.Millisecond) // 10 000 events/s
	if got := q.queuedEventsAllowed(in3s, true); got < 14000 || got > 15000 {
		t.Errorf("at 10 000 events/s with 3 s left: %d, want about 15 000", got)
	}
	if got := q.queuedEventsAllowed(time.Time{}, false); got != minQueuedEvents {
		t.Errorf("no deadline: %d, want %d", got, minQueuedEvents)
	}
	for range 20 {
		q.measured(100, time.Second) // the committer slows to 100 events/s
	}
	if got := q.queuedEventsAllowed(in3s, true); got != minQueuedEvents {
		t.Errorf("at 100 events/s: %d, want the floor %d", got, minQueuedEvents)
	}
}
