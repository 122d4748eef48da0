package destinations

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/shape"
	"github.com/tidemark/tidemark/internal/sink"
	"github.com/tidemark/tidemark/internal/whsig"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

const providerIDSQL = `SELECT id FROM providers WHERE tenant_id = @tenant_id AND name = @name`

// insertDestinationSQL starts a destination at the tenant's head: it
// receives the changes committed after it was made (older ones on a
// rewind). A change committing meanwhile takes a position after the head
// read here, so none falls between. Likewise it starts at the end of the
// tenant's alert events, which their one writer adds in commit order.
// The two are read first: Citus takes no subquery in an INSERT's VALUES.
const startPositionsSQL = `
SELECT coalesce((SELECT h.position FROM change_heads h WHERE h.tenant_id = @tenant_id), 0),
       coalesce((SELECT max(e.id) FROM alert_events e WHERE e.tenant_id = @tenant_id), 0)`

const insertDestinationSQL = `
INSERT INTO destinations (tenant_id, kind, url, nats_url, subject, provider_id, object_type, types, format, filter, transform,
                          allow_private, max_in_flight, cursor, alert_cursor)
VALUES (@tenant_id, @kind, @url::text, @nats_url::text, @subject::text, @provider_id::bigint, @object_type::text, @types::text[],
        @format, @filter::text, @transform::text, @allow_private, @max_in_flight,
        @cursor, @alert_cursor)
RETURNING id`

// CreateDestination implements stream.DestinationService. It checks nd's
// form, its kind's included (sink.CheckForm, which reaches out to
// nothing), and its filter and transform (shape.Check); whether the URL may be reached, and whether NATS credentials
// parse, is the caller's to check first (sink.Check). Its signing secret and NATS
// credentials are sealed under the store's first key; under a key that
// none of the secrets in use are stored under it refuses with ECONFLICT
// (pg.CheckSealingKey), unless ctx allows a new key.
func (m *Manager) CreateDestination(ctx context.Context, tenantID int64, nd stream.NewDestination) (stream.Destination, string, error) {
	var d stream.Destination
	nd, err := sink.CheckForm(nd)
	if err != nil {
		return d, "", err
	}
	if err := shape.Check(nd.Filter, nd.Transform); err != nil {
		return d, "", err
	}
	if !m.keys.CanSeal() {
		return d, "", pg.ErrNoKey
	}
	secret := whsig.NewSecret()
	err = pg.WithTx(ctx, m.pool, func(tx pgx.Tx) error {
		if err := checkLimit(ctx, tx, tenantID); err != nil {
			return err
		}
		var providerID *int64
		if nd.Provider != "" {
			var id int64
			err := tx.QueryRow(ctx, providerIDSQL, pgx.NamedArgs{"tenant_id": tenantID, "name": nd.Provider}).Scan(&id)
			if errors.Is(err, pgx.ErrNoRows) {
				return domain.Errorf(domain.EINVALID, "provider %q: this workspace has no provider of that name", nd.Provider)
			}
			if err != nil {
				return err
			}
			providerID = &id
		}
		var cursor, alertCursor int64
		if err := tx.QueryRow(ctx, startPositionsSQL, pgx.NamedArgs{"tenant_id": tenantID}).Scan(&cursor, &alertCursor); err != nil {
			return err
		}
		var id int64
		err := tx.QueryRow(ctx, insertDestinationSQL, pgx.NamedArgs{"tenant_id": tenantID, "cursor": cursor, "alert_cursor": alertCursor,
			"kind": nd.Kind, "url": pg.NullString(nd.URL), "nats_url": pg.NullString(nd.NATSURL), "subject": pg.NullString(nd.Subject),
			"provider_id": providerID, "object_type": pg.NullString(nd.ObjectType), "types": nd.Types,
			"format": nd.Format, "filter": pg.NullString(nd.Filter), "transform": pg.NullString(nd.Transform), "allow_private": nd.AllowPrivate, "max_in_flight": nd.MaxInFlight}).Scan(&id)
		if err != nil {
			return err
		}
		if err := pg.CheckSealingKey(ctx, tx, m.keys); err != nil {
			return err
		}
		if err := m.insertSecret(ctx, tx, tenantID, id, secret); err != nil {
			return err
		}
		if err := m.insertNATS(ctx, tx, tenantID, id, nd.NATS); err != nil {
			return err
		}
		if d, err = destination(ctx, tx, tenantID, id); err != nil {
			return err
		}
		return pg.Audit(ctx, tx, tenantID, stream.AuditDestinationCreate, stream.DestinationLabel(id), describe(d))
	})
	if err != nil {
		return stream.Destination{}, "", pg.Translate(err)
	}
	return d, secret, nil
}

// describe sums up a destination for the audit log, without the user
// information of its URL.
func describe(d stream.Destination) string {
	parts := []string{d.RedactedTarget(), "types " + strings.Join(d.Types, ",")}
	if d.Format != stream.FormatStandard {
		parts = append(parts, "format "+d.Format)
	}
	if d.Provider != "" {
		parts = append(parts, "provider "+d.Provider)
	}
	if d.ObjectType != "" {
		parts = append(parts, "object type "+d.ObjectType)
	}
	if d.Filter != "" {
		parts = append(parts, "filter "+d.Filter)
	}
	if d.Transform != "" {
		parts = append(parts, "transform "+d.Transform)
	}
	if d.NATSAuth != "" {
		parts = append(parts, "NATS credentials: "+d.NATSAuth)
	}
	if d.NATSTLSCA {
		parts = append(parts, "own TLS CA")
	}
	parts = append(parts, fmt.Sprintf("max in flight %d", d.MaxInFlight))
	if d.AllowPrivate {
		parts = append(parts, "private addresses allowed")
	}
	return strings.Join(parts, "; ")
}

