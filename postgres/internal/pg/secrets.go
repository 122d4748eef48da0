package pg

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// secretLogEvery is how often one undecryptable secret is logged again.
const secretLogEvery = 5 * time.Minute

// Secrets opens stored provider secrets with a keyring and logs those it
// cannot open, each at most once per secretLogEvery, so that steady
// traffic to its provider does not repeat the error on every delivery.
type Secrets struct {
	Keys *Keyring
	log  *slog.Logger

	undecryptable sync.Map // loggedSecret to the time.Time it was last logged
}

// NewSecrets returns Secrets opening with keys and logging to log.
func NewSecrets(keys *Keyring, log *slog.Logger) *Secrets {
	return &Secrets{Keys: keys, log: log}
}

// OpenAll decrypts secrets in order and returns the plaintexts of those
// that open. One that does not is logged and skipped, so a provider keeps
// working with its other secrets. Without keys it returns ErrNoKey.
func (s *Secrets) OpenAll(secrets []SealedSecret) ([]string, error) {
	var out []string
	for _, sec := range secrets {
		plain, err := s.Keys.Open(sec)
		if errors.Is(err, ErrNoKey) {
			return nil, err
		}
		if err != nil {
			s.LogUndecryptable(sec, err)
			continue
		}
		out = append(out, plain)
	}
	return out, nil
}

// LogUndecryptable logs a provider secret that cannot be decrypted by its
// ids, at most once per secretLogEvery.
func (s *Secrets) LogUndecryptable(sec SealedSecret, err error) {
	s.logUndecryptable("provider", "provider_id", sec, err)
}

// LogUndecryptableDestination logs a destination's secret likewise; its
// ProviderID holds the destination id.
func (s *Secrets) LogUndecryptableDestination(sec SealedSecret, err error) {
	s.logUndecryptable("destination", "destination_id", sec, err)
}

// LogUndecryptableProviderAPI logs the secret of a provider's API
// credentials likewise, by its provider's ids.
func (s *Secrets) LogUndecryptableProviderAPI(sec SealedSecret, err error) {
	s.logUndecryptable("provider API", "provider_id", sec, err)
}

// LogUndecryptableDestinationNATS logs a NATS destination's credentials
// likewise, by the destination's ids.
func (s *Secrets) LogUndecryptableDestinationNATS(sec SealedSecret, err error) {
	s.logUndecryptable("destination NATS", "destination_id", sec, err)
}

// LogUndecryptableIDHashKey logs the id hash key likewise.
func (s *Secrets) LogUndecryptableIDHashKey(sec SealedSecret, err error) {
	s.logUndecryptable("id hash key", "owner_id", sec, err)
}

// LogUndecryptableApp logs an app's client secret likewise, by the app's id.
func (s *Secrets) LogUndecryptableApp(sec SealedSecret, err error) {
	s.logUndecryptable("app", "app_id", sec, err)
}

// LogUndecryptableSSO logs the SSO client secret likewise.
func (s *Secrets) LogUndecryptableSSO(sec SealedSecret, err error) {
	s.logUndecryptable("SSO", "sso", sec, err)
}

// LogUndecryptableAppInstall logs an app install's tokens likewise, by the
// install's ids.
func (s *Secrets) LogUndecryptableAppInstall(sec SealedSecret, err error) {
	s.logUndecryptable("app install", "install_id", sec, err)
}

// loggedSecret keys the log's memory: the tables number their secrets
// independently.
type loggedSecret struct {
	owner string
	id    int64
}

func (s *Secrets) logUndecryptable(owner, idKey string, sec SealedSecret, err error) {
	now := time.Now()
	key := loggedSecret{owner, sec.ID}
	if last, ok := s.undecryptable.Load(key); ok && now.Sub(last.(time.Time)) < secretLogEvery {
		return
	}
	s.undecryptable.Store(key, now)
	s.log.Error(owner+" secret cannot be decrypted; skipped", "key_id", sec.KeyID, "tenant_id", sec.TenantID,
		idKey, sec.ProviderID, "secret_id", sec.ID, "err", err)
}

// ScanSealedSecret reads a row of provider_secrets (tenant_id, provider_id,
// id, key_id, aad_version, ciphertext) or of destination_secrets, its
// destination_id in place of provider_id.
func ScanSealedSecret(row pgx.CollectableRow) (SealedSecret, error) {
	var sec SealedSecret
	return sec, row.Scan(&sec.TenantID, &sec.ProviderID, &sec.ID, &sec.KeyID, &sec.AADVersion, &sec.Ciphertext)
}
