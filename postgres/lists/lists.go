// Package lists reads the event log and the records directory, the lists
// of the console's event history and records page and of the API's
// events and records: filtered, paged both ways on the read pool, counted
// when asked.
package lists

import (
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Lists reads the event log and the records directory.
type Lists struct{ read *pgxpool.Pool }

// New returns Lists reading on pools' read pool.
func New(pools pg.Pools) *Lists { return &Lists{read: pools.ForReads()} }

// customPlan runs a statement of the directory or the event log on the
// unnamed prepared statement, so that PostgreSQL plans every execution for
// its values. A cached statement switches to a generic plan after five
// executions, and a generic plan knows neither how many rows a search's
// words match nor how wide a time range is: in BenchmarkRecordSearch the
// event search for a word in a tenth of the snapshots went from 26 ms to
// 1.2 s (a bitmap of every match in every partition, then a sort), and the
// filtered directory from 25 to 160 ms. Planning costs about 10 ms on a
// warm connection; the description of the statement stays cached.
const customPlan = pgx.QueryExecModeCacheDescribe

// maxMatches is how many matched fields a row of a search shows.
const maxMatches = 3

// A headline is the part of a snapshot that matched @q, with the matches
// between domain.HighlightStart and HighlightStop; empty without a search
// (@q NULL) or when only the record's id matched. jsonb's text escapes every
// control character, so no payload can hold the delimiters; < and > are
// swapped for two others around ts_headline, whose parser drops what looks
// like an HTML tag, so that the headline shows what the provider sent. The
// API shows it; the console shows the matched fields (snapshot.Matches).
const (
	headlineOptions = `E'StartSel=\u0002, StopSel=\u0003, MaxWords=16, MinWords=6, MaxFragments=2, FragmentDelimiter=" … "'`
	// headlineOf + alias + headlineEnd is the headline of that row's snapshot.
	headlineOf  = `translate(ts_headline('simple', translate(`
	headlineEnd = `.snapshot::text, '<>', E'\u0004\u0005'),
        websearch_to_tsquery('simple', @q), ` + headlineOptions + `), E'\u0004\u0005', '<>')`
)
