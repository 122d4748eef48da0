package secretkeys

// Apps' client secrets and app installs' tokens (postgres/apps). Apps are
// global: their secrets are rekeyed as one batch sequence, not tenant by
// tenant (tenant and owner ids as ScanSealedSecret reads them: 0 and the
// app). Installs are a tenant's, each row holding its tokens sealed
// together, the install id standing for the secret's.
const (
	// appSecretsAllSQL reads the app secrets that still verify, for the
	// start-up check.
	appSecretsAllSQL = `
SELECT 0::bigint, app_id, id, key_id, aad_version, ciphertext FROM app_secrets
WHERE expires_at IS NULL OR expires_at > now()
ORDER BY id`
	// rekeyAppBatchSQL locks the next batch of app secrets that still
	// verify not sealed under @key_id bound to their app; expired ones
	// never verify again, and the next rotation deletes them.
	rekeyAppBatchSQL = `
SELECT 0::bigint, app_id, id, key_id, aad_version, ciphertext FROM app_secrets
WHERE id > @after_id AND (key_id <> @key_id OR aad_version <> @aad_version)
  AND (expires_at IS NULL OR expires_at > now())
ORDER BY id
LIMIT @limit
FOR UPDATE`
	// rekeyAppSecretsSQL stores a batch of re-sealed app secrets.
	rekeyAppSecretsSQL = `
UPDATE app_secrets s SET key_id = @key_id, aad_version = @aad_version, ciphertext = u.ciphertext
FROM unnest(@owner_ids::bigint[], @ids::bigint[], @ciphertexts::bytea[]) AS u(app_id, id, ciphertext)
WHERE s.app_id = u.app_id AND s.id = u.id`

	// appInstallTokensAllSQL reads every install's tokens, for the check.
	appInstallTokensAllSQL = `
SELECT tenant_id, id, id, tokens_key_id, tokens_aad_version, tokens_ciphertext FROM app_installs
WHERE tokens_ciphertext IS NOT NULL
ORDER BY tenant_id, id`
	// rekeyAppInstallBatchSQL locks the next batch of tenant @tenant_id's
	// install tokens not sealed under @key_id bound to their install.
	rekeyAppInstallBatchSQL = `
SELECT tenant_id, id, id, tokens_key_id, tokens_aad_version, tokens_ciphertext FROM app_installs
WHERE tenant_id = @tenant_id AND id > @after_id AND tokens_ciphertext IS NOT NULL
  AND (tokens_key_id <> @key_id OR tokens_aad_version <> @aad_version)
ORDER BY id
LIMIT @limit
FOR UPDATE`
	// rekeyAppInstallTokensSQL stores a batch of re-sealed install tokens.
	rekeyAppInstallTokensSQL = `
UPDATE app_installs i SET tokens_key_id = @key_id, tokens_aad_version = @aad_version, tokens_ciphertext = u.ciphertext
FROM unnest(@tenant_ids::bigint[], @ids::bigint[], @ciphertexts::bytea[]) AS u(tenant_id, id, ciphertext)
WHERE i.tenant_id = @tenant_id AND u.tenant_id = @tenant_id AND i.id = u.id`
)
