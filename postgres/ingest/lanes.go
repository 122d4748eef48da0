package ingest

import (
	"context"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Lanes. A SaaS's webhooks arrive spread over its customers, each sparse:
// with a committer per tenant, fifty tenants made groups of one delivery
// each, every one paying a whole transaction. So a process has a few lanes,
// each tenant always in the same one (its id modulo their number, which
// spreads consecutive ids evenly), and a lane's group holds whichever of
// its tenants' deliveries are waiting. Its statements are the same, and as
// many, whatever the number of tenants in it: every row carries its tenant.
//
// On Citus a group stays on one tenant, each tenant its own lane as before:
// a statement over several tenants' rows would write several shards, which
// Citus commits in two phases (docs/scale.md).

// defaultLanes is the number of lanes when none is set: one per 16
// connections of the ingest pool, whose size says how many transactions
// the database is meant to run at once. One lane's committer already keeps
// a database of a few cores busy, as its next group gathers while one is
// written: on 2 cores one lane wrote 50 tenants' deliveries 1.5 times as
// fast as four lanes (docs/scale.md).
func defaultLanes(maxConns int32) int {
	return max(1, int(maxConns)/16)
}

// groupQueues holds the deliveries waiting for their lane's committer.
type groupQueues struct {
	mu sync.Mutex
	// pending is each tenant's deliveries in arrival order; a tenant is
	// in it while it has some waiting.
	pending map[int64][]*ingestJob
	// lanes holds the lanes whose committer runs, by key (laneOf).
	lanes map[int64]*lane
	// parked are the tenants whose failed group's deliveries are being
	// written alone (committer.go): their lane passes over them.
	parked map[int64]bool
	// samples are the recent groups' paces (admission.go).
	samples []paceSample
	// draining refuses new deliveries while Drain waits for the
	// committers to finish the ones they hold.
	draining bool
}

// lane is one committer's tenants that have deliveries waiting, in the
// order it serves them: the next group starts with the first.
type lane struct {
	turns []int64
}

// laneOf is the key of the lane of a tenant's deliveries; the write
// has asked distributed first (writer.go).
func (w *Writer) laneOf(tenantID int64) int64 {
	if w.onCitus() {
		return tenantID
	}
	return tenantID % int64(w.lanes)
}

// citusSQL tells whether the database has Citus. Sent unprepared: every
// ingest connection prepares the ingest statements and no others.
const citusSQL = `SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')`

// Whether the database has Citus, in Writer.citus: not asked yet, or the
// answer.
const (
	citusUnknown int32 = iota
	citusAbsent
	citusPresent
)

// distributed asks once whether the database has Citus; an error is
// returned and asked again by the next write, never taken for an answer.
func (w *Writer) distributed(ctx context.Context) error {
	if w.citus.Load() != citusUnknown {
		return nil
	}
	var citus bool
	if err := w.pool.QueryRow(ctx, citusSQL, pgx.QueryExecModeSimpleProtocol).Scan(&citus); err != nil {
		return pg.Translate(err)
	}
	if citus {
		w.citus.Store(citusPresent)
	} else {
		w.citus.Store(citusAbsent)
	}
	return nil
}

// onCitus is what distributed found: every write asks it first.
func (w *Writer) onCitus() bool { return w.citus.Load() == citusPresent }

// enqueue adds job to its tenant's queue in its lane, and reports
// whether the lane has no committer yet: the caller starts one. Called
// with mu held.
func (q *groupQueues) enqueue(job *ingestJob) (start bool) {
	l, running := q.lane(job.lane)
	tenantID := job.p.TenantID
	queue := q.pending[tenantID]
	if len(queue) == 0 {
		l.turns = append(l.turns, tenantID)
	}
	q.pending[tenantID] = append(queue, job)
	return !running
}

// init makes the maps of a zero groupQueues. Called with mu held.
func (q *groupQueues) init() {
	if q.pending == nil {
		q.pending, q.lanes, q.parked = map[int64][]*ingestJob{}, map[int64]*lane{}, map[int64]bool{}
	}
}

// lane returns the lane keyed key, made when it has no committer yet
// (running false): the caller starts one. Called with mu held.
func (q *groupQueues) lane(key int64) (l *lane, running bool) {
	q.init()
	if l, running = q.lanes[key]; !running {
		l = &lane{}
		q.lanes[key] = l
	}
	return l, running
}

// takeGroup removes the next group of the lane keyed key from its tenants'
// queues: one delivery of each waiting tenant in turn, each tenant's in
// arrival order, as many as fit the bounds and at least one. A tenant
// whose next delivery does not fit comes first in the next group; a parked
// one is passed over. With nothing to take the lane is removed, and its
// committer stops. Called with mu held.
func (q *groupQueues) takeGroup(key int64) []*ingestJob {
	l := q.lanes[key]
	var group []*ingestJob
	events, passed := 0, 0
	for passed < len(l.turns) {
		tenantID := l.turns[0]
		if q.parked[tenantID] {
			l.turns = append(l.turns[1:], tenantID)
			passed++
			continue
		}
		queue := q.pending[tenantID]
		job := queue[0]
		if len(group) > 0 && (len(group) == maxGroupDeliveries || events+len(job.events) > maxGroupEvents) {
			break
		}
		group, events, passed = append(group, job), events+len(job.events), 0
		l.turns = l.turns[1:]
		if queue = queue[1:]; len(queue) == 0 {
			delete(q.pending, tenantID)
		} else {
			q.pending[tenantID] = queue
			l.turns = append(l.turns, tenantID)
		}
	}
	if len(group) == 0 {
		delete(q.lanes, key) // parked tenants take their turn again when unparked
	}
	return group
}

// park has the lanes pass over these tenants until unpark.
func (q *groupQueues) park(tenants []int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.init()
	for _, t := range tenants {
		q.parked[t] = true
	}
}

// unpark gives a parked tenant its turns again in the lane keyed key, and
// reports whether that lane has no committer while the tenant has
// deliveries waiting: the caller starts one.
func (q *groupQueues) unpark(key, tenantID int64) (start bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.parked, tenantID)
	if len(q.pending[tenantID]) == 0 {
		return false
	}
	l, running := q.lane(key)
	if !slices.Contains(l.turns, tenantID) {
		l.turns = append(l.turns, tenantID)
	}
	return !running
}
