package pg

// A record is kept whole (property_revisions '{}': whole snapshots set it,
// each replacing the last) or merged from field changes, each field at the
// revision that set it (property_revisions). A Salesforce record can be
// both: outbound messages and backfill bring whole snapshots, Change Data
// Capture field changes. These fragments read and write a record r of
// either kind the same way; the statements are constants (checked by
// postgres' TestStatementsPrepare), so each key has its own, alike but for
// the key (TestPropertyRevisionFragmentsAgree).

// PropertyRevisionOfChangeKey, PropertyRevisionOfEvent and
// PropertyRevisionOfTarget are the revision at which r holds the field
// change.key, e.property or t.property: its field change's; of a whole
// record, the record's revision for a field its snapshot holds and for its
// creation, which it has seen; otherwise NULL.
const (
	PropertyRevisionOfChangeKey = `coalesce((r.property_revisions ->> change.key)::bigint,
                CASE WHEN r.property_revisions = '{}' AND (change.key = '$created'
                          OR (jsonb_typeof(r.snapshot) = 'object' AND r.snapshot ? change.key)) THEN r.revision END)`
	PropertyRevisionOfEvent = `coalesce((r.property_revisions ->> e.property)::bigint,
                CASE WHEN r.property_revisions = '{}' AND (e.property = '$created'
                          OR (jsonb_typeof(r.snapshot) = 'object' AND r.snapshot ? e.property)) THEN r.revision END)`
	PropertyRevisionOfTarget = `coalesce((r.property_revisions ->> t.property)::bigint,
                CASE WHEN r.property_revisions = '{}' AND (t.property = '$created'
                          OR (jsonb_typeof(r.snapshot) = 'object' AND r.snapshot ? t.property)) THEN r.revision END)`
)

// MergedPropertyRevisions is r's field revisions before a field change is
// merged into it: a whole record's are its snapshot's fields, each at the
// record's revision, so that an older change of one of them stays stale
// once the record is merged. A reset record (revision -1) has none.
const MergedPropertyRevisions = `CASE WHEN r.property_revisions = '{}' AND r.revision >= 0 THEN coalesce((
                    SELECT jsonb_object_agg(k, r.revision)
                    FROM jsonb_object_keys(CASE WHEN jsonb_typeof(r.snapshot) = 'object' THEN r.snapshot ELSE '{}' END) k), '{}')
                ELSE r.property_revisions END`
