package changefeed

// The rules of a change row hold for both statements that write one:
// ingest's changesSQL (postgres/ingest/changes.go), set-based, a row per
// event a group applied, and appendSQL (append.go), one change an owner
// made at a time. Both are composed from the fragments here, so what a
// change's previous revision and snapshot are, and which fields changed, is
// said once.

// PreviousColumns select, from a record's last change c (ORDER BY
// c.position DESC LIMIT 1), the revision and the snapshot its next change
// has as previous: none after a reset or an erasure, from which the record
// starts again.
const PreviousColumns = `CASE WHEN c.type IN ('record.reset', 'record.erased') THEN NULL ELSE c.revision END AS revision,
           CASE WHEN c.type IN ('record.reset', 'record.erased') THEN NULL ELSE c.snapshot END AS snapshot`

// ChangedFields are a change's changed fields: the names of the top-level
// fields whose values differ between the columns snapshot and
// previous_snapshot (NULL: none before), sorted.
const ChangedFields = `ARRAY(SELECT k FROM (SELECT jsonb_object_keys(snapshot) UNION SELECT jsonb_object_keys(coalesce(previous_snapshot, '{}'))) f (k)
             WHERE snapshot -> k IS DISTINCT FROM previous_snapshot -> k ORDER BY k)`
