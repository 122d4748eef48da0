package ingest

import (
	"slices"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// Admission: a delivery joins its tenant's queue unless the queue is
// really overloaded. A short queue is never refused: up to
// minQueuedEvents (two groups' worth) may always wait, whatever the
// committer's pace. Past that, a delivery waits only if the committer, at
// the pace its recent groups showed, would reach it within half of what is
// left of its budget (the other half is for its own group); otherwise it is
// refused at once (503 with Retry-After) rather than accepted to time out
// in the queue while the ones before it time out too.
//
// The pace is the median of the groups written within paceWindow, so that
// one slow group (a checkpoint, a row lock another node held, a cold plan)
// is one sample among many and turns no short burst into refusals.

const (
	// minQueuedEvents is the fewest events one tenant may have waiting in
	// one process.
	minQueuedEvents = 2 * maxGroupEvents
	// maxQueuedEvents bounds the events one tenant holds in one process's
	// memory waiting for its committer, however fast it writes.
	maxQueuedEvents = 32 * maxGroupEvents
	// paceWindow is how far back the pace looks, and paceSamples how many
	// groups it keeps at most.
	paceWindow  = 10 * time.Second
	paceSamples = 64
)

// paceSample is one committed group's events per second.
type paceSample struct {
	at        time.Time
	perSecond float64
}

// admit refuses a delivery of events events that would join queue, with
// the reason, or returns nil. Called with q.mu held.
func (w *Writer) admit(q *groupQueues, queue []*ingestJob, events int, deadline time.Time, hasDeadline bool) error {
	if len(queue) >= w.maxQueued {
		return domain.RefuseOverload(domain.OverloadQueueFull, "%d deliveries of this tenant are already waiting to be written", len(queue))
	}
	if len(queue) == 0 {
		return nil
	}
	waiting := groupEvents(queue) + events
	if waiting > maxQueuedEvents {
		return domain.RefuseOverload(domain.OverloadMemory, "%d events of this tenant are already waiting to be written", waiting-events)
	}
	// The pace is read only past the floor: a short queue, as most are,
	// costs no sort of the samples on the way in.
	if waiting > minQueuedEvents && waiting > q.queuedEventsAllowed(deadline, hasDeadline) {
		return domain.RefuseOverload(domain.OverloadBudget,
			"%d events of this tenant are waiting, more than it is writing within a delivery's time", waiting-events)
	}
	return nil
}

// queuedEventsAllowed is how many events may wait ahead of a delivery
// that must be answered by deadline: what the committer writes, at its
// recent pace, in half of the time left, and never fewer than
// minQueuedEvents. Called with mu held.
func (q *groupQueues) queuedEventsAllowed(deadline time.Time, ok bool) int {
	pace := q.pace(time.Now())
	if !ok || pace == 0 {
		return minQueuedEvents
	}
	return max(minQueuedEvents, int(pace*time.Until(deadline).Seconds()/2))
}

// pace is the median events per second of the groups committed within
// paceWindow before now, 0 when there is none. Called with mu held.
func (q *groupQueues) pace(now time.Time) float64 {
	var recent []float64
	for _, s := range q.samples {
		if now.Sub(s.at) <= paceWindow {
			recent = append(recent, s.perSecond)
		}
	}
	if len(recent) == 0 {
		return 0
	}
	slices.Sort(recent)
	return recent[len(recent)/2]
}

// measured adds a committed group to the pace's samples.
func (q *groupQueues) measured(events int, took time.Duration) {
	if took <= 0 {
		return
	}
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.samples = append(q.samples, paceSample{at: now, perSecond: float64(events) / took.Seconds()})
	old := 0
	for old < len(q.samples) && (len(q.samples)-old > paceSamples || now.Sub(q.samples[old].at) > paceWindow) {
		old++
	}
	q.samples = slices.Delete(q.samples, 0, old)
}
