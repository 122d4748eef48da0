package secretkeys

// The id hash key (pg.IDHashes): one row for the database, which a rekey
// seals again under the first key and never replaces, so that the audit
// targets and tombstones hashed under it before still match. Its tenant
// and owner are 0, as its AAD binds it to none, and its id is 1.
const (
	// idHashKeySQL reads it for the start-up check.
	idHashKeySQL = `SELECT 0, 0, 1, key_id, aad_version, ciphertext FROM id_hash_key`
	// rekeyIDHashKeySQL locks it unless it is sealed under @key_id and
	// @aad_version already; @after_id makes the second batch empty.
	rekeyIDHashKeySQL = `
SELECT 0, 0, 1, key_id, aad_version, ciphertext FROM id_hash_key
WHERE @after_id::bigint < 1 AND (key_id <> @key_id OR aad_version <> @aad_version)
FOR UPDATE`
	// resealIDHashKeySQL stores it re-sealed (@ciphertexts holds one).
	resealIDHashKeySQL = `
UPDATE id_hash_key SET key_id = @key_id, aad_version = @aad_version, ciphertext = (@ciphertexts::bytea[])[1]
WHERE cardinality(@ciphertexts::bytea[]) = 1`
)
