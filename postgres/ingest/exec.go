package ingest

import (
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
)

// queueDelivery queues the statements of one delivery on batch, counting
// its outcomes in counter shard shard, bounded as b says; the results are
// filled in as the batch is read.
func (w *Writer) queueDelivery(batch *pgx.Batch, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event, shard int, b bounds) []domain.Result {
	job := &ingestJob{d: d, p: p, events: events}
	w.queueGroup(batch, []*ingestJob{job}, shard, b)
	return job.results
}

// queueGroup queues the plan of a group of deliveries, counting from
// counter shard shard on, bounded as b says; each job's results are
// filled in as the batch is read. It returns the number of rounds.
func (w *Writer) queueGroup(batch *pgx.Batch, group []*ingestJob, shard int, b bounds) (rounds int) {
	for _, job := range group {
		job.results = make([]domain.Result, len(job.events))
	}
	citus := w.onCitus()
	for _, s := range plan(group, shard, w.counterShards, b) {
		if s.stmt != stChanges || !w.withoutChanges {
			s.queue(batch, citus)
		}
		if s.decides() {
			rounds++
		}
	}
	return rounds
}

// queue queues the step's statement on batch, in the form for Citus or
// PostgreSQL; an outcome step reads the outcomes of its round into their
// jobs' results.
func (s step) queue(batch *pgx.Batch, citus bool) {
	st := ingestStatements[s.stmt].sent(citus)
	q := batch.Queue(st.SQL, st.Args(s.args)...)
	if s.decides() {
		q.Query(s.answer)
	}
}

// answer reads the outcome statement's rows, one per event of the round.
func (s step) answer(rows pgx.Rows) error {
	answered := 0
	for rows.Next() {
		var i int
		var reason *string
		var r domain.Result
		if err := rows.Scan(&i, &r.Outcome, &reason, &r.CurrentRevision, &r.ConflictID); err != nil {
			return fmt.Errorf("event outcome: %w", err)
		}
		ev := s.round[i-1]
		r.EventID, r.ObjectType, r.ObjectID, r.Revision = ev.e.EventID, ev.e.Scope.ObjectType, ev.e.ObjectID, ev.e.Revision
		if reason != nil {
			r.Reason = *reason
		}
		ev.job.results[ev.n] = r
		answered++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if answered != len(s.round) {
		return fmt.Errorf("%d outcomes for %d events", answered, len(s.round))
	}
	return nil
}
