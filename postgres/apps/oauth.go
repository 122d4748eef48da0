package apps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// The OAuth installs (domain.AppOAuthService): their states, and installs
// holding tokens, sealed together as JSON (pg.AADAppInstallTokens).

var _ domain.AppOAuthService = (*Registry)(nil)

const forgetExpiredStatesSQL = `
DELETE FROM app_oauth_states WHERE created_at < now() - make_interval(secs => @life::float8)`

const insertStateSQL = `
INSERT INTO app_oauth_states (state_hash, nonce_hash, user_id, tenant_id, app_id, provider_name)
VALUES (@state_hash, @nonce_hash, @user_id, @tenant_id, @app_id, @provider_name)`

// StartAppOAuth implements domain.AppOAuthService.
func (s *Registry) StartAppOAuth(ctx context.Context, st domain.AppOAuthStart) error {
	if len(st.StateHash) == 0 || len(st.NonceHash) == 0 {
		return domain.Errorf(domain.EINVALID, "an install's state needs its state and nonce")
	}
	if _, err := s.pool.Exec(ctx, forgetExpiredStatesSQL, pgx.NamedArgs{"life": domain.AppOAuthStateLife.Seconds()}); err != nil {
		return pg.Translate(err)
	}
	_, err := s.pool.Exec(ctx, insertStateSQL, pgx.NamedArgs{"state_hash": st.StateHash, "nonce_hash": st.NonceHash,
		"user_id": st.UserID, "tenant_id": st.TenantID, "app_id": st.AppID, "provider_name": st.ProviderName})
	return pg.Translate(err)
}

// takeStateSQL deletes a state as it reads it, so that two callbacks with
// the same state cannot both have it. Its age is judged by this node's
// clock: Citus allows no now() in a RETURNING clause.
const takeStateSQL = `
DELETE FROM app_oauth_states WHERE state_hash = @state_hash
RETURNING state_hash, nonce_hash, user_id, tenant_id, app_id, provider_name, created_at`

// TakeAppOAuthState implements domain.AppOAuthService.
func (s *Registry) TakeAppOAuthState(ctx context.Context, stateHash []byte) (domain.AppOAuthState, error) {
	var st domain.AppOAuthState
	err := s.pool.QueryRow(ctx, takeStateSQL, pgx.NamedArgs{"state_hash": stateHash}).
		Scan(&st.StateHash, &st.NonceHash, &st.UserID, &st.TenantID, &st.AppID, &st.ProviderName, &st.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, pg.NotFound("the install's state is unknown or was used already")
	}
	if err != nil {
		return st, pg.Translate(err)
	}
	if time.Since(st.CreatedAt) >= domain.AppOAuthStateLife {
		return st, domain.Errorf(domain.EINVALID, "the install's state expired: it is good for %s",
			domain.FormatDuration(domain.AppOAuthStateLife))
	}
	err = s.pool.QueryRow(ctx, tenantSlugSQL, pgx.NamedArgs{"tenant_id": st.TenantID}).Scan(&st.TenantSlug)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, pg.NotFound("the install's tenant no longer exists")
	}
	return st, pg.Translate(err)
}

const tenantSlugSQL = `SELECT slug FROM tenants WHERE id = @tenant_id`

const lockAppByIDSQL = `SELECT ` + appColumns + ` FROM apps WHERE id = @id FOR UPDATE`

const providerByNameSQL = `SELECT id, kind FROM providers WHERE tenant_id = @tenant_id AND name = @name`

// The provider an install creates, as ConnectProvider would (postgres/provider.go).
const (
	createProviderSQL = `
INSERT INTO providers (tenant_id, name, kind, config) VALUES (@tenant_id, @name, @kind, @config) RETURNING id`
	addProviderSecretSQL = `
INSERT INTO provider_secrets (tenant_id, provider_id, key_id, aad_version, ciphertext)
VALUES (@tenant_id, @provider_id, @key_id, @aad_version, @ciphertext)`
)

const insertOAuthInstallSQL = `
INSERT INTO app_installs (app_id, portal_id, tenant_id, provider_id)
VALUES (@app_id, @portal_id, @tenant_id, @provider_id)
RETURNING id`

const setTokensSQL = `
UPDATE app_installs SET tokens_key_id = @key_id, tokens_aad_version = @aad_version, tokens_ciphertext = @ciphertext,
       status = 'active'
WHERE tenant_id = @tenant_id AND id = @id`

