package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
	"github.com/tidemark/tidemark/postgres/search"
)

// directorySQL pages through record_search (kept by IndexSearch) newest
// change first, then joins the page to the live records for what they
// show and counts each row's badges. %s holds the keyset and filter
// conditions in use, each combination its own statement as in the event
// log.
const directorySQL = `
SELECT p.name, s.object_type, s.object_id, r.revision, r.updated_at, r.application_count,
       (SELECT count(*) FROM conflicts c
        WHERE c.tenant_id = @tenant_id AND c.provider_id = s.provider_id AND c.object_type = s.object_type
          AND c.object_id = s.object_id AND c.status = 'open'),
       (SELECT count(*) FROM events e
        WHERE e.tenant_id = @tenant_id AND e.provider_id = s.provider_id AND e.object_type = s.object_type
          AND e.object_id = s.object_id AND e.outcome = 'stale' AND e.received_at >= @stale_since),
       r.deleted_revision IS NOT NULL, ` + recordHeadline + `,
       s.updated_at, s.provider_id
FROM (
    SELECT s.* FROM record_search s
    WHERE s.tenant_id = @tenant_id%s
    ORDER BY s.updated_at DESC, s.object_id DESC, s.provider_id DESC, s.object_type DESC
    LIMIT @limit
) s
JOIN records r ON r.tenant_id = s.tenant_id AND r.provider_id = s.provider_id
    AND r.object_type = s.object_type AND r.object_id = s.object_id
JOIN providers p ON p.tenant_id = s.tenant_id AND p.id = s.provider_id
ORDER BY s.updated_at DESC, s.object_id DESC, s.provider_id DESC, s.object_type DESC`

const (
	directoryAfter         = `(s.updated_at, s.object_id, s.provider_id, s.object_type) < (@after_at, @after_id, @after_provider, @after_type)`
	directoryProvider      = `s.provider_id = (SELECT id FROM providers WHERE tenant_id = @tenant_id AND name = @provider)`
	directoryObjectType    = `s.object_type = @object_type`
	directoryOpenConflicts = `EXISTS (SELECT FROM conflicts c WHERE c.tenant_id = @tenant_id AND c.provider_id = s.provider_id
        AND c.object_type = s.object_type AND c.object_id = s.object_id AND c.status = 'open')`
	directoryFrom   = `s.updated_at >= @from`
	directoryBefore = `s.updated_at < @before`
	// An id matches by prefix, words through record_search_words.
	directorySearch = `(s.vector @@ websearch_to_tsquery('simple', @q) OR s.object_id LIKE @id_prefix)`
)

// A headline is the part of a snapshot that matched @q, with the matches
// between domain.HighlightStart and HighlightStop; empty without a search
// (@q NULL) or when only the record's id matched. jsonb's text escapes every
// control character, so no payload can hold the delimiters; < and > are
// swapped for two others around ts_headline, whose parser drops what looks
// like an HTML tag, so that the headline shows what the provider sent.
const (
	headlineOptions = `E'StartSel=\u0002, StopSel=\u0003, MaxWords=16, MinWords=6, MaxFragments=2, FragmentDelimiter=" … "'`
	// headlineOf + alias + headlineEnd is the headline of that row's snapshot.
	headlineOf  = `translate(ts_headline('simple', translate(`
	headlineEnd = `.snapshot::text, '<>', E'\u0004\u0005'),
        websearch_to_tsquery('simple', @q), ` + headlineOptions + `), E'\u0004\u0005', '<>')`
	recordHeadline = `CASE WHEN @q::text IS NULL THEN ''
        WHEN ` + search.RecordVector + ` @@ websearch_to_tsquery('simple', @q)
        THEN ` + headlineOf + `r` + headlineEnd + `
        ELSE '' END`
	eventHeadline = `CASE WHEN @q::text IS NULL THEN ''
        ELSE ` + headlineOf + `e` + headlineEnd + ` END`
)

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

type directoryCursor struct {
	UpdatedAt  time.Time `json:"t"`
	ObjectID   string    `json:"o"`
	ProviderID int64     `json:"p"`
	ObjectType string    `json:"y"`
}

// RecordDirectory implements domain.RecordService. It reads what
// IndexSearch has indexed: a change shows after its next run.
func (s *records) RecordDirectory(ctx context.Context, tenantID int64, q domain.RecordQuery, page domain.Page) ([]domain.RecordSummary, string, error) {
	if err := q.Validate(); err != nil {
		return nil, "", err
	}
	limit := pg.PageLimit(page)
	args := pgx.NamedArgs{"tenant_id": tenantID, "limit": limit + 1, "stale_since": time.Now().Add(-domain.StaleBadgeWindow),
		"q": nil}
	c := pg.NewConds(args)
	if page.Cursor != "" {
		var after directoryCursor
		if err := pg.DecodeCursor(page.Cursor, &after); err != nil {
			return nil, "", err
		}
		if after.UpdatedAt.IsZero() {
			return nil, "", pg.InvalidCursor()
		}
		c.Cond(directoryAfter)
		args["after_at"], args["after_id"], args["after_provider"], args["after_type"] =
			after.UpdatedAt, after.ObjectID, after.ProviderID, after.ObjectType
	}
	if q.Provider != "" {
		c.Add(directoryProvider, "provider", q.Provider)
	}
	if q.ObjectType != "" {
		c.Add(directoryObjectType, "object_type", q.ObjectType)
	}
	if q.OpenConflicts {
		c.Cond(directoryOpenConflicts)
	}
	if !q.From.IsZero() {
		c.Add(directoryFrom, "from", q.From)
	}
	if !q.Before.IsZero() {
		c.Add(directoryBefore, "before", q.Before)
	}
	if search := strings.TrimSpace(q.Search); search != "" {
		c.Add(directorySearch, "q", search)
		args["id_prefix"] = likePrefix(search)
	}
	rows, err := s.read.Query(ctx, fmt.Sprintf(directorySQL, c.SQL("      ")), customPlan, args)
	if err != nil {
		return nil, "", pg.Translate(err)
	}
	var keys []directoryCursor
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.RecordSummary, error) {
		var (
			r   domain.RecordSummary
			key directoryCursor
		)
		err := row.Scan(&r.Provider, &r.ObjectType, &r.ObjectID, &r.Revision, &r.UpdatedAt, &r.ApplicationCount,
			&r.Badges.OpenConflicts, &r.Badges.StaleEvents, &r.Badges.Deleted, &r.Headline, &key.UpdatedAt, &key.ProviderID)
		key.ObjectID, key.ObjectType = r.ObjectID, r.ObjectType
		keys = append(keys, key)
		return r, err
	})
	if err != nil {
		return nil, "", pg.Translate(err)
	}
	list, more := pg.Trim(list, limit)
	if !more {
		return list, "", nil
	}
	return list, pg.EncodeCursor(keys[limit-1]), nil
}

// likePrefix is a LIKE pattern matching text that starts with prefix.
func likePrefix(prefix string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(prefix) + "%"
}
