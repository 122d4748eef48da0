package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

type newKeyKey struct{}

// AllowNewKey returns ctx with which ConnectProvider and RotateProviderSecret
// seal a new secret under the store's first key even when the active
// secrets are stored under other keys: a deliberate move to a new key
// (`--new-key`), finished by `tidemark secrets rekey`.
func AllowNewKey(ctx context.Context) context.Context {
	return context.WithValue(ctx, newKeyKey{}, true)
}

// activeKeysSQL counts the active secrets of the installation by key id,
// as serve's start-up check (secretkeys.CheckSecrets) reads them.
const activeKeysSQL = `
SELECT key_id, count(*), count(DISTINCT provider_id) FROM provider_secrets
WHERE retired_at IS NULL
GROUP BY key_id ORDER BY key_id`

// checkSealingKey refuses, with ECONFLICT, to seal a new secret under a
// key that none of the active secrets use, unless ctx allows a new key: a
// node holding the key in use could not open it, and one holding only
// this key would refuse to start (the review's M6).
func (s *providers) checkSealingKey(ctx context.Context, tx pgx.Tx) error {
	if allowed, _ := ctx.Value(newKeyKey{}).(bool); allowed || !s.keys.CanSeal() {
		return nil // without keys, sealing answers ErrNoKey
	}
	rows, err := tx.Query(ctx, activeKeysSQL)
	if err != nil {
		return pg.Translate(err)
	}
	sealer := s.keys.SealerID()
	var uses []string
	for rows.Next() {
		var (
			id                 string
			secrets, providers int64
		)
		if err := rows.Scan(&id, &secrets, &providers); err != nil {
			return pg.Translate(err)
		}
		if id == sealer {
			rows.Close()
			return nil
		}
		uses = append(uses, fmt.Sprintf("key id %s (%d active secrets of %d providers)", id, secrets, providers))
	}
	if err := rows.Err(); err != nil || len(uses) == 0 {
		return pg.Translate(err)
	}
	return domain.Errorf(domain.ECONFLICT, "The new secret would be sealed under key id %s, the first key of "+
		"TIDEMARK_ENCRYPTION_KEY, but the active provider secrets are stored under %s. A serve or worker with the key "+
		"in use could not open it, and one with only this key would refuse to start. Set TIDEMARK_ENCRYPTION_KEY to "+
		"the key in use (several keys comma-separated, the one that seals new secrets first), or, to move to a new "+
		"key on purpose, use the command line with --new-key and then `tidemark secrets rekey`.",
		sealer, strings.Join(uses, ", "))
}

// newestOpening is the id of the newest of a provider's active secrets
// (activeSecretsSQL's order) that the store's keys decrypt, or of the
// newest when none does: the one a rotation or retirement keeps.
func (s *providers) newestOpening(ctx context.Context, tx pgx.Tx, tenantID, providerID int64) (int64, error) {
	rows, err := tx.Query(ctx, activeSecretsSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID})
	if err != nil {
		return 0, pg.Translate(err)
	}
	sealed, err := pgx.CollectRows(rows, pg.ScanSealedSecret)
	if err != nil || len(sealed) == 0 {
		return 0, pg.Translate(err)
	}
	for _, sec := range sealed {
		if _, err := s.keys.Open(sec); err == nil {
			return sec.ID, nil
		}
	}
	return sealed[0].ID, nil
}
