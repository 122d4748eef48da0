-- +goose Up
-- Destination URLs often hold a credential (a token in the query, a Slack
-- webhook's path) and are their tenant's owners' alone (review 4, M2). The
-- code now redacts them everywhere else (domain/stream.RedactURL): the
-- scheme, host and path stay; the user information, query and fragment
-- become <redacted>, and so does the path of a Slack webhook or of a slack
-- destination. This redacts what was stored before, each text by the
-- steps of RedactURL and then, for a slack destination, its path:
-- - the URL that Go's transport errors quote (Post "URL": ...) in
--   attempts, queued changes and status reasons;
-- - destination_failing alert summaries, read by every member and token:
--   the destination's URL, and the receiver's answer or the error after
--   "... has not been delivered since T", which they no longer hold;
-- - the audit log's destination entries (their queries were left out
--   already; a Slack path was not), with its append-only trigger set aside
--   inside this migration's transaction.

UPDATE destinations d
SET status_reason = regexp_replace(regexp_replace(regexp_replace(regexp_replace(d.status_reason,
    '("[a-z][a-z0-9+.-]*://)[^/?#@"]*@', '\1<redacted>@', 'gi'),
    '("[a-z][a-z0-9+.-]*://(?:<redacted>@)?hooks\.slack(?:-gov)?\.com(?::[0-9]+)?)[/?#][^"]*', '\1/<redacted>', 'gi'),
    '("[a-z][a-z0-9+.-]*://[^?#"]*)\?[^#"]*', '\1?<redacted>', 'gi'),
    '("[a-z][a-z0-9+.-]*://[^#"]*)#[^"]*', '\1#<redacted>', 'gi')
WHERE d.status_reason LIKE '%://%';
UPDATE destinations d
SET status_reason = regexp_replace(d.status_reason,
    '("[a-z][a-z0-9+.-]*://[^/?#"]*)[/?#][^"]*', '\1/<redacted>', 'gi')
WHERE d.status_reason LIKE '%://%'
  AND d.format = 'slack';

UPDATE destination_attempts a
SET error = regexp_replace(regexp_replace(regexp_replace(regexp_replace(a.error,
    '("[a-z][a-z0-9+.-]*://)[^/?#@"]*@', '\1<redacted>@', 'gi'),
    '("[a-z][a-z0-9+.-]*://(?:<redacted>@)?hooks\.slack(?:-gov)?\.com(?::[0-9]+)?)[/?#][^"]*', '\1/<redacted>', 'gi'),
    '("[a-z][a-z0-9+.-]*://[^?#"]*)\?[^#"]*', '\1?<redacted>', 'gi'),
    '("[a-z][a-z0-9+.-]*://[^#"]*)#[^"]*', '\1#<redacted>', 'gi')
WHERE a.error LIKE '%://%';
UPDATE destination_attempts a
SET error = regexp_replace(a.error,
    '("[a-z][a-z0-9+.-]*://[^/?#"]*)[/?#][^"]*', '\1/<redacted>', 'gi')
WHERE a.error LIKE '%://%'
  AND EXISTS (SELECT FROM destinations d WHERE d.tenant_id = a.tenant_id AND d.id = a.destination_id AND d.format = 'slack');

UPDATE destination_queue q
SET last_error = regexp_replace(regexp_replace(regexp_replace(regexp_replace(q.last_error,
    '("[a-z][a-z0-9+.-]*://)[^/?#@"]*@', '\1<redacted>@', 'gi'),
    '("[a-z][a-z0-9+.-]*://(?:<redacted>@)?hooks\.slack(?:-gov)?\.com(?::[0-9]+)?)[/?#][^"]*', '\1/<redacted>', 'gi'),
    '("[a-z][a-z0-9+.-]*://[^?#"]*)\?[^#"]*', '\1?<redacted>', 'gi'),
    '("[a-z][a-z0-9+.-]*://[^#"]*)#[^"]*', '\1#<redacted>', 'gi')
WHERE q.last_error LIKE '%://%';
UPDATE destination_queue q
SET last_error = regexp_replace(q.last_error,
    '("[a-z][a-z0-9+.-]*://[^/?#"]*)[/?#][^"]*', '\1/<redacted>', 'gi')
