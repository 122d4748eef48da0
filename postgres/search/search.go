// Package search indexes the words of records and events, which the
// directory and the event log search, behind their writes.
package search

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Indexer brings the search tables up to date (IndexSearch).
type Indexer struct{ pool *pgxpool.Pool }

// New returns an Indexer on pools' write pool.
func New(pools pg.Pools) *Indexer { return &Indexer{pool: pools.Write} }

// Every is how often serve runs IndexSearch; the directory shows a change
// at most about two periods after its commit.
const Every = 2 * time.Second

// searchIndexBatch is how many ids of a feed one transaction of
// IndexSearch reads.
const searchIndexBatch = 5000

// The words of a snapshot: string values only (keys and numbers are not
// searched), split as typed by the 'simple' configuration.
const (
	RecordVector = `to_tsvector('simple'::regconfig, r.snapshot)`
	EventVector  = `to_tsvector('simple'::regconfig, e.snapshot)`
)

const (
	searchProgressSQL = `SELECT scanned_id, gaps, pending_id, pending_xids FROM search_progress WHERE feed = @feed FOR UPDATE`
	// Transactions of other databases cannot write here and are left out.
	searchRunningSQL = `SELECT coalesce(array_agg(backend_xid::text::bigint), '{}') FROM pg_stat_activity
    WHERE datname = current_database() AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()`
	searchSaveSQL = `UPDATE search_progress SET scanned_id = @scanned_id, gaps = @gaps,
    pending_id = @pending_id, pending_xids = @pending_xids WHERE feed = @feed`
)

// searchFeed is a table IndexSearch follows by a sequence's ids, and how
// it indexes a range of them.
type searchFeed struct {
	name string // search_progress.feed
	// sequenceSQL reads the sequence's last value; it runs before the
	// running transactions are read (two statements): every transaction
	// that drew an id up to it already had its xid, and is among them
	// until it ends. (An id is drawn by the insert of the row; ingest and
	// replay write deliveries and claims before events and revisions, so
	// their transaction has its xid by then.)
	sequenceSQL string
	// batchEndSQL reads the next @batch ids after @after: the last one, how
	// many there are, and the runs of ids missing between them, each as
	// the id before it and its last.
	batchEndSQL string
	indexSQL    string // indexes the ids in (@lo, @hi]
	// alsoSQL keeps another table from the same ids (lead_search), whose
	// rows are not counted as indexed.
	alsoSQL string
}

var searchFeeds = []searchFeed{
	{name: "records", sequenceSQL: recordFeedSequenceSQL, batchEndSQL: recordFeedBatchEndSQL, indexSQL: RecordIndexSQL},
	{name: "events", sequenceSQL: EventSequenceSQL, batchEndSQL: eventFeedBatchEndSQL, indexSQL: eventSearchIndexSQL, alsoSQL: leadIndexSQL},
}

const (
	recordFeedSequenceSQL = `SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('accepted_revisions', 'id')), 0)`
	recordFeedBatchEndSQL = `SELECT coalesce(max(id), @after), count(*), ` + batchGaps + ` FROM (
    SELECT id, lag(id, 1, @after) OVER (ORDER BY id) AS prev FROM (
        SELECT id FROM accepted_revisions WHERE id > @after ORDER BY id LIMIT @batch) ids) b`
	// EventSequenceSQL is exported, as RecordIndexSQL is, for the seeding
	// of the directory benchmark, which indexes in bulk.
	EventSequenceSQL     = `SELECT coalesce(pg_sequence_last_value('events_search_seq'), 0)`
	eventFeedBatchEndSQL = `SELECT coalesce(max(id), @after), count(*), ` + batchGaps + ` FROM (
    SELECT id, lag(id, 1, @after) OVER (ORDER BY id) AS prev FROM (
        SELECT search_id AS id FROM events WHERE search_id > @after ORDER BY search_id LIMIT @batch) ids) b`
	batchGaps = `coalesce(array_agg(prev ORDER BY id) FILTER (WHERE id > prev + 1), '{}'),
    coalesce(array_agg(id - 1 ORDER BY id) FILTER (WHERE id > prev + 1), '{}')`
)

// RecordIndexSQL indexes the records that have an accepted revision
// with an id in (@lo, @hi] and whose last change or application count
// differ from what record_search holds, so reading a range twice costs
// reads only.
const RecordIndexSQL = `
WITH changed AS (
    SELECT DISTINCT tenant_id, provider_id, object_type, object_id FROM accepted_revisions
    WHERE id > @lo AND id <= @hi
)
INSERT INTO record_search AS s (tenant_id, provider_id, object_type, object_id, updated_at, application_count, vector)
SELECT r.tenant_id, r.provider_id, r.object_type, r.object_id, r.updated_at, r.application_count,
       ` + RecordVector + `
FROM changed c
JOIN records r ON r.tenant_id = c.tenant_id AND r.provider_id = c.provider_id
    AND r.object_type = c.object_type AND r.object_id = c.object_id
WHERE NOT EXISTS (SELECT FROM record_search o
                  WHERE o.tenant_id = r.tenant_id AND o.provider_id = r.provider_id AND o.object_type = r.object_type
                    AND o.object_id = r.object_id AND o.updated_at = r.updated_at
                    AND o.application_count = r.application_count)
ORDER BY 1, 2, 3, 4
ON CONFLICT (tenant_id, provider_id, object_type, object_id) DO UPDATE SET
    updated_at = EXCLUDED.updated_at, application_count = EXCLUDED.application_count, vector = EXCLUDED.vector`

