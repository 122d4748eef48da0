package people

import (
	"context"
	"math"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// personMatch is a people search's condition: the email, its domain part
// or a word of the name starts with @prefix (a LIKE pattern ending in %,
// lower-case, as emails are stored). Everyone matches when @everyone. It
// reads the tenant's people through their primary key (tenant_id, id);
// the counts below stop at @cap rows.
const personMatch = `p.tenant_id = @tenant_id AND (@everyone::bool
      OR p.email LIKE @prefix OR split_part(p.email, '@', 2) LIKE @prefix
      OR lower(p.name) LIKE @prefix OR lower(p.name) LIKE ('% ' || @prefix::text))`

// searchOlderSQL pages through the matches newest first, older than
// (@after_at, @after_id); searchNewerSQL reads the page newer than
// (@before_at, @before_id) oldest first, to be reversed.
const (
	searchOlderSQL = `
SELECT ` + personColumns + `
FROM people p LEFT JOIN accounts a ON a.tenant_id = p.tenant_id AND a.id = p.account_id
WHERE ` + personMatch + ` AND (p.created_at, p.id) < (@after_at, @after_id)
ORDER BY p.created_at DESC, p.id DESC
LIMIT @limit`
	searchNewerSQL = `
SELECT ` + personColumns + `
FROM people p LEFT JOIN accounts a ON a.tenant_id = p.tenant_id AND a.id = p.account_id
WHERE ` + personMatch + ` AND (p.created_at, p.id) > (@before_at, @before_id)
ORDER BY p.created_at, p.id
LIMIT @limit`
)

// searchCountSQL counts the matches, and those newer than the page's
// first row (@first_at, @first_id), each up to @cap.
const searchCountSQL = `
SELECT (SELECT count(*) FROM (SELECT FROM people p WHERE ` + personMatch + ` LIMIT @cap) m),
       (SELECT count(*) FROM (SELECT FROM people p WHERE ` + personMatch + `
                                AND (p.created_at, p.id) > (@first_at, @first_id) LIMIT @cap) m)`

// likePrefix is q, lower-cased and trimmed, as a LIKE pattern matching
// what starts with it.
func likePrefix(q string) string {
	q = strings.ToLower(strings.TrimSpace(q))
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(q) + "%"
}

// SearchPeople implements domain.PeopleService.
func (s *Directory) SearchPeople(ctx context.Context, tenantID int64, q string, page domain.Page) (domain.PeopleList, error) {
	var list domain.PeopleList
	q = strings.TrimSpace(q)
	args := pgx.NamedArgs{"tenant_id": tenantID, "everyone": q == "", "prefix": likePrefix(q)}
	limit := pg.PageLimit(page)
	args["limit"] = limit + 1
	var (
		people []domain.Person
		more   bool
		err    error
	)
	if page.Before != "" {
		var before personCursor
		if err := decode(page.Before, &before); err != nil {
			return list, err
		}
		args["before_at"], args["before_id"] = before.CreatedAt, before.ID
		if people, err = s.queryPeople(ctx, tenantID, searchNewerSQL, args); err != nil {
			return list, err
		}
		people, more = pg.Trim(people, limit)
		slices.Reverse(people)
		if !more {
			// Fewer than a page is newer: the newest page it is.
			page = domain.Page{Limit: page.Limit}
		} else {
			list.Newer, list.Older = cursorOf(people[0]), cursorOf(people[len(people)-1])
		}
	}
	if page.Before == "" {
		args["after_at"] = any(pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true})
		args["after_id"] = int64(math.MaxInt64)
		if page.Cursor != "" {
			var after personCursor
			if err := decode(page.Cursor, &after); err != nil {
				return list, err
			}
			args["after_at"], args["after_id"] = after.CreatedAt, after.ID
		}
		if people, err = s.queryPeople(ctx, tenantID, searchOlderSQL, args); err != nil {
			return list, err
		}
		people, more = pg.Trim(people, limit)
		if more {
			list.Older = cursorOf(people[len(people)-1])
		}
		if page.Cursor != "" && len(people) > 0 {
			list.Newer = cursorOf(people[0])
		}
	}
	list.People = people
	args["cap"] = domain.PeopleCountCap + 1
	args["first_at"] = any(pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true})
	args["first_id"] = int64(math.MaxInt64)
	if len(people) > 0 {
		args["first_at"], args["first_id"] = people[0].CreatedAt, people[0].ID
	}
	err = s.read.QueryRow(ctx, searchCountSQL, args).Scan(&list.Total, &list.Ahead)
	return list, pg.Translate(err)
}

func decode(cursor string, c *personCursor) error {
	if err := pg.DecodeCursor(cursor, c); err != nil {
		return err
	}
	if c.CreatedAt.IsZero() {
		return pg.InvalidCursor()
	}
	return nil
}

func cursorOf(p domain.Person) string {
	return pg.EncodeCursor(personCursor{CreatedAt: p.CreatedAt, ID: p.ID})
}

// leadSignupsSQL reads the lead.signup events naming @email, newest
// first: per provider of the tenant (all, or the one named) along the
// events_record index, then merged.
const leadSignupsSQL = `
SELECT e.delivery_id::text, e.seq, e.event_id, p.name, e.object_type, e.action, e.object_id, e.revision,
       e.outcome, e.reason, e.received_at, e.conflict_id
FROM providers p
CROSS JOIN LATERAL (
    SELECT * FROM events e
    WHERE e.tenant_id = p.tenant_id AND e.provider_id = p.id AND e.object_type = @object_type
      AND e.object_id = @email AND e.action = @action
    ORDER BY e.received_at DESC, e.delivery_id DESC, e.seq DESC
    LIMIT @limit
) e
WHERE p.tenant_id = @tenant_id AND (@provider::text = '' OR p.name = @provider)
ORDER BY e.received_at DESC, e.delivery_id DESC, e.seq DESC
LIMIT @limit`

const providerExistsSQL = `SELECT EXISTS (SELECT FROM providers WHERE tenant_id = @tenant_id AND name = @provider)`

// LeadSignups implements domain.PeopleService.
func (s *Directory) LeadSignups(ctx context.Context, tenantID int64, provider, email string, limit int) ([]domain.LoggedEvent, error) {
	objectType, action, _ := strings.Cut(domain.LeadSignupType, ".")
	args := pgx.NamedArgs{"tenant_id": tenantID, "provider": provider, "email": domain.NormalizeEmail(email),
		"object_type": objectType, "action": action, "limit": max(limit, 1)}
	if provider != "" {
		var ok bool
		if err := s.read.QueryRow(ctx, providerExistsSQL, args).Scan(&ok); err != nil {
			return nil, pg.Translate(err)
		}
		if !ok {
			return nil, pg.NotFound("provider %s not found", provider)
		}
	}
	rows, err := s.read.Query(ctx, leadSignupsSQL, args)
	if err != nil {
		return nil, pg.Translate(err)
	}
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.LoggedEvent, error) {
		var (
			e          domain.LoggedEvent
			objectID   *string
			reason     *string
			conflictID *int64
		)
		err := row.Scan(&e.DeliveryID, &e.Seq, &e.EventID, &e.Provider, &e.ObjectType, &e.Action, &objectID,
			&e.Revision, &e.Outcome, &reason, &e.ReceivedAt, &conflictID)
		if objectID != nil {
			e.ObjectID = *objectID
		}
		if reason != nil {
			e.Reason = *reason
		}
		if conflictID != nil {
			e.ConflictID = *conflictID
		}
		return e, err
	})
	return events, pg.Translate(err)
}
