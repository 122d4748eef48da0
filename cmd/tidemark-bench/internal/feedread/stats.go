package feedread

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/stream"
)

// CommittedChange is a change as the database holds it: the reference the
// readers' arrivals are checked against.
type CommittedChange struct {
	ID string
	At time.Time // committed_at
}

// ReadCommitted reads every change of the database conn is on.
func ReadCommitted(ctx context.Context, conn *pgx.Conn) ([]CommittedChange, error) {
	rows, err := conn.Query(ctx, `SELECT tenant_id, position, committed_at FROM changes`)
	if err != nil {
		return nil, err
	}
	var c stream.Change
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (CommittedChange, error) {
		var at time.Time
		err := row.Scan(&c.TenantID, &c.Position, &at)
		return CommittedChange{ID: c.ID(), At: at}, err
	})
}

// Window is the measured part of a run: from the end of the warm-up until
// the senders stopped.
type Window struct{ Start, End time.Time }

// DrainLimit is how soon after the senders stop a reader that keeps up
// has every change.
const DrainLimit = 5 * time.Second

// Stats is what one reader got of a run's changes.
type Stats struct {
	Name string
	// Latencies are from commit to first arrival of the changes committed
	// in the window, sorted.
	Latencies []time.Duration
	// Backlog is the number of changes committed and not yet arrived, each
	// second from the window's start, and last at its end.
	Backlog    []int
	Early, End int // the largest backlog in the window's first half; at its end
	// Drained is from the window's end until the last change arrived.
	Drained    time.Duration
	Duplicates int // arrivals of a change already arrived
	Missing    int // changes that had not arrived when the readers stopped
}

// KeepsUp: no growing lag. The backlog when the senders stopped is no
// larger than early in the run, and drains soon after.
func (s Stats) KeepsUp() bool {
	return s.Missing == 0 && s.End <= s.Early && s.Drained <= DrainLimit
}

// statsOf compares a reader's arrivals with every change committed.
func statsOf(name string, changes []CommittedChange, got []sighting, w Window) Stats {
	s := Stats{Name: name}
	first := make(map[string]time.Time, len(got))
	for _, x := range got {
		if at, ok := first[x.id]; ok {
			s.Duplicates++
			if x.seen.After(at) {
				continue
			}
		}
		first[x.id] = x.seen
	}
	committed := make([]time.Time, 0, len(changes))
	arrived := make([]time.Time, 0, len(changes))
	for _, c := range changes {
		committed = append(committed, c.At)
		at, ok := first[c.ID]
		if !ok {
			s.Missing++
			continue
		}
		arrived = append(arrived, at)
		s.Drained = max(s.Drained, at.Sub(w.End))
		if !c.At.Before(w.Start) && !c.At.After(w.End) {
			s.Latencies = append(s.Latencies, at.Sub(c.At))
		}
	}
	slices.Sort(s.Latencies)
	slices.SortFunc(committed, time.Time.Compare)
	slices.SortFunc(arrived, time.Time.Compare)
	half := w.Start.Add(w.End.Sub(w.Start) / 2)
	for t := w.Start; t.Before(w.End); t = t.Add(time.Second) {
		b := backlogAt(committed, arrived, t)
		s.Backlog = append(s.Backlog, b)
		if !t.After(half) {
			s.Early = max(s.Early, b)
		}
	}
	s.End = backlogAt(committed, arrived, w.End)
	s.Backlog = append(s.Backlog, s.End)
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

// CommittedIn counts the changes committed in w.
func CommittedIn(changes []CommittedChange, w Window) int {
	n := 0
	for _, c := range changes {
		if !c.At.Before(w.Start) && !c.At.After(w.End) {
			n++
		}
	}
	return n
}
