package main

import (
	"slices"
	"time"
)

// committedChange is a change as the database holds it: the reference the
// readers' arrivals are checked against.
type committedChange struct {
	id string
	at time.Time // committed_at
}

// window is the measured part of a run: from the end of the warm-up until
// the senders stopped.
type window struct{ start, end time.Time }

// drainLimit is how soon after the senders stop a reader that keeps up
// has every change.
const drainLimit = 5 * time.Second

// readerStats is what one reader got of a run's changes.
type readerStats struct {
	name string
	// latencies are from commit to first arrival of the changes committed
	// in the window, sorted.
	latencies []time.Duration
	// backlog is the number of changes committed and not yet arrived, each
	// second from the window's start, and last at its end.
	backlog    []int
	early, end int // the largest backlog in the window's first half; at its end
	// drained is from the window's end until the last change arrived.
	drained    time.Duration
	duplicates int // arrivals of a change already arrived
	missing    int // changes that had not arrived when the readers stopped
}

// keepsUp: no growing lag. The backlog when the senders stopped is no
// larger than early in the run, and drains soon after.
func (s readerStats) keepsUp() bool {
	return s.missing == 0 && s.end <= s.early && s.drained <= drainLimit
}

// readerStatsOf compares a reader's arrivals with every change committed.
func readerStatsOf(name string, changes []committedChange, got []sighting, w window) readerStats {
	s := readerStats{name: name}
	first := make(map[string]time.Time, len(got))
	for _, x := range got {
		if at, ok := first[x.id]; ok {
			s.duplicates++
			if x.seen.After(at) {
				continue
			}
		}
		first[x.id] = x.seen
	}
	committed := make([]time.Time, 0, len(changes))
	arrived := make([]time.Time, 0, len(changes))
	for _, c := range changes {
		committed = append(committed, c.at)
		at, ok := first[c.id]
		if !ok {
			s.missing++
			continue
		}
		arrived = append(arrived, at)
		s.drained = max(s.drained, at.Sub(w.end))
		if !c.at.Before(w.start) && !c.at.After(w.end) {
			s.latencies = append(s.latencies, at.Sub(c.at))
		}
	}
	slices.Sort(s.latencies)
	slices.SortFunc(committed, time.Time.Compare)
	slices.SortFunc(arrived, time.Time.Compare)
	half := w.start.Add(w.end.Sub(w.start) / 2)
	for t := w.start; t.Before(w.end); t = t.Add(time.Second) {
		b := backlogAt(committed, arrived, t)
		s.backlog = append(s.backlog, b)
		if !t.After(half) {
			s.early = max(s.early, b)
		}
	}
	s.end = backlogAt(committed, arrived, w.end)
	s.backlog = append(s.backlog, s.end)
	return s
}

// backlogAt is how many changes had committed by t and not yet arrived;
// both lists are sorted, and a change arrives after it commits.
func backlogAt(committed, arrived []time.Time, t time.Time) int {
	return upTo(committed, t) - upTo(arrived, t)
}

// upTo is how many of sorted times are not after t.
func upTo(sorted []time.Time, t time.Time) int {
	n, _ := slices.BinarySearchFunc(sorted, t, func(x, t time.Time) int {
		if x.After(t) {
			return 1
		}
		return -1
	})
	return n
}

// committedIn counts the changes committed in w.
func committedIn(changes []committedChange, w window) int {
	n := 0
	for _, c := range changes {
		if !c.at.Before(w.start) && !c.at.After(w.end) {
			n++
		}
	}
	return n
}