const pauseDestinationSQL = `
UPDATE destinations SET status = 'paused', status_reason = NULL
WHERE tenant_id = @tenant_id AND id = @id`

// PauseDestination implements stream.DestinationService.
func (m *Manager) PauseDestination(ctx context.Context, tenantID, id int64) error {
	return m.change(ctx, tenantID, id, stream.AuditDestinationPause, func(tx pgx.Tx) (string, error) {
		tag, err := tx.Exec(ctx, pauseDestinationSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": id})
		return "paused", found(tag.RowsAffected(), id, err)
	})
}

const resumeDestinationSQL = `
UPDATE destinations SET status = 'active', status_reason = NULL
WHERE tenant_id = @tenant_id AND id = @id`

const retryQueueNowSQL = `
UPDATE destination_queue SET next_attempt_at = now(), first_failed_at = NULL
WHERE tenant_id = @tenant_id AND destination_id = @id`

// ResumeDestination implements stream.DestinationService. The pending
// changes are retried at once, and the time they have been failing starts
// again, so a resumed destination gets the whole DestinationGiveUp.
func (m *Manager) ResumeDestination(ctx context.Context, tenantID, id int64) error {
	return m.change(ctx, tenantID, id, stream.AuditDestinationResume, func(tx pgx.Tx) (string, error) {
		args := pgx.NamedArgs{"tenant_id": tenantID, "id": id}
		tag, err := tx.Exec(ctx, resumeDestinationSQL, args)
		if err := found(tag.RowsAffected(), id, err); err != nil {
			return "", err
		}
		tag, err = tx.Exec(ctx, retryQueueNowSQL, args)
		return fmt.Sprintf("resumed; %d pending change(s) retried now", tag.RowsAffected()), err
	})
}

const lockDestinationSQL = `SELECT cursor FROM destinations WHERE tenant_id = @tenant_id AND id = @id FOR UPDATE`

const changeHeadSQL = `SELECT coalesce((SELECT position FROM change_heads WHERE tenant_id = @tenant_id), 0)`

// clearQueueSQL drops the pending changes; pending alert events (below
// zero) stay, since a rewind is of the change feed.
const clearQueueSQL = `DELETE FROM destination_queue WHERE tenant_id = @tenant_id AND destination_id = @id AND position > 0`

const setCursorSQL = `UPDATE destinations SET cursor = @cursor WHERE tenant_id = @tenant_id AND id = @id`

// RewindDestination implements stream.DestinationService. The row lock
// orders it with the sender's fill, which moves the cursor only from the
// value it read: a fill that read the old cursor changes nothing.
func (m *Manager) RewindDestination(ctx context.Context, tenantID, id, position int64) error {
	if position < 0 {
		return domain.Errorf(domain.EINVALID, "after: a position of the feed is 0 or more")
	}
	return m.change(ctx, tenantID, id, stream.AuditDestinationRewind, func(tx pgx.Tx) (string, error) {
		args := pgx.NamedArgs{"tenant_id": tenantID, "id": id, "cursor": position}
		var was, head int64
		if err := tx.QueryRow(ctx, lockDestinationSQL, args).Scan(&was); errors.Is(err, pgx.ErrNoRows) {
			return "", notFound(id)
		} else if err != nil {
			return "", err
		}
		if err := tx.QueryRow(ctx, changeHeadSQL, args).Scan(&head); err != nil {
			return "", err
		}
		if position > head {
			return "", domain.Errorf(domain.EINVALID, "after: %s is past the newest change of this workspace (%s)",
				stream.FormatCursor(position), stream.FormatCursor(head))
		}
		tag, err := tx.Exec(ctx, clearQueueSQL, args)
		if err != nil {
			return "", err
		}
		if _, err := tx.Exec(ctx, setCursorSQL, args); err != nil {
			return "", err
		}
		return fmt.Sprintf("rewound to after %s (was %s); %d pending change(s) dropped to be taken again",
			stream.FormatCursor(position), stream.FormatCursor(was), tag.RowsAffected()), nil
	})
}

const deleteDestinationSQL = `DELETE FROM destinations WHERE tenant_id = @tenant_id AND id = @id`

// DeleteDestination implements stream.DestinationService; its secrets,
// queue and attempts go with it.
func (m *Manager) DeleteDestination(ctx context.Context, tenantID, id int64) error {
	return m.change(ctx, tenantID, id, stream.AuditDestinationDelete, func(tx pgx.Tx) (string, error) {
		d, err := destination(ctx, tx, tenantID, id)
		if err != nil {
			return "", err
		}
		_, err = tx.Exec(ctx, deleteDestinationSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": id})
		return fmt.Sprintf("deleted %s with %d pending change(s)", d.RedactedTarget(), d.Pending), err
	})
}

// change runs fn, which changes destination id and says how, in a
// transaction with its audit entry.
func (m *Manager) change(ctx context.Context, tenantID, id int64, action string, fn func(pgx.Tx) (string, error)) error {
	return pg.Translate(pg.WithTx(ctx, m.pool, func(tx pgx.Tx) error {
		summary, err := fn(tx)
		if err != nil {
			return err
		}
		return pg.Audit(ctx, tx, tenantID, action, stream.DestinationLabel(id), summary)
	}))
}

// found turns an update of no row into ENOTFOUND.
func found(rows int64, id int64, err error) error {
	if err == nil && rows == 0 {
		return notFound(id)
	}
	return err
}