// InstallByOAuth implements domain.AppOAuthService. The app's row is
// locked, as ConnectPortal locks it.
func (s *Registry) InstallByOAuth(ctx context.Context, oi domain.AppOAuthInstall) (domain.AppInstall, error) {
	var in domain.AppInstall
	if oi.PortalID <= 0 {
		return in, domain.Errorf(domain.EINVALID, "the portal id must be a positive number, HubSpot's hub id")
	}
	if err := domain.ValidateSlug("provider", oi.ProviderName); err != nil {
		return in, err
	}
	if oi.Tokens.RefreshToken == "" {
		return in, domain.Errorf(domain.EINVALID, "an install by OAuth needs its refresh token")
	}
	if !s.keys.CanSeal() {
		return in, pg.ErrNoKey
	}
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		app, err := appByID(ctx, tx, oi.AppID)
		if err != nil {
			return err
		}
		if err := pg.CheckSealingKey(ctx, tx, s.keys); err != nil {
			return err
		}
		providerID, err := s.installProvider(ctx, tx, app, oi)
		if err != nil {
			return err
		}
		existing, err := portalInstall(ctx, tx, app.ID, oi.PortalID)
		switch {
		case err == nil && (existing.TenantID != oi.TenantID || existing.ProviderID != providerID):
			return domain.Errorf(domain.ECONFLICT, "portal %d of app %s is installed for tenant %s (provider %s)",
				oi.PortalID, app.Name, existing.TenantSlug, existing.ProviderName)
		case err == nil:
			in = existing // installed again: new tokens
		case domain.ErrorCode(err) != domain.ENOTFOUND:
			return err
		default:
			err = tx.QueryRow(ctx, insertOAuthInstallSQL, pgx.NamedArgs{"app_id": app.ID, "portal_id": oi.PortalID,
				"tenant_id": oi.TenantID, "provider_id": providerID}).Scan(&in.ID)
			if pg.UniqueViolation(err) {
				return domain.Errorf(domain.ECONFLICT, "portal %d of app %s is installed already, or provider %s receives "+
					"another portal of the app", oi.PortalID, app.Name, oi.ProviderName)
			}
			if err != nil {
				return err
			}
		}
		if err := s.setTokens(ctx, tx, oi.TenantID, in.ID, oi.Tokens); err != nil {
			return err
		}
		if in, err = portalInstall(ctx, tx, app.ID, oi.PortalID); err != nil {
			return err
		}
		return pg.Audit(ctx, tx, oi.TenantID, domain.AuditAppInstall, installTarget(in),
			"installed by OAuth for provider "+in.ProviderName+", with its tokens")
	})
	return in, pg.Translate(err)
}

// appByID reads and locks the app of id; ENOTFOUND when it is gone.
func appByID(ctx context.Context, tx pgx.Tx, id int64) (domain.App, error) {
	rows, err := tx.Query(ctx, lockAppByIDSQL, pgx.NamedArgs{"id": id})
	if err != nil {
		return domain.App{}, err
	}
	app, err := pgx.CollectExactlyOneRow(rows, scanApp)
	if errors.Is(err, pgx.ErrNoRows) {
		return app, pg.NotFound("the app no longer exists")
	}
	return app, err
}

// installProvider is the id of the tenant's provider named in oi, created
// of the app's kind when missing.
func (s *Registry) installProvider(ctx context.Context, tx pgx.Tx, app domain.App, oi domain.AppOAuthInstall) (int64, error) {
	var id int64
	var kind string
	err := tx.QueryRow(ctx, providerByNameSQL, pgx.NamedArgs{"tenant_id": oi.TenantID, "name": oi.ProviderName}).Scan(&id, &kind)
	switch {
	case err == nil && kind != app.Kind:
		return 0, domain.Errorf(domain.EINVALID, "provider %s is a %s provider; app %s connects %s providers",
			oi.ProviderName, kind, app.Name, app.Kind)
	case err == nil:
		return id, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return 0, err
	}
	config := oi.NewConfig
	if config == nil {
		config = map[string]string{}
	}
	err = tx.QueryRow(ctx, createProviderSQL, pgx.NamedArgs{"tenant_id": oi.TenantID, "name": oi.ProviderName,
		"kind": app.Kind, "config": config}).Scan(&id)
	if err != nil {
		return 0, err
	}
	summary := "kind " + app.Kind
	if len(config) > 0 {
		summary += "; settings " + settings(config)
	}
	if oi.NewSecret == "" {
		summary += "; no secret"
	} else {
		sealed, err := s.keys.Seal(oi.TenantID, id, oi.NewSecret)
		if err != nil {
			return 0, err
		}
		if _, err := tx.Exec(ctx, addProviderSecretSQL, pgx.NamedArgs{"tenant_id": oi.TenantID, "provider_id": id,
			"key_id": sealed.KeyID, "aad_version": sealed.AADVersion, "ciphertext": sealed.Ciphertext}); err != nil {
			return 0, err
		}
		summary += "; one secret"
	}
	if err := pg.NotifyEndpoints(ctx, tx, oi.TenantID); err != nil {
		return 0, err
	}
	return id, pg.Audit(ctx, tx, oi.TenantID, domain.AuditProviderCreate, oi.ProviderName,
		summary+"; created by the OAuth install of app "+app.Name)
}

