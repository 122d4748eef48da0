package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/crypto/bcrypt"

	"github.com/tidemark/tidemark/domain"
)

// CreateTenant creates a tenant; an existing slug is an ECONFLICT error.
func (s *Store) CreateTenant(ctx context.Context, slug, name string) (domain.Tenant, error) {
	if err := domain.ValidateSlug("tenant", slug); err != nil {
		return domain.Tenant{}, err
	}
	if name == "" {
		name = slug
	}
	t := domain.Tenant{Slug: slug, Name: name}
	err := s.pool.QueryRow(ctx,
		`INSERT INTO tenants (slug, name) VALUES ($1, $2) RETURNING id, created_at`, slug, name).
		Scan(&t.ID, &t.CreatedAt)
	if uniqueViolation(err) {
		return domain.Tenant{}, domain.Errorf(domain.ECONFLICT, "tenant %q already exists", slug)
	}
	return t, translate(err)
}

// Tenant returns the tenant with that slug, or an ENOTFOUND error.
func (s *Store) Tenant(ctx context.Context, slug string) (domain.Tenant, error) {
	t := domain.Tenant{Slug: slug}
	err := s.pool.QueryRow(ctx, `SELECT id, name, created_at FROM tenants WHERE slug = $1`, slug).
		Scan(&t.ID, &t.Name, &t.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, notFound("tenant %q not found", slug)
	}
	return t, translate(err)
}

// CreateProvider connects a provider with its first signing secret.
func (s *Store) CreateProvider(ctx context.Context, tenantSlug, name, kind, secret string) (domain.Provider, error) {
	return s.CreateProviderWithConfig(ctx, tenantSlug, name, kind, secret, nil)
}

// CreateProviderWithConfig connects a provider with its kind-specific
// settings and, unless secret is empty (a kind that signs nothing), its
// first secret.
func (s *Store) CreateProviderWithConfig(ctx context.Context, tenantSlug, name, kind, secret string, config map[string]string) (domain.Provider, error) {
	if err := domain.ValidateSlug("provider", name); err != nil {
		return domain.Provider{}, err
	}
	t, err := s.Tenant(ctx, tenantSlug)
	if err != nil {
		return domain.Provider{}, err
	}
	if config == nil {
		config = map[string]string{}
	}
	p := domain.Provider{TenantID: t.ID, TenantSlug: t.Slug, Name: name, Kind: kind, Config: config}
	err = s.withTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx,
			`INSERT INTO providers (tenant_id, name, kind, config) VALUES ($1, $2, $3, $4) RETURNING id, created_at`,
			t.ID, name, kind, config).Scan(&p.ID, &p.CreatedAt)
		if uniqueViolation(err) {
			return domain.Errorf(domain.ECONFLICT, "provider %q already exists in tenant %q", name, tenantSlug)
		}
		if err != nil || secret == "" {
			return translate(err)
		}
		return s.addSecret(ctx, tx, t.ID, p.ID, secret)
	})
	return p, err
}

// RotateSecret adds a new signing secret to a provider. The newest previous
// secret stays active so deliveries signed with it keep working until it is
// retired; any older one is retired now, so at most two are ever active.
func (s *Store) RotateSecret(ctx context.Context, tenantID, providerID int64, secret string) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		// Lock the provider so concurrent rotations cannot leave three active secrets.
		var id int64
		err := tx.QueryRow(ctx, `SELECT id FROM providers WHERE tenant_id = $1 AND id = $2 FOR UPDATE`,
			tenantID, providerID).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("provider not found")
		}
		if err != nil {
			return translate(err)
		}
		_, err = tx.Exec(ctx, `
			UPDATE provider_secrets SET retired_at = now()
			WHERE tenant_id = $1 AND provider_id = $2 AND retired_at IS NULL
			  AND id <> (SELECT max(id) FROM provider_secrets
			             WHERE tenant_id = $1 AND provider_id = $2 AND retired_at IS NULL)`,
			tenantID, providerID)
		if err != nil {
			return translate(err)
		}
		return s.addSecret(ctx, tx, tenantID, providerID, secret)
	})
}

