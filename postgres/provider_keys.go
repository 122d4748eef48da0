package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// AllowNewKey returns ctx with which ConnectProvider, RotateProviderSecret,
// SetAPICredentials, CreateDestination and RotateDestinationSecret seal a
// new secret under the store's first key even when the secrets in use are
// stored under other keys: a deliberate move to a new key (`--new-key`),
// finished by `tidemark secrets rekey`.
func AllowNewKey(ctx context.Context) context.Context { return pg.AllowNewKey(ctx) }

// checkSealingKey: see pg.CheckSealingKey.
func (s *providers) checkSealingKey(ctx context.Context, tx pgx.Tx) error {
	return pg.CheckSealingKey(ctx, tx, s.keys)
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
