-- +goose Up
-- Salesforce outbound messages carry the sending user's live API session
-- in <SessionId> when "Send Session ID" is ticked. The webhook now blanks
-- it before a body is stored (internal/provider/bodies.go); this blanks
-- the bodies stored before, replays' copies included, keeping the empty
-- element. Salesforce writes the envelope's elements unprefixed and the
-- sObject's fields with a prefix (sf:), so only unprefixed ones are
-- touched. Parsing never reads it: the bodies replay as before.
UPDATE deliveries d
SET body = convert_to(regexp_replace(convert_from(d.body, 'UTF8'),
        '(<SessionId(\s[^>]*)?>)[^<]*(</SessionId\s*>)', '\1\3', 'g'), 'UTF8')
FROM providers p
WHERE p.tenant_id = d.tenant_id AND p.id = d.provider_id AND p.kind = 'salesforce'
  AND d.body IS NOT NULL AND position(convert_to('<SessionId', 'UTF8') IN d.body) > 0
  AND convert_from(d.body, 'UTF8') ~ '<SessionId(\s[^>]*)?>[^<]+</SessionId\s*>';

-- +goose Down
-- The session ids are gone for good; nothing to restore.
SELECT 1;