// RetireOldSecrets ends a rotation: only the newest secret stays active.
func (s *Store) RetireOldSecrets(ctx context.Context, tenantID, providerID int64) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE provider_secrets SET retired_at = now()
		WHERE tenant_id = $1 AND provider_id = $2 AND retired_at IS NULL
		  AND id <> (SELECT max(id) FROM provider_secrets
		             WHERE tenant_id = $1 AND provider_id = $2 AND retired_at IS NULL)`,
		tenantID, providerID)
	return tag.RowsAffected(), translate(err)
}

func (s *Store) addSecret(ctx context.Context, tx pgx.Tx, tenantID, providerID int64, secret string) error {
	_, err := tx.Exec(ctx,
		`INSERT INTO provider_secrets (tenant_id, provider_id, key_id, ciphertext) VALUES ($1, $2, $3, $4)`,
		tenantID, providerID, s.cipher.keyID, s.cipher.seal(secret))
	return translate(err)
}

// Endpoint implements domain.IngestService in one query: the provider, its
// active secrets and its scopes.
func (s *Store) Endpoint(ctx context.Context, tenantSlug, providerName string) (domain.ProviderEndpoint, error) {
	var (
		p      domain.ProviderEndpoint
		keyIDs []string
		sealed [][]byte
		scopes []scopeRow
	)
	err := s.pool.QueryRow(ctx, `
		SELECT t.id, p.id, p.kind, p.created_at, p.config,
		       coalesce((SELECT array_agg(key_id ORDER BY id DESC) FROM provider_secrets ps
		                 WHERE ps.tenant_id = t.id AND ps.provider_id = p.id AND ps.retired_at IS NULL), '{}'),
		       coalesce((SELECT array_agg(ciphertext ORDER BY id DESC) FROM provider_secrets ps
		                 WHERE ps.tenant_id = t.id AND ps.provider_id = p.id AND ps.retired_at IS NULL), '{}'),
		       coalesce((SELECT json_agg(json_build_object('object_type', object_type, 'action', action,
		                        'ttl_seconds', ttl_seconds, 'identifier_rule', identifier_rule, 'enabled', enabled))
		                 FROM scopes sc WHERE sc.tenant_id = t.id AND sc.provider_id = p.id), '[]')
		FROM tenants t JOIN providers p ON p.tenant_id = t.id
		WHERE t.slug = $1 AND p.name = $2`, tenantSlug, providerName).
		Scan(&p.TenantID, &p.ID, &p.Kind, &p.CreatedAt, &p.Config, &keyIDs, &sealed, &scopes)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, notFound("unknown tenant %q or provider %q", tenantSlug, providerName)
	}
	if err != nil {
		return p, translate(err)
	}
	p.TenantSlug, p.Name = tenantSlug, providerName
	for i := range sealed {
		secret, err := s.cipher.open(keyIDs[i], sealed[i])
		if err != nil {
			return p, err
		}
		p.Secrets = append(p.Secrets, secret)
	}
	p.Scopes = make(map[domain.ScopeName]domain.Scope, len(scopes))
	for _, r := range scopes {
		rule, err := domain.ParseIdentifierRule(r.IdentifierRule)
		if err != nil {
			return p, fmt.Errorf("scope %s.%s: %w", r.ObjectType, r.Action, err)
		}
		name := domain.ScopeName{ObjectType: r.ObjectType, Action: r.Action}
		p.Scopes[name] = domain.Scope{ScopeName: name, TTL: time.Duration(r.TTLSeconds) * time.Second,
			IdentifierRule: rule, Enabled: r.Enabled}
	}
	return p, nil
}

type scopeRow struct {
	ObjectType     string `json:"object_type"`
	Action         string `json:"action"`
	TTLSeconds     int64  `json:"ttl_seconds"`
	IdentifierRule string `json:"identifier_rule"`
	Enabled        bool   `json:"enabled"`
}

// UpdateScope changes a scope's settings, creating the scope if needed.
func (s *Store) UpdateScope(ctx context.Context, tenantID, providerID int64, sc domain.Scope) error {
	if err := domain.ValidateTTL(sc.TTL); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO scopes (tenant_id, provider_id, object_type, action, ttl_seconds, identifier_rule, enabled)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (tenant_id, provider_id, object_type, action) DO UPDATE SET
		  ttl_seconds = EXCLUDED.ttl_seconds, identifier_rule = EXCLUDED.identifier_rule,
		  enabled = EXCLUDED.enabled, updated_at = now()`,
		tenantID, providerID, sc.ObjectType, sc.Action, int64(sc.TTL/time.Second), sc.IdentifierRule.String(), sc.Enabled)
	return translate(err)
}

// CreateToken creates an API token for a tenant and returns it; only its
// hash is stored.
func (s *Store) CreateToken(ctx context.Context, tenantSlug, name string) (string, error) {
	t, err := s.Tenant(ctx, tenantSlug)
	if err != nil {
		return "", err
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	token := "tmk_" + base64.RawURLEncoding.EncodeToString(raw)
	if name == "" {
		name = "token created " + time.Now().UTC().Format(time.DateTime)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO api_tokens (tenant_id, name, token_hash) VALUES ($1, $2, $3)`,
		t.ID, name, tokenHash(token))
	return token, translate(err)
}

func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// CreateUser creates an operator. tenantSlug, when set, makes the user a
// member of that tenant; an existing email is an ECONFLICT error.
func (s *Store) CreateUser(ctx context.Context, email, password string, admin bool, tenantSlug string) error {
	email = strings.ToLower(strings.TrimSpace(email))
	if !strings.Contains(email, "@") {
		return domain.Errorf(domain.EINVALID, "email %q is not an email address", email)
	}
	if len(password) < 8 {
		return domain.Errorf(domain.EINVALID, "password must be at least 8 characters")
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	var tenantID *int64
	if tenantSlug != "" {
		t, err := s.Tenant(ctx, tenantSlug)
		if err != nil {
			return err
		}
		tenantID = &t.ID
	}
	return s.withTx(ctx, func(tx pgx.Tx) error {
		var userID int64
		err := tx.QueryRow(ctx, `INSERT INTO users (email, password_hash, is_admin) VALUES ($1, $2, $3) RETURNING id`,
			email, string(hash), admin).Scan(&userID)
		if uniqueViolation(err) {
			return domain.Errorf(domain.ECONFLICT, "user %q already exists", email)
		}
		if err != nil || tenantID == nil {
			return translate(err)
		}
		_, err = tx.Exec(ctx, `INSERT INTO memberships (tenant_id, user_id) VALUES ($1, $2)`, *tenantID, userID)
		return translate(err)
	})
}

func uniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// AddMember makes an existing operator a member of a tenant.
func (s *Store) AddMember(ctx context.Context, tenantSlug, email string) error {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO memberships (tenant_id, user_id)
		SELECT t.id, u.id FROM tenants t, users u WHERE t.slug = $1 AND u.email = $2
		ON CONFLICT DO NOTHING`, tenantSlug, strings.ToLower(strings.TrimSpace(email)))
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		var exists bool
		s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM memberships m JOIN tenants t ON t.id = m.tenant_id
			JOIN users u ON u.id = m.user_id WHERE t.slug = $1 AND u.email = $2)`, tenantSlug, strings.ToLower(email)).Scan(&exists)
		if !exists {
			return notFound("no tenant %q or no operator %q", tenantSlug, email)
		}
	}
	return nil
}