// settings lists a provider's settings as its audit entry does.
func settings(config map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(config)) {
		out = append(out, k+"="+config[k])
	}
	return strings.Join(out, ", ")
}

// setTokens seals t for the install and stores it, the install active.
func (s *Registry) setTokens(ctx context.Context, tx pgx.Tx, tenantID, installID int64, t domain.AppTokens) error {
	plain, err := json.Marshal(t)
	if err != nil {
		return err
	}
	sealed, err := s.keys.SealAppInstallTokens(tenantID, installID, string(plain))
	if err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, setTokensSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": installID,
		"key_id": sealed.KeyID, "aad_version": sealed.AADVersion, "ciphertext": sealed.Ciphertext})
	if err == nil && tag.RowsAffected() == 0 {
		return pg.NotFound("install %d not found", installID)
	}
	return err
}

const installTokensSQL = `
SELECT tenant_id, id, id, tokens_key_id, tokens_aad_version, tokens_ciphertext FROM app_installs
WHERE tenant_id = @tenant_id AND id = @id AND tokens_ciphertext IS NOT NULL`

// InstallTokens implements domain.AppOAuthService.
func (s *Registry) InstallTokens(ctx context.Context, tenantID, installID int64) (domain.AppTokens, error) {
	var t domain.AppTokens
	rows, err := s.pool.Query(ctx, installTokensSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": installID})
	if err != nil {
		return t, pg.Translate(err)
	}
	sealed, err := pgx.CollectExactlyOneRow(rows, pg.ScanSealedSecret)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, pg.NotFound("install %d has no tokens", installID)
	}
	if err != nil {
		return t, pg.Translate(err)
	}
	plain, err := s.keys.Open(sealed)
	if err != nil {
		s.secrets.LogUndecryptableApp(sealed, err)
		return t, fmt.Errorf("install %d: its tokens do not open: %w", installID, err)
	}
	return t, json.Unmarshal([]byte(plain), &t)
}

// SaveInstallTokens implements domain.AppOAuthService. Renewed tokens are
// sealed under the node's first key without CheckSealingKey: a renewal is
// no operator's command, and the key check at start-up covers the node.
func (s *Registry) SaveInstallTokens(ctx context.Context, tenantID, installID int64, t domain.AppTokens) error {
	if t.AccessToken == "" || t.RefreshToken == "" {
		return domain.Errorf(domain.EINVALID, "renewed tokens need an access token and a refresh token")
	}
	return s.withTx(ctx, func(tx pgx.Tx) error { return s.setTokens(ctx, tx, tenantID, installID, t) })
}

const markNeedsReconnectSQL = `
UPDATE app_installs SET status = 'needs_reconnect'
WHERE tenant_id = @tenant_id AND id = @id AND status = 'active'`

const installByIDSQL = `SELECT ` + installColumns + installsFrom + `
WHERE i.tenant_id = @tenant_id AND i.id = @id`

// MarkNeedsReconnect implements domain.AppOAuthService. Marking an install
// marked already changes nothing and is not audited again.
func (s *Registry) MarkNeedsReconnect(ctx context.Context, tenantID, installID int64, reason string) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, installByIDSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": installID})
		if err != nil {
			return err
		}
		in, err := pgx.CollectExactlyOneRow(rows, scanInstall)
		if errors.Is(err, pgx.ErrNoRows) {
			return pg.NotFound("install %d not found", installID)
		}
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, markNeedsReconnectSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": installID})
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return pg.Audit(ctx, tx, tenantID, domain.AuditAppNeedsReconnect, installTarget(in),
			"needs reconnect: "+reason+"; an owner must install the app again")
	})
}
