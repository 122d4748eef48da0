package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// An endpoint is read in two statements: the tenant's id by its slug,
// then its provider, the provider's active secrets (newest first) and its
// scopes, each filtered by that id. On Citus the first reads the reference
// table and the second one shard on one worker; one statement, which knew
// the tenant only from the slug, read every shard of three tables: 0.8-3.4 s
// each with fifty tenants' deliveries arriving on the test cluster, most
// of a delivery's 3 s budget (docs/scale.md).
const (
	endpointTenantSQL = `SELECT id FROM tenants WHERE slug = @tenant AND archived_at IS NULL`
	endpointSQL       = `
SELECT p.id, p.kind, p.created_at, p.config, coalesce(p.max_body, 0), p.max_future_skew_seconds,
       coalesce(ps.ids, '{}'), coalesce(ps.key_ids, '{}'), coalesce(ps.aad_versions, '{}'), coalesce(ps.ciphertexts, '{}'),
       coalesce((SELECT json_agg(json_build_object('object_type', object_type, 'action', action,
                        'ttl_seconds', ttl_seconds, 'identifier_rule', identifier_rule, 'enabled', enabled))
                 FROM scopes sc WHERE sc.tenant_id = @tenant_id AND sc.provider_id = p.id), '[]')
FROM providers p
CROSS JOIN LATERAL (
    SELECT array_agg(id ORDER BY created_at DESC, id DESC) AS ids, array_agg(key_id ORDER BY created_at DESC, id DESC) AS key_ids,
           array_agg(aad_version ORDER BY created_at DESC, id DESC) AS aad_versions,
           array_agg(ciphertext ORDER BY created_at DESC, id DESC) AS ciphertexts
    FROM provider_secrets
    WHERE tenant_id = @tenant_id AND provider_id = p.id AND retired_at IS NULL) ps
WHERE p.tenant_id = @tenant_id AND p.name = @provider`
)

// Endpoint implements domain.IngestService: the provider, its active
// secrets and its scopes, from the endpoint cache while ListenForChanges
// runs, else from the database. A secret that cannot be decrypted is logged and
// left out; without keys the store returns ErrNoKey for a provider that has
// secrets. The endpoint returned may be shared with other callers: it is
// read, never modified.
func (w *Writer) Endpoint(ctx context.Context, tenantSlug, providerName string) (domain.ProviderEndpoint, error) {
	if domain.ValidateSlug("tenant", tenantSlug) != nil || domain.ValidateSlug("provider", providerName) != nil {
		// No row can have such a name; the database need not be asked.
		return domain.ProviderEndpoint{}, endpointNotFound(tenantSlug, providerName)
	}
	key, began := endpointKey{tenantSlug, providerName}, time.Now()
	hit, gen := w.endpoints.get(key, began)
	if hit != nil {
		return hit.p, hit.err
	}
	p, err := w.loadEndpoint(ctx, tenantSlug, providerName)
	if err == nil || domain.ErrorCode(err) == domain.ENOTFOUND {
		w.endpoints.put(key, gen, p, err, began)
	}
	return p, err
}

// CachedEndpoint is Endpoint from the cache alone: hit is false when the
// cache is down or holds nothing for the names, and nothing is queried.
func (w *Writer) CachedEndpoint(tenantSlug, providerName string) (p domain.ProviderEndpoint, hit bool, err error) {
	e, _ := w.endpoints.get(endpointKey{tenantSlug, providerName}, time.Now())
	if e == nil {
		return domain.ProviderEndpoint{}, false, nil
	}
	return e.p, true, e.err
}

func endpointNotFound(tenantSlug, providerName string) error {
	return pg.NotFound("unknown tenant %q or provider %q", tenantSlug, providerName)
}

// loadEndpoint reads an endpoint from the database.
func (w *Writer) loadEndpoint(ctx context.Context, tenantSlug, providerName string) (domain.ProviderEndpoint, error) {
	var (
		p      domain.ProviderEndpoint
		ids    []int64
		keyIDs []string
		aads   []int16
		sealed [][]byte
		scopes []scopeRow
		skew   int64
	)
	err := w.pool.QueryRow(ctx, endpointTenantSQL, pgx.NamedArgs{"tenant": tenantSlug}).Scan(&p.TenantID)
	if err == nil {
		err = w.pool.QueryRow(ctx, endpointSQL, pgx.NamedArgs{"tenant_id": p.TenantID, "provider": providerName}).
			Scan(&p.ID, &p.Kind, &p.CreatedAt, &p.Config, &p.MaxBody, &skew, &ids, &keyIDs, &aads, &sealed, &scopes)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return p, endpointNotFound(tenantSlug, providerName)
	}
	if err != nil {
		return p, pg.Translate(err)
	}
	p.TenantSlug, p.Name = tenantSlug, providerName
	p.MaxFutureSkew = time.Duration(skew) * time.Second
	secrets := make([]pg.SealedSecret, len(ids))
	for i := range ids {
		secrets[i] = pg.SealedSecret{TenantID: p.TenantID, ProviderID: p.ID, ID: ids[i], KeyID: keyIDs[i],
			AADVersion: aads[i], Ciphertext: sealed[i]}
	}
	if p.Secrets, err = w.secrets.OpenAll(secrets); err != nil {
		return p, err
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
