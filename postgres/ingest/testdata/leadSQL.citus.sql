-- leadSQL, whole, as Citus is sent it, from the registry of postgres/ingest (statements.go).
-- Regenerate with: go test ./postgres/ingest -run Golden -update
WITH mine AS (
    SELECT EXISTS (SELECT FROM idempotency_keys WHERE tenant_id = @tenant_id AND key = @key
                   AND delivery_id = @delivery_id AND seq = @seq) AS yes
), found_account AS (
    SELECT id FROM accounts WHERE tenant_id = @tenant_id AND domain = @domain::text
), new_account AS (
    INSERT INTO accounts (tenant_id, domain, name, created_at)
    SELECT @tenant_id, @domain::text, coalesce(nullif(@company::text, ''), @domain::text), @now::timestamptz
    WHERE @domain::text IS NOT NULL AND (SELECT yes FROM mine) AND NOT EXISTS (SELECT FROM found_account)
    RETURNING id
), account AS (
    SELECT id FROM found_account UNION ALL SELECT id FROM new_account
), found_person AS (
    SELECT id, account_id FROM people WHERE tenant_id = @tenant_id AND email = @email
), new_person AS (
    INSERT INTO people (tenant_id, email, name, account_id, source, created_at, updated_at)
    SELECT @tenant_id, @email, coalesce(@name::text, ''), (SELECT id FROM account), coalesce(@source::text, ''), @now, @now
    WHERE (SELECT yes FROM mine) AND NOT EXISTS (SELECT FROM found_person)
    RETURNING id
), linked AS (
    UPDATE people SET account_id = (SELECT id FROM account), updated_at = @now
    WHERE tenant_id = @tenant_id AND id = (SELECT id FROM found_person) AND account_id IS NULL
      AND EXISTS (SELECT FROM account) AND (SELECT yes FROM mine)
    RETURNING id
), person AS (
    SELECT id FROM found_person UNION ALL SELECT id FROM new_person
), task AS (
    INSERT INTO tasks (tenant_id, person_id, title, created_at)
    SELECT @tenant_id, id, 'Follow up with ' || @email, @now FROM new_person
    RETURNING id
), joined AS (
    INSERT INTO campaign_members (tenant_id, campaign, person_id, source, joined_at)
    SELECT @tenant_id, @campaign, id, coalesce(@source::text, ''), @now FROM person WHERE (SELECT yes FROM mine)
    ON CONFLICT (tenant_id, campaign, person_id) DO NOTHING
    RETURNING 1
)
UPDATE idempotency_keys SET effect = CASE
    WHEN EXISTS (SELECT FROM new_account) OR EXISTS (SELECT FROM new_person) OR EXISTS (SELECT FROM linked)
      OR EXISTS (SELECT FROM joined) OR EXISTS (SELECT FROM task) THEN 'applied' ELSE 'redundant' END
WHERE tenant_id = @tenant_id AND key = @key AND delivery_id = @delivery_id AND seq = @seq
