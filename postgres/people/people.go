// Package people reads the people, accounts, tasks and campaign
// memberships that lead.signup deliveries create, and the signup events
// of a lead: the console's people pages and the API's /people.
package people

import (
	"context"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Directory serves domain.PeopleService on the read pool.
type Directory struct {
	read *pgxpool.Pool
}

// New returns the people of pools, read on the read pool.
func New(pools pg.Pools) *Directory { return &Directory{read: pools.ForReads()} }

var _ domain.PeopleService = (*Directory)(nil)

const personColumns = `p.id, p.email, p.name, p.source, p.created_at, a.id, a.domain, a.name`

// peopleSQL pages through people newest first along (created_at, id).
const peopleSQL = `
SELECT ` + personColumns + `
FROM people p LEFT JOIN accounts a ON a.tenant_id = p.tenant_id AND a.id = p.account_id
WHERE p.tenant_id = @tenant_id AND (p.created_at, p.id) < (@after_at, @after_id)
ORDER BY p.created_at DESC, p.id DESC
LIMIT @limit`

const personByEmailSQL = `
SELECT ` + personColumns + `
FROM people p LEFT JOIN accounts a ON a.tenant_id = p.tenant_id AND a.id = p.account_id
WHERE p.tenant_id = @tenant_id AND p.email = @email`

const personByIDSQL = `
SELECT ` + personColumns + `
FROM people p LEFT JOIN accounts a ON a.tenant_id = p.tenant_id AND a.id = p.account_id
WHERE p.tenant_id = @tenant_id AND p.id = @id`

const personTasksSQL = `
SELECT person_id, id, kind, title, status, created_at
FROM tasks
WHERE tenant_id = @tenant_id AND person_id = ANY (@ids)
ORDER BY created_at, id`

const personCampaignsSQL = `
SELECT person_id, campaign, source, joined_at
FROM campaign_members
WHERE tenant_id = @tenant_id AND person_id = ANY (@ids)
ORDER BY joined_at, campaign`

const accountPeopleSQL = `
SELECT id, email, name
FROM people
WHERE tenant_id = @tenant_id AND account_id = @account_id AND id <> @id
ORDER BY email
LIMIT 200`

type personCursor struct {
	CreatedAt time.Time `json:"t"`
	ID        int64     `json:"i"`
}

// People implements domain.PeopleService.
func (s *Directory) People(ctx context.Context, tenantID int64, email string, page domain.Page) ([]domain.Person, string, error) {
	if email != "" {
		people, err := s.queryPeople(ctx, tenantID, personByEmailSQL,
			pgx.NamedArgs{"tenant_id": tenantID, "email": domain.NormalizeEmail(email)})
		return people, "", err
	}
	var afterAt any = pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
	after := personCursor{ID: math.MaxInt64}
	if page.Cursor != "" {
		if err := pg.DecodeCursor(page.Cursor, &after); err != nil {
			return nil, "", err
		}
		if after.CreatedAt.IsZero() {
			return nil, "", pg.InvalidCursor()
		}
		afterAt = after.CreatedAt
	}
	limit := pg.PageLimit(page)
	people, err := s.queryPeople(ctx, tenantID, peopleSQL,
		pgx.NamedArgs{"tenant_id": tenantID, "after_at": afterAt, "after_id": after.ID, "limit": limit + 1})
	if err != nil {
		return nil, "", err
	}
	people, more := pg.Trim(people, limit)
	if !more {
		return people, "", nil
	}
	last := people[len(people)-1]
	return people, pg.EncodeCursor(personCursor{CreatedAt: last.CreatedAt, ID: last.ID}), nil
}

// PersonDetail implements domain.PeopleService.
func (s *Directory) PersonDetail(ctx context.Context, tenantID, personID int64) (domain.PersonDetail, error) {
	var d domain.PersonDetail
	people, err := s.queryPeople(ctx, tenantID, personByIDSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": personID})
	if err != nil {
		return d, err
	}
	if len(people) == 0 {
		return d, pg.NotFound("person %d not found", personID)
	}
	d.Person = people[0]
	if d.Account == nil {
		return d, nil
	}
	rows, err := s.read.Query(ctx, accountPeopleSQL,
		pgx.NamedArgs{"tenant_id": tenantID, "account_id": d.Account.ID, "id": personID})
	if err != nil {
		return d, pg.Translate(err)
	}
	d.Colleagues, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.PersonBrief, error) {
		var b domain.PersonBrief
		return b, row.Scan(&b.ID, &b.Email, &b.Name)
	})
	return d, pg.Translate(err)
}

// queryPeople runs a people statement, then loads the tasks and campaign
// memberships of the people it found.
func (s *Directory) queryPeople(ctx context.Context, tenantID int64, sql string, args pgx.NamedArgs) ([]domain.Person, error) {
	rows, err := s.read.Query(ctx, sql, args)
	if err != nil {
		return nil, pg.Translate(err)
	}
	people, err := pgx.CollectRows(rows, scanPerson)
	if err != nil {
		return nil, pg.Translate(err)
	}
	if len(people) == 0 {
		return people, nil
	}
	ids := make([]int64, len(people))
	index := make(map[int64]int, len(people))
	for i, p := range people {
		ids[i], index[p.ID] = p.ID, i
	}
	listArgs := pgx.NamedArgs{"tenant_id": tenantID, "ids": ids}
	batch := &pgx.Batch{}
	batch.Queue(personTasksSQL, listArgs).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var (
				personID int64
				t        domain.Task
			)
			if err := rows.Scan(&personID, &t.ID, &t.Kind, &t.Title, &t.Status, &t.CreatedAt); err != nil {
				return err
			}
			if i, ok := index[personID]; ok {
				people[i].Tasks = append(people[i].Tasks, t)
			}
		}
		return rows.Err()
	})
	batch.Queue(personCampaignsSQL, listArgs).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var (
				personID int64
				m        domain.CampaignMembership
			)
			if err := rows.Scan(&personID, &m.Campaign, &m.Source, &m.JoinedAt); err != nil {
				return err
			}
			if i, ok := index[personID]; ok {
				people[i].Campaigns = append(people[i].Campaigns, m)
			}
		}
		return rows.Err()
	})
	if err := s.read.SendBatch(ctx, batch).Close(); err != nil {
		return nil, pg.Translate(err)
	}
	return people, nil
}

func scanPerson(row pgx.CollectableRow) (domain.Person, error) {
	var (
		p                   domain.Person
		accountID           *int64
		accountDomain, name *string
	)
	if err := row.Scan(&p.ID, &p.Email, &p.Name, &p.Source, &p.CreatedAt, &accountID, &accountDomain, &name); err != nil {
		return p, err
	}
	if accountID != nil {
		p.Account = &domain.Account{ID: *accountID, Domain: textOrEmpty(accountDomain), Name: textOrEmpty(name)}
	}
	return p, nil
}

func textOrEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