// eventSearchIndexSQL indexes the words of the events whose search_id is in
// (@lo, @hi]; an event read twice is indexed once, and its words are not
// computed again.
const eventSearchIndexSQL = `
INSERT INTO event_search (tenant_id, received_at, delivery_id, seq, provider_id, object_type, action, object_id, outcome, vector)
SELECT e.tenant_id, e.received_at, e.delivery_id, e.seq, e.provider_id, e.object_type, e.action, e.object_id, e.outcome, ` + EventVector + `
FROM events e
WHERE e.search_id > @lo AND e.search_id <= @hi AND e.snapshot IS NOT NULL
  AND NOT EXISTS (SELECT FROM event_search o WHERE o.tenant_id = e.tenant_id AND o.received_at = e.received_at
                  AND o.delivery_id = e.delivery_id AND o.seq = e.seq)
ON CONFLICT (tenant_id, received_at, delivery_id, seq) DO NOTHING`

// EventLockSQL makes an erasure and IndexSearch's pass over events
// wait for each other, so that no pass indexes words an erasure removes.
const EventLockSQL = `SELECT FROM search_progress WHERE feed = 'events' FOR UPDATE`

// searchProgress is IndexSearch's position in a feed (table
// search_progress): the ids up to scanned were read once, and of those the
// gaps were missing then.
type searchProgress struct {
	scanned     int64
	gaps        []idGap
	pendingID   *int64
	pendingXids []int64
}

// IndexSearch brings record_search, which RecordDirectory reads, and
// event_search, which EventLog's word search reads, up to date with the
// records changed and the events stored since its previous run, and
// returns how many rows it indexed. serve runs it every Every;
// a test that ingests and then searches calls it in between. Calls wait
// for each other.
//
// Changes are found by id: accepted revisions' and events' search_id. An
// id is drawn before its transaction commits, so a range read once may
// miss a row committed later: the ids it missed are read again once every
// transaction that was running when it was read has ended.
func (ix *Indexer) IndexSearch(ctx context.Context) (int, error) {
	total := 0
	for _, feed := range searchFeeds {
		for {
			n, more, err := ix.indexSearchBatch(ctx, feed)
			total += n
			if err != nil {
				return total, pg.Translate(err)
			}
			if !more {
				break
			}
		}
	}
	return total, nil
}

// indexSearchBatch runs one transaction of a feed: the gaps that became
// settled, then up to searchIndexBatch new ids. more reports a full batch.
func (ix *Indexer) indexSearchBatch(ctx context.Context, feed searchFeed) (indexed int, more bool, err error) {
	err = pg.WithTx(ctx, ix.pool, func(tx pgx.Tx) error {
		var (
			p    searchProgress
			gaps idRanges
		)
		if err := tx.QueryRow(ctx, searchProgressSQL, pgx.NamedArgs{"feed": feed.name}).Scan(&p.scanned, &gaps, &p.pendingID, &p.pendingXids); err != nil {
			return err
		}
		p.gaps = fromRanges(gaps)
		var (
			last    int64
			running []int64
		)
		if err := tx.QueryRow(ctx, feed.sequenceSQL).Scan(&last); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, searchRunningSQL).Scan(&running); err != nil {
			return err
		}
		index := func(g idGap) error {
			if g.through <= g.after {
				return nil
			}
			tag, err := tx.Exec(ctx, feed.indexSQL, pgx.NamedArgs{"lo": g.after, "hi": g.through})
			indexed += int(tag.RowsAffected())
			if err == nil && feed.alsoSQL != "" {
				_, err = tx.Exec(ctx, feed.alsoSQL, pgx.NamedArgs{"lo": g.after, "hi": g.through})
			}
			return err
		}
		if p.pendingID != nil && !slices.ContainsFunc(p.pendingXids, func(x int64) bool { return slices.Contains(running, x) }) {
			// Every id up to pendingID is committed or gone: read again
			// the ones that were missing.
			var settled []idGap
			settled, p.gaps = splitGaps(p.gaps, *p.pendingID)
			for _, g := range settled {
				if err := index(g); err != nil {
					return err
				}
			}
			p.pendingID, p.pendingXids = nil, nil
		}
		var (
			end, rows      int64
			after, through []int64
		)
		if err := tx.QueryRow(ctx, feed.batchEndSQL, pgx.NamedArgs{"after": p.scanned, "batch": searchIndexBatch}).Scan(&end, &rows, &after, &through); err != nil {
			return err
		}
		if err := index(idGap{p.scanned, end}); err != nil {
			return err
		}
		more = rows == searchIndexBatch
		p.scanned = end
		for i := range after {
			p.gaps = append(p.gaps, idGap{after[i], through[i]})
		}
		p.gaps = boundGaps(p.gaps)
		if p.pendingID == nil && len(p.gaps) > 0 {
			p.pendingID, p.pendingXids = &last, running
		}
		_, err := tx.Exec(ctx, searchSaveSQL, pgx.NamedArgs{"feed": feed.name, "scanned_id": p.scanned, "gaps": toRanges(p.gaps),
			"pending_id": p.pendingID, "pending_xids": p.pendingXids})
		return err
	})
	return indexed, more, err
}
