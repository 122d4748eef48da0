package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/tidemark/tidemark/domain"
)

// endpointSQL reads a provider, its active secrets (newest first) and its
// scopes.
const endpointSQL = `
SELECT t.id, p.id, p.kind, p.created_at, p.config, coalesce(p.max_body, 0), p.max_future_skew_seconds,
       coalesce((SELECT array_agg(key_id ORDER BY id DESC) FROM provider_secrets ps
                 WHERE ps.tenant_id = t.id AND ps.provider_id = p.id AND ps.retired_at IS NULL), '{}'),
       coalesce((SELECT array_agg(ciphertext ORDER BY id DESC) FROM provider_secrets ps
                 WHERE ps.tenant_id = t.id AND ps.provider_id = p.id AND ps.retired_at IS NULL), '{}'),
       coalesce((SELECT json_agg(json_build_object('object_type', object_type, 'action', action,
                        'ttl_seconds', ttl_seconds, 'identifier_rule', identifier_rule, 'enabled', enabled))
                 FROM scopes sc WHERE sc.tenant_id = t.id AND sc.provider_id = p.id), '[]')
FROM tenants t JOIN providers p ON p.tenant_id = t.id
WHERE t.slug = @tenant AND p.name = @provider`

// Endpoint implements domain.IngestService in one query: the provider, its
// active secrets and its scopes.
func (s *Store) Endpoint(ctx context.Context, tenantSlug, providerName string) (domain.ProviderEndpoint, error) {
	var (
		p      domain.ProviderEndpoint
		keyIDs []string
		sealed [][]byte
		scopes []scopeRow
		skew   int64
	)
	err := s.pool.QueryRow(ctx, endpointSQL, pgx.NamedArgs{"tenant": tenantSlug, "provider": providerName}).
		Scan(&p.TenantID, &p.ID, &p.Kind, &p.CreatedAt, &p.Config, &p.MaxBody, &skew, &keyIDs, &sealed, &scopes)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, notFound("unknown tenant %q or provider %q", tenantSlug, providerName)
	}
	if err != nil {
		return p, translate(err)
	}
	p.TenantSlug, p.Name = tenantSlug, providerName
	p.MaxFutureSkew = time.Duration(skew) * time.Second
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
