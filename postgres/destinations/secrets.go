package destinations

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/whsig"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// A destination signs with its current secret (expires_at NULL) and, for
// stream.DestinationSecretGrace after a rotation, the one before it, so
// that a consumer can switch without refusing a message.

const insertSecretSQL = `
INSERT INTO destination_secrets (tenant_id, destination_id, key_id, aad_version, ciphertext)
VALUES (@tenant_id, @destination_id, @key_id, @aad_version, @ciphertext)`

// insertSecret seals plaintext for destination id and stores it as its
// current secret.
func (m *Manager) insertSecret(ctx context.Context, tx pgx.Tx, tenantID, id int64, plaintext string) error {
	sealed, err := m.keys.SealDestination(tenantID, id, plaintext)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, insertSecretSQL, pgx.NamedArgs{"tenant_id": tenantID, "destination_id": id,
		"key_id": sealed.KeyID, "aad_version": sealed.AADVersion, "ciphertext": sealed.Ciphertext})
	return err
}

const insertNATSSQL = `
INSERT INTO destination_nats_credentials (tenant_id, destination_id, auth, tls_ca, key_id, aad_version, ciphertext)
VALUES (@tenant_id, @destination_id, @auth, @tls_ca, @key_id, @aad_version, @ciphertext)`

// insertNATS seals a NATS destination's credentials and stores them;
// nothing when there are none.
func (m *Manager) insertNATS(ctx context.Context, tx pgx.Tx, tenantID, id int64, a stream.NATSAuth) error {
	if a.IsZero() {
		return nil
	}
	sealed, err := m.keys.SealNATS(tenantID, id, a)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, insertNATSSQL, pgx.NamedArgs{"tenant_id": tenantID, "destination_id": id,
		"auth": cmp.Or(a.Kind(), "none"), "tls_ca": a.TLSCA != "",
		"key_id": sealed.KeyID, "aad_version": sealed.AADVersion, "ciphertext": sealed.Ciphertext})
	return err
}

const lockDestinationForRotateSQL = `SELECT id FROM destinations WHERE tenant_id = @tenant_id AND id = @id FOR UPDATE`

// dropRotatedSecretsSQL removes the secrets rotated out before, expired or
// not: after a rotation only the new secret and the one it replaces sign.
const dropRotatedSecretsSQL = `
DELETE FROM destination_secrets
WHERE tenant_id = @tenant_id AND destination_id = @id AND expires_at IS NOT NULL`

const expireCurrentSecretSQL = `
UPDATE destination_secrets SET expires_at = now() + make_interval(secs => @grace::float8)
WHERE tenant_id = @tenant_id AND destination_id = @id AND expires_at IS NULL`

// RotateDestinationSecret implements stream.DestinationService. A second
// rotation within the grace ends the oldest secret at once. Under a key
// that none of the secrets in use are stored under it refuses, as create
// does (pg.CheckSealingKey), unless ctx allows a new key.
func (m *Manager) RotateDestinationSecret(ctx context.Context, tenantID, id int64) (string, error) {
	if !m.keys.CanSeal() {
		return "", pg.ErrNoKey
	}
	secret := whsig.NewSecret()
	err := m.change(ctx, tenantID, id, stream.AuditDestinationRotate, func(tx pgx.Tx) (string, error) {
		args := pgx.NamedArgs{"tenant_id": tenantID, "id": id, "grace": stream.DestinationSecretGrace.Seconds()}
		var locked int64
		if err := tx.QueryRow(ctx, lockDestinationForRotateSQL, args).Scan(&locked); errors.Is(err, pgx.ErrNoRows) {
			return "", notFound(id)
		} else if err != nil {
			return "", err
		}
		if err := pg.CheckSealingKey(ctx, tx, m.keys); err != nil {
			return "", err
		}
		if _, err := tx.Exec(ctx, dropRotatedSecretsSQL, args); err != nil {
			return "", err
		}
		if _, err := tx.Exec(ctx, expireCurrentSecretSQL, args); err != nil {
			return "", err
		}
		return "rotated the signing secret; the previous one signs for " + stream.DestinationSecretGrace.String() + " more",
			m.insertSecret(ctx, tx, tenantID, id, secret)
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}

const signingSecretsSQL = `
SELECT tenant_id, destination_id, id, key_id, aad_version, ciphertext FROM destination_secrets
WHERE tenant_id = @tenant_id AND destination_id = @id AND (expires_at IS NULL OR expires_at > now())
ORDER BY id DESC`

// SigningSecrets returns the secrets destination id signs with now, the
// current one first: what the sender signs each message with. A secret
// that does not open (a key the store lacks) is an error, not skipped: a
// message signed without it would be refused by the consumer.
func (m *Manager) SigningSecrets(ctx context.Context, tenantID, id int64) ([]string, error) {
	rows, err := m.pool.Query(ctx, signingSecretsSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": id})
	if err != nil {
		return nil, pg.Translate(err)
	}
	sealed, err := pgx.CollectRows(rows, pg.ScanSealedSecret)
	if err != nil {
		return nil, pg.Translate(err)
	}
	out := make([]string, len(sealed))
	for i, s := range sealed {
		if out[i], err = m.keys.Open(s); err != nil {
			return nil, fmt.Errorf("destination %d, secret %d: %w", id, s.ID, err)
		}
	}
	return out, nil
}
