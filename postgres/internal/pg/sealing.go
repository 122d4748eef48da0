package pg

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
)

type newKeyKey struct{}

// AllowNewKey returns ctx with which a new secret is sealed under the
// store's first key even when the secrets in use are stored under other
// keys: a deliberate move to a new key (`--new-key`), finished by
// `tidemark secrets rekey`.
func AllowNewKey(ctx context.Context) context.Context {
	return context.WithValue(ctx, newKeyKey{}, true)
}

// SecretKind is one kind of sealed secret that nodes must open: serve's
// start-up check (secretkeys.CheckSecrets) opens every one in use, and
// CheckSealingKey counts them by key id.
type SecretKind struct {
	// Uses words a count of secrets (%d) and of their owners (%d).
	Uses string
	// KeysSQL counts the secrets in use, and their owners, by key id.
	KeysSQL string
}

// The kinds of sealed secrets, in the order errors name them.
var (
	ProviderSecrets        = SecretKind{Uses: "%d active secrets of %d providers", KeysSQL: providerKeysSQL}
	DestinationSecrets     = SecretKind{Uses: "%d active secrets of %d destinations", KeysSQL: destinationKeysSQL}
	ProviderAPISecrets     = SecretKind{Uses: "%d API credentials of %d providers", KeysSQL: providerAPIKeysSQL}
	DestinationNATSSecrets = SecretKind{Uses: "%d NATS credentials of %d destinations", KeysSQL: destinationNATSKeysSQL}
	IDHashKey              = SecretKind{Uses: "%d id hash key of %d database", KeysSQL: idHashKeyKeysSQL}
	AppSecrets             = SecretKind{Uses: "%d client secrets of %d apps", KeysSQL: appKeysSQL}
	AppInstallTokens       = SecretKind{Uses: "%d tokens of %d app installs", KeysSQL: appInstallKeysSQL}
	SSOSecret              = SecretKind{Uses: "%d SSO client secret of %d identity provider", KeysSQL: ssoKeysSQL}
	// sealedOnCommand are the kinds an operator's command seals, which
	// CheckSealingKey reads: not the id hash key, which any node makes
	// under its own first key when it first needs it, and so shows
	// nothing of the key the nodes hold.
	sealedOnCommand = []SecretKind{ProviderSecrets, DestinationSecrets, ProviderAPISecrets, DestinationNATSSecrets,
		AppSecrets, AppInstallTokens, SSOSecret}
)

// The secrets in use, and their owners, by key id: active provider
// secrets, destination secrets that still sign, API credentials, NATS
// credentials (one per owner), the id hash key, app secrets that still
// verify and app installs' tokens (one per install).
const (
	providerKeysSQL = `
SELECT key_id, count(*), count(DISTINCT provider_id) FROM provider_secrets
WHERE retired_at IS NULL
GROUP BY key_id ORDER BY key_id`
	destinationKeysSQL = `
SELECT key_id, count(*), count(DISTINCT destination_id) FROM destination_secrets
WHERE expires_at IS NULL OR expires_at > now()
GROUP BY key_id ORDER BY key_id`
	providerAPIKeysSQL = `
SELECT key_id, count(*), count(*) FROM provider_api_credentials
GROUP BY key_id ORDER BY key_id`
	destinationNATSKeysSQL = `
SELECT key_id, count(*), count(*) FROM destination_nats_credentials
GROUP BY key_id ORDER BY key_id`
	idHashKeyKeysSQL = `
SELECT key_id, count(*), count(*) FROM id_hash_key
GROUP BY key_id ORDER BY key_id`
	appKeysSQL = `
SELECT key_id, count(*), count(DISTINCT app_id) FROM app_secrets
WHERE expires_at IS NULL OR expires_at > now()
GROUP BY key_id ORDER BY key_id`
	ssoKeysSQL = `
SELECT key_id, count(*), count(*) FROM sso_config
GROUP BY key_id ORDER BY key_id`
	appInstallKeysSQL = `
SELECT tokens_key_id, count(*), count(*) FROM app_installs
WHERE tokens_key_id IS NOT NULL
GROUP BY tokens_key_id ORDER BY tokens_key_id`
)

// CheckSealingKey refuses, with ECONFLICT, to seal a new secret (a
// provider's or a destination's signing secret, API credentials, NATS
// credentials) under a key that none of the secrets in use are stored
// under, unless ctx allows a new key: a node holding the key in use could
// not open it, and one holding only this key would refuse to start (the
// reviews' M6 and M7). Every kind of secret sealed on command counts: any
// of them in use under the sealing key shows that the nodes hold it.
func CheckSealingKey(ctx context.Context, tx pgx.Tx, keys *Keyring) error {
	if allowed, _ := ctx.Value(newKeyKey{}).(bool); allowed || !keys.CanSeal() {
		return nil // without keys, sealing answers ErrNoKey
	}
	b := &pgx.Batch{}
	for _, k := range sealedOnCommand {
		b.Queue(k.KeysSQL)
	}
	results := tx.SendBatch(ctx, b)
	defer results.Close()
	sealer := keys.SealerID()
	uses := map[string][]string{} // key id to its uses, one per kind
	for _, k := range sealedOnCommand {
		rows, err := results.Query()
		if err != nil {
			return Translate(err)
		}
		var (
			id              string
			secrets, owners int64
		)
		if _, err := pgx.ForEachRow(rows, []any{&id, &secrets, &owners}, func() error {
			uses[id] = append(uses[id], fmt.Sprintf(k.Uses, secrets, owners))
			return nil
		}); err != nil {
			return Translate(err)
		}
	}
	if err := results.Close(); err != nil {
		return Translate(err)
	}
	if len(uses) == 0 || uses[sealer] != nil {
		return nil
	}
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(uses)) {
		parts = append(parts, fmt.Sprintf("key id %s (%s)", id, strings.Join(uses[id], ", ")))
	}
	return domain.Errorf(domain.ECONFLICT, "The new secret would be sealed under key id %s, the first key of "+
		"TIDEMARK_ENCRYPTION_KEY, but the secrets in use are stored under %s. A serve or worker with the key "+
		"in use could not open it, and one with only this key would refuse to start. Set TIDEMARK_ENCRYPTION_KEY to "+
		"the key in use (several keys comma-separated, the one that seals new secrets first), or, to move to a new "+
		"key on purpose, use the command line with --new-key and then `tidemark secrets rekey`.",
		sealer, strings.Join(parts, ", "))
}
