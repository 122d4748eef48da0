package pg

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
)

type newKeyKey struct{}

// AllowNewKey returns ctx with which a new secret is sealed under the
// store's first key even when the active provider secrets are stored under
// other keys: a deliberate move to a new key (`--new-key`), finished by
// `tidemark secrets rekey`.
func AllowNewKey(ctx context.Context) context.Context {
	return context.WithValue(ctx, newKeyKey{}, true)
}

// activeKeysSQL counts the active secrets of the installation by key id,
// as serve's start-up check (secretkeys.CheckSecrets) reads them.
const activeKeysSQL = `
SELECT key_id, count(*), count(DISTINCT provider_id) FROM provider_secrets
WHERE retired_at IS NULL
GROUP BY key_id ORDER BY key_id`

// CheckSealingKey refuses, with ECONFLICT, to seal a new provider secret
// (a signing secret, or that of API credentials) under a key that none of
// the active signing secrets use, unless ctx allows a new key: a node
// holding the key in use could not open it, and one holding only this key
// would refuse to start (the review's M6).
func CheckSealingKey(ctx context.Context, tx pgx.Tx, keys *Keyring) error {
	if allowed, _ := ctx.Value(newKeyKey{}).(bool); allowed || !keys.CanSeal() {
		return nil // without keys, sealing answers ErrNoKey
	}
	rows, err := tx.Query(ctx, activeKeysSQL)
	if err != nil {
		return Translate(err)
	}
	sealer := keys.SealerID()
	var uses []string
	for rows.Next() {
		var (
			id                 string
			secrets, providers int64
		)
		if err := rows.Scan(&id, &secrets, &providers); err != nil {
			return Translate(err)
		}
		if id == sealer {
			rows.Close()
			return nil
		}
		uses = append(uses, fmt.Sprintf("key id %s (%d active secrets of %d providers)", id, secrets, providers))
	}
	if err := rows.Err(); err != nil || len(uses) == 0 {
		return Translate(err)
	}
	return domain.Errorf(domain.ECONFLICT, "The new secret would be sealed under key id %s, the first key of "+
		"TIDEMARK_ENCRYPTION_KEY, but the active provider secrets are stored under %s. A serve or worker with the key "+
		"in use could not open it, and one with only this key would refuse to start. Set TIDEMARK_ENCRYPTION_KEY to "+
		"the key in use (several keys comma-separated, the one that seals new secrets first), or, to move to a new "+
		"key on purpose, use the command line with --new-key and then `tidemark secrets rekey`.",
		sealer, strings.Join(uses, ", "))
}
