package secretkeys

// The SSO client secret (postgres/access, sso_config): one row, global,
// its tenant and owner 0, as its AAD binds it to none, and its id 1.
const (
	// ssoSecretSQL reads it for the start-up check.
	ssoSecretSQL = `SELECT 0::bigint, 0::bigint, 1::bigint, key_id, aad_version, ciphertext FROM sso_config`
	// rekeySSOSecretSQL locks it unless it is sealed under @key_id and
	// @aad_version already; @after_id makes the second batch empty.
	rekeySSOSecretSQL = `
SELECT 0::bigint, 0::bigint, 1::bigint, key_id, aad_version, ciphertext FROM sso_config
WHERE @after_id::bigint < 1 AND (key_id <> @key_id OR aad_version <> @aad_version)
FOR UPDATE`
	// resealSSOSecretSQL stores it re-sealed (@ciphertexts holds one).
	resealSSOSecretSQL = `
UPDATE sso_config SET key_id = @key_id, aad_version = @aad_version, ciphertext = (@ciphertexts::bytea[])[1]
WHERE cardinality(@ciphertexts::bytea[]) = 1`
)
