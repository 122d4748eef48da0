package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Erasure by mention: what names the erased lead or record without an
// event that says so. A lead's email is in the bodies and payloads of
// signups that were rejected without an object id, and in kept 400
// samples; a record's raw id is in its provider's kept 400 samples. They
// are found by the text of the body, so a mention escaped by the sender
// (JSON's \u0040) is not found; a short record id may blank samples that
// only happen to contain it, which costs a diagnostic sample, not data.

// mentionPayloadCond and mentionBodyCond match a column's bytes against
// @needle (mentionNeedle), folded to lower case when @fold.
const (
	mentionPayloadCond = `strpos(CASE WHEN @fold::boolean THEN lower(encode(payload, 'escape'))
        ELSE encode(payload, 'escape') END, @needle::text) > 0`
	mentionBodyCond = `strpos(CASE WHEN @fold::boolean THEN lower(encode(d.body, 'escape'))
        ELSE encode(d.body, 'escape') END, @needle::text) > 0`
)

// mentionEvents are the events rejected without an object id whose
// payload names it (leads only: @events).
const mentionEvents = `tenant_id = @tenant_id AND (@provider_id::bigint IS NULL OR provider_id = @provider_id)
    AND @events::boolean AND object_id IS NULL AND payload IS NOT NULL AND ` + mentionPayloadCond

// eraseMentionBodiesSQL replaces the bodies of the kept 400 samples that
// name it, and of the deliveries of mentionEvents, by domain.ErasedBody.
const eraseMentionBodiesSQL = `
UPDATE deliveries d SET body = @erased_body::bytea
WHERE d.tenant_id = @tenant_id AND (@provider_id::bigint IS NULL OR d.provider_id = @provider_id)
  AND d.body IS NOT NULL AND d.body <> @erased_body::bytea
  AND ((d.status = 400 AND ` + mentionBodyCond + `)
       OR (d.received_at, d.id) IN (SELECT received_at, delivery_id FROM events WHERE ` + mentionEvents + `))`

const eraseMentionSearchSQL = `DELETE FROM event_search WHERE tenant_id = @tenant_id AND (received_at, delivery_id, seq) IN (
    SELECT received_at, delivery_id, seq FROM events WHERE ` + mentionEvents + `)`

const eraseMentionEventsSQL = `
UPDATE events SET payload = NULL, snapshot = NULL,
    reason = CASE WHEN strpos(CASE WHEN @fold::boolean THEN lower(reason) ELSE reason END, @plain::text) > 0
        THEN 'erased' ELSE reason END
WHERE ` + mentionEvents

// mentionNeedle is s as encode(bytea, 'escape') writes its UTF-8 bytes:
// backslashes doubled, zero and high bytes as \ooo.
func mentionNeedle(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case c == 0 || c >= 0x80:
			fmt.Fprintf(&b, `\%03o`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// eraseMentions erases what mentions plain (args' tenant, provider and
// erased body): case-folded with its events for a lead, as is for a
// record.
func eraseMentions(ctx context.Context, tx pgx.Tx, args pgx.NamedArgs, plain string, lead bool) (bodies, events int64, err error) {
	margs := pgx.NamedArgs{"tenant_id": args["tenant_id"], "provider_id": args["provider_id"],
		"erased_body": args["erased_body"], "fold": lead, "events": lead, "plain": plain,
		"needle": mentionNeedle(plain)}
	if lead {
		margs["needle"] = mentionNeedle(strings.ToLower(plain))
	}
	tag, err := tx.Exec(ctx, eraseMentionBodiesSQL, margs)
	if err != nil {
		return 0, 0, fmt.Errorf("erase bodies that name it: %w", err)
	}
	bodies = tag.RowsAffected()
	if !lead {
		return bodies, 0, nil
	}
	if _, err := tx.Exec(ctx, eraseMentionSearchSQL, margs); err != nil {
		return 0, 0, fmt.Errorf("erase the words of events that name it: %w", err)
	}
	if tag, err = tx.Exec(ctx, eraseMentionEventsSQL, margs); err != nil {
		return 0, 0, fmt.Errorf("erase events that name it: %w", err)
	}
	return bodies, tag.RowsAffected(), nil
}