WHERE q.last_error LIKE '%://%'
  AND EXISTS (SELECT FROM destinations d WHERE d.tenant_id = q.tenant_id AND d.id = q.destination_id AND d.format = 'slack');

UPDATE alerts a
SET summary = regexp_replace(a.summary,
    '^(Destination [0-9]+ \(.*\) was paused as failing: .* has not been delivered since [0-9T:Z-]{20}): .*$', '\1.')
WHERE a.rule = 'destination_failing' AND a.summary LIKE 'Destination % was paused as failing: %';

UPDATE alerts a
SET summary = regexp_replace(regexp_replace(regexp_replace(regexp_replace(a.summary,
    '(^Destination [0-9]+ \([a-z][a-z0-9+.-]*://)[^/?#@\s]*@', '\1<redacted>@', 'i'),
    '(^Destination [0-9]+ \([a-z][a-z0-9+.-]*://(?:<redacted>@)?hooks\.slack(?:-gov)?\.com(?::[0-9]+)?)[/?#][^\s]*((?: [^\s)]+)?\) (?:was paused as failing|has answered no attempt with a 2xx))', '\1/<redacted>\2', 'i'),
    '(^Destination [0-9]+ \([a-z][a-z0-9+.-]*://[^?#\s]*)\?[^#\s]*((?: [^\s)]+)?\) (?:was paused as failing|has answered no attempt with a 2xx))', '\1?<redacted>\2', 'i'),
    '(^Destination [0-9]+ \([a-z][a-z0-9+.-]*://[^#\s]*)#[^\s]*((?: [^\s)]+)?\) (?:was paused as failing|has answered no attempt with a 2xx))', '\1#<redacted>\2', 'i')
WHERE a.rule = 'destination_failing' AND a.summary LIKE 'Destination %://%';
UPDATE alerts a
SET summary = regexp_replace(a.summary,
    '(^Destination [0-9]+ \([a-z][a-z0-9+.-]*://[^/?#\s]*)[/?#][^\s]*((?: [^\s)]+)?\) (?:was paused as failing|has answered no attempt with a 2xx))', '\1/<redacted>\2', 'i')
WHERE a.rule = 'destination_failing' AND a.summary LIKE 'Destination %://%'
  AND NOT EXISTS (SELECT FROM destinations d WHERE d.tenant_id = a.tenant_id AND d.id::text = a.subject AND d.format <> 'slack');

SET LOCAL citus.enable_unsafe_triggers = on; -- on Citus, to set a distributed table's trigger aside
ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only;
UPDATE audit_log a
SET summary = regexp_replace(regexp_replace(regexp_replace(regexp_replace(a.summary,
    '(^(?:deleted )?[a-z][a-z0-9+.-]*://)[^/?#@\s;]*@', '\1<redacted>@', 'i'),
    '(^(?:deleted )?[a-z][a-z0-9+.-]*://(?:<redacted>@)?hooks\.slack(?:-gov)?\.com(?::[0-9]+)?)[/?#][^\s;]*', '\1/<redacted>', 'i'),
    '(^(?:deleted )?[a-z][a-z0-9+.-]*://[^?#\s;]*)\?[^#\s;]*', '\1?<redacted>', 'i'),
    '(^(?:deleted )?[a-z][a-z0-9+.-]*://[^#\s;]*)#[^\s;]*', '\1#<redacted>', 'i')
WHERE a.action IN ('destination_create', 'destination_delete') AND a.summary LIKE '%://%';
UPDATE audit_log a
SET summary = regexp_replace(a.summary,
    '(^(?:deleted )?[a-z][a-z0-9+.-]*://[^/?#\s;]*)[/?#][^\s;]*', '\1/<redacted>', 'i')
WHERE a.action IN ('destination_create', 'destination_delete') AND a.summary LIKE '%://%'
  AND EXISTS (SELECT FROM audit_log c WHERE c.tenant_id = a.tenant_id AND c.target = a.target
              AND c.action = 'destination_create' AND c.summary LIKE '%; format slack%');
ALTER TABLE audit_log ENABLE TRIGGER audit_log_append_only;

-- +goose Down
-- What was redacted is gone for good; nothing to restore.
SELECT 1;
