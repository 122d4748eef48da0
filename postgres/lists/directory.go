package lists

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/snapshot"
	"github.com/tidemark/tidemark/postgres/internal/pg"
	"github.com/tidemark/tidemark/postgres/search"
)

// directorySQL pages through record_search and lead_search (kept by
// IndexSearch) newest change first, each along its own index, then joins
// the page to the live records for what they show (a lead has none: its
// row has what it shows) and counts each row's badges. The first %s holds
// the keyset and filter conditions in use on record_search, the second the
// same on lead_search, each combination its own statement as in the event
// log. Every table is filtered by @tenant_id itself, joins included, which
// is what lets Citus send the statement to the tenant's worker.
const directorySQL = `
SELECT p.name, s.object_type, s.object_id, coalesce(r.revision, ` + forgotten + `), coalesce(r.updated_at, s.updated_at),
       coalesce(r.application_count, s.application_count),
       (SELECT count(*) FROM conflicts c
        WHERE c.tenant_id = @tenant_id AND c.provider_id = s.provider_id AND c.object_type = s.object_type
          AND c.object_id = s.object_id AND c.status = 'open'),
       (SELECT count(*) FROM events e
        WHERE e.tenant_id = @tenant_id AND e.provider_id = s.provider_id AND e.object_type = s.object_type
          AND e.object_id = s.object_id AND e.outcome = 'stale' AND e.received_at >= @stale_since),
       coalesce(r.deleted_revision IS NOT NULL, false), ` + recordHeadline + `,
       s.updated_at, s.provider_id, coalesce(r.snapshot, s.snapshot)
FROM (
    (SELECT s.tenant_id, s.provider_id, s.object_type, s.object_id, s.updated_at, s.application_count, NULL::jsonb AS snapshot
     FROM record_search s
     WHERE s.tenant_id = @tenant_id%s
     ORDER BY s.updated_at DESC, s.object_id DESC, s.provider_id DESC, s.object_type DESC
     LIMIT @limit)
    UNION ALL
    (SELECT s.tenant_id, s.provider_id, s.object_type, s.object_id, s.updated_at, s.application_count, s.snapshot
     FROM lead_search s
     WHERE s.tenant_id = @tenant_id%s
     ORDER BY s.updated_at DESC, s.object_id DESC, s.provider_id DESC, s.object_type DESC
     LIMIT @limit)
    ORDER BY updated_at DESC, object_id DESC, provider_id DESC, object_type DESC
    LIMIT @limit
) s
LEFT JOIN records r ON r.tenant_id = @tenant_id AND r.provider_id = s.provider_id
    AND r.object_type = s.object_type AND r.object_id = s.object_id
JOIN providers p ON p.tenant_id = @tenant_id AND p.id = s.provider_id
ORDER BY s.updated_at DESC, s.object_id DESC, s.provider_id DESC, s.object_type DESC`

// forgotten is domain.ForgottenRevision, the revision a lead shows.
const forgotten = `-1`

// noLeads leaves lead_search out (the API lists records only).
const noLeads = "\n      AND false"

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
	// A console test event's record (snapshot.IsTestRecord) is left out.
	directoryNoTests = `s.object_id <> @test_id AND s.object_id NOT LIKE @test_suffix`
)

// recordHeadline is the headline of the record's snapshot (for the API).
const recordHeadline = `CASE WHEN @q::text IS NULL THEN ''
        WHEN ` + search.RecordVector + ` @@ websearch_to_tsquery('simple', @q)
        THEN ` + headlineOf + `r` + headlineEnd + `
        ELSE '' END`

// directoryCountSQL counts, up to @bound, the records and leads
// directorySQL pages through with the same conditions (its two %s), and
// how many of them come before the first of the page shown (@first_, NULL
// without one).
const directoryCountSQL = `
SELECT count(*), count(*) FILTER (WHERE (c.updated_at, c.object_id, c.provider_id, c.object_type) > (@first_at, @first_id, @first_provider, @first_type))
FROM (
    (SELECT s.updated_at, s.object_id, s.provider_id, s.object_type FROM record_search s
     WHERE s.tenant_id = @tenant_id%s
     ORDER BY s.updated_at DESC, s.object_id DESC, s.provider_id DESC, s.object_type DESC
     LIMIT @bound)
    UNION ALL
    (SELECT s.updated_at, s.object_id, s.provider_id, s.object_type FROM lead_search s
     WHERE s.tenant_id = @tenant_id%s
     ORDER BY s.updated_at DESC, s.object_id DESC, s.provider_id DESC, s.object_type DESC
     LIMIT @bound)
    ORDER BY updated_at DESC, object_id DESC, provider_id DESC, object_type DESC
    LIMIT @bound
) c`

