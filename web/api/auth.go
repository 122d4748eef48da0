package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/httpx"
)

type tenantKey struct{}

func tokenTenant(ctx context.Context) domain.Tenant {
	return tokenGrant(ctx).Tenant
}

// tokenGrant is what the request's API token grants.
func tokenGrant(ctx context.Context) domain.TokenGrant {
	g, _ := ctx.Value(tenantKey{}).(domain.TokenGrant)
	return g
}

// requireToken authenticates the bearer token and puts what it grants in
// the context, with the token as the actor of the changes made with it. A
// token of another tenant answers 404, exactly like a missing resource, so
// that tokens cannot probe which tenants exist.
func (h *Handler) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(w, r)
		if !ok {
			return
		}
		g, err := h.store.TenantForToken(r.Context(), chi.URLParam(r, "tenant"), token)
		if err != nil {
			h.refuseToken(w, r, err)
			return
		}
		ctx := context.WithValue(r.Context(), tenantKey{}, g)
		ctx = domain.WithActor(ctx, domain.Actor{Kind: domain.ActorToken, Name: g.Name, Address: httpx.ClientAddress(r), ID: g.ID})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Authenticate resolves the request's bearer token by itself, for a
// surface whose URL names no tenant (the MCP server): the token alone
// decides the tenant. Without a working token it has answered as the
// tenant routes do (401 with WWW-Authenticate) and returns false.
func (h *Handler) Authenticate(w http.ResponseWriter, r *http.Request) (domain.TokenGrant, bool) {
	token, ok := bearerToken(w, r)
	if !ok {
		return domain.TokenGrant{}, false
	}
	g, err := h.store.GrantForToken(r.Context(), token)
	if err != nil {
		h.refuseToken(w, r, err)
		return domain.TokenGrant{}, false
	}
	return g, true
}

// bearerToken is the request's bearer token; without one it has answered
// 401 and returns false.
func bearerToken(w http.ResponseWriter, r *http.Request) (string, bool) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="tidemark"`)
		httpx.WriteError(w, http.StatusUnauthorized, "missing API token; send the header Authorization: Bearer <token>")
		return "", false
	}
	return token, true
}

// refuseToken answers a token its lookup refused.
func (h *Handler) refuseToken(w http.ResponseWriter, r *http.Request, err error) {
	if domain.ErrorCode(err) == domain.EUNAUTHORIZED {
		w.Header().Set("WWW-Authenticate", `Bearer realm="tidemark", error="invalid_token"`)
	}
	httpx.Fail(h.log, w, r, err)
}

type adminKey struct{}

// adminGrant is what the request's admin token grants.
func adminGrant(ctx context.Context) domain.AdminGrant {
	g, _ := ctx.Value(adminKey{}).(domain.AdminGrant)
	return g
}

// requireAdminToken authenticates an admin token for the admin API: none
// or a bad one is 401, a tenant's working token 403.
func (h *Handler) requireAdminToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(w, r)
		if !ok {
			return
		}
		g, err := h.store.AdminForToken(r.Context(), token)
		if err != nil {
			h.refuseToken(w, r, err)
			return
		}
		ctx := context.WithValue(r.Context(), adminKey{}, g)
		ctx = domain.WithActor(ctx, domain.Actor{Kind: domain.ActorToken, Name: g.Name, Address: httpx.ClientAddress(r), ID: g.ID})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// requireWriteToken answers requests with a read-only token 403: the
// routes it guards change something.
func requireWriteToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tokenGrant(r.Context()).Access != domain.TokenWrite {
			httpx.WriteError(w, http.StatusForbidden, "this API token is read-only; this needs a read-write token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// readKeys are the gate's keys of an API read: its tenant and its token.
func readKeys(r *http.Request) (tenant, caller string) {
	g := tokenGrant(r.Context())
	id := strconv.FormatInt(g.Tenant.ID, 10)
	return id, "token " + g.Name
}

// adminReadKeys are the gate's keys of an admin API read: the admin
// tokens share one key of their own, apart from every tenant's.
func adminReadKeys(r *http.Request) (tenant, caller string) {
	return "admin", "admin token " + adminGrant(r.Context()).Name
}

// readsBusy answers a read the gate refused.
func readsBusy(w http.ResponseWriter, r *http.Request) {
	httpx.WriteError(w, http.StatusServiceUnavailable, httpx.ReadsBusy)
}