type directoryCursor struct {
	UpdatedAt  time.Time `json:"t"`
	ObjectID   string    `json:"o"`
	ProviderID int64     `json:"p"`
	ObjectType string    `json:"y"`
}

// RecordDirectory implements domain.RecordService, for the API's record
// list, test records included. It reads what IndexSearch has indexed: a
// change shows after its next run.
func (s *Lists) RecordDirectory(ctx context.Context, tenantID int64, q domain.RecordQuery, page domain.Page) ([]domain.RecordSummary, string, error) {
	page.Before, page.Count, q.WithTests = "", 0, true
	list, info, err := s.directory(ctx, tenantID, q, page, false)
	return list, info.Next, err
}

// RecordDirectoryPage implements domain.RecordService, for the console's
// records directory, leads included; a count the read timeout stops is
// left out.
func (s *Lists) RecordDirectoryPage(ctx context.Context, tenantID int64, q domain.RecordQuery, page domain.Page) ([]domain.RecordSummary, domain.PageInfo, error) {
	return s.directory(ctx, tenantID, q, page, true)
}

func (s *Lists) directory(ctx context.Context, tenantID int64, q domain.RecordQuery, page domain.Page, leads bool) ([]domain.RecordSummary, domain.PageInfo, error) {
	if err := q.Validate(); err != nil {
		return nil, domain.PageInfo{}, err
	}
	args := pgx.NamedArgs{"tenant_id": tenantID, "stale_since": time.Now().Add(-domain.StaleBadgeWindow), "q": nil}
	c := pg.NewConds(args)
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
	if !q.WithTests {
		c.Add(directoryNoTests, "test_id", snapshot.TestRecordID)
		args["test_suffix"] = "%:" + snapshot.TestRecordID
	}
	search := strings.TrimSpace(q.Search)
	if search != "" {
		c.Add(directorySearch, "q", search)
		args["id_prefix"] = likePrefix(search)
	}
	conds := c.SQL("      ")
	leadConds := conds
	if !leads {
		leadConds += noLeads
	}
	keyed, info, err := pg.Both(page, func(after directoryCursor, start, newer bool, limit int) ([]pg.Keyed[domain.RecordSummary, directoryCursor], error) {
		a := maps.Clone(args)
		a["limit"] = limit + 1
		sql := fmt.Sprintf(directorySQL, conds, leadConds)
		if start {
			if after.UpdatedAt.IsZero() {
				return nil, pg.InvalidCursor()
			}
			keyset := "\n      AND " + directoryAfter
			sql = fmt.Sprintf(directorySQL, keyset+conds, keyset+leadConds)
			a["after_at"], a["after_id"], a["after_provider"], a["after_type"] =
				after.UpdatedAt, after.ObjectID, after.ProviderID, after.ObjectType
		}
		if newer {
			sql = pg.Ascending(sql)
		}
		rows, err := s.read.Query(ctx, sql, customPlan, a)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (pg.Keyed[domain.RecordSummary, directoryCursor], error) {
			var (
				r    domain.RecordSummary
				key  directoryCursor
				snap []byte
			)
			err := row.Scan(&r.Provider, &r.ObjectType, &r.ObjectID, &r.Revision, &r.UpdatedAt, &r.ApplicationCount,
				&r.Badges.OpenConflicts, &r.Badges.StaleEvents, &r.Badges.Deleted, &r.Headline, &key.UpdatedAt, &key.ProviderID, &snap)
			key.ObjectID, key.ObjectType = r.ObjectID, r.ObjectType
			r.Name, r.Test = snapshot.DisplayName(r.ObjectType, snap), snapshot.IsTestRecord(r.ObjectID)
			if search != "" {
				r.Matches = snapshot.Matches(snap, search, maxMatches)
			}
			return pg.Keyed[domain.RecordSummary, directoryCursor]{Row: r, Key: key}, err
		})
	})
	if err != nil {
		return nil, info, pg.Translate(err)
	}
	if page.Count > 0 {
		a := maps.Clone(args)
		a["bound"] = page.Count + 1
		a["first_at"], a["first_id"], a["first_provider"], a["first_type"] = nil, nil, nil, nil
		if len(keyed) > 0 {
			k := keyed[0].Key
			a["first_at"], a["first_id"], a["first_provider"], a["first_type"] = k.UpdatedAt, k.ObjectID, k.ProviderID, k.ObjectType
		}
		if err := s.read.QueryRow(ctx, fmt.Sprintf(directoryCountSQL, conds, leadConds), customPlan, a).Scan(&info.Total, &info.Offset); err != nil && !errors.Is(pg.Translate(err), domain.ErrReadTimeout) {
			return nil, info, pg.Translate(err)
		}
	}
	return pg.Rows(keyed), info, nil
}

// likePrefix is a LIKE pattern matching text that starts with prefix.
func likePrefix(prefix string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(prefix) + "%"
}
