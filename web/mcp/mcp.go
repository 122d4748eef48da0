// Package mcp is Tidemark's Model Context Protocol server
// (docs/contract/api.md#mcp): POST /api/v1/mcp, the protocol's Streamable
// HTTP transport in its stateless mode, so that any node answers any
// request. A tenant's API token authenticates each request and decides the
// tenant; its tools are the tenant API's reads (and, for read-write tokens,
// two of its writes), each served by calling the API in-process with the
// caller's token, so that shapes, pages, rights, read slots and audit are
// the API's own.
package mcp

import (
	"context"
	"log/slog"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tidemark/tidemark/domain"
)

// Authenticator resolves a request's bearer token by itself (the API's
// Handler): without a working one it has answered and returns false.
type Authenticator interface {
	Authenticate(w http.ResponseWriter, r *http.Request) (domain.TokenGrant, bool)
}

// Handler serves the MCP endpoint.
type Handler struct {
	auth Authenticator
	// Two servers, built once: the tools a read-only token sees, and all
	// of them. A request picks one by its token; nothing is kept between
	// requests.
	readOnly, readWrite *sdk.Server
	transport           http.Handler
}

// New returns the MCP endpoint's Handler. api serves the tenant API
// (/api/v1/tenants/{tenant}/...) that the tools call in-process.
func New(auth Authenticator, api http.Handler, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	t := tools{api: api}
	h := &Handler{auth: auth, readOnly: newServer(t, false), readWrite: newServer(t, true)}
	h.transport = sdk.NewStreamableHTTPHandler(h.server, &sdk.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true, // one JSON answer per request: nothing to hold open behind a load balancer
		Logger:       log,  // the transport's failures; the servers would log every request's session
		// The protection is against a web page reaching a local server
		// that trusts its caller; this one trusts only a bearer token,
		// which no page can send for its user, and runs behind proxies
		// on loopback that forward the public Host.
		DisableLocalhostProtection: true,
	})
	return h
}

// ServeHTTP authenticates the request's token, as the API does, and
// serves the request with the server its access sees.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g, ok := h.auth.Authenticate(w, r)
	if !ok {
		return
	}
	c := caller{grant: g, authorization: r.Header.Get("Authorization"), remoteAddr: r.RemoteAddr}
	h.transport.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
}

// server is the server of the request's token.
func (h *Handler) server(r *http.Request) *sdk.Server {
	if c, ok := callerFrom(r.Context()); ok && c.grant.Access == domain.TokenWrite {
		return h.readWrite
	}
	return h.readOnly
}

// caller is who calls the tools: what their token grants, and what the
// API needs to authenticate them again, as their request came.
type caller struct {
	grant         domain.TokenGrant
	authorization string // the request's Authorization header
	remoteAddr    string // the client's address, for the audit log
}

type callerKey struct{}

// callerFrom is the caller ServeHTTP put in the context; the SDK hands
// each tool the context of the request that carried its call.
func callerFrom(ctx context.Context) (caller, bool) {
	c, ok := ctx.Value(callerKey{}).(caller)
	return c, ok
}

// instructions tell an assistant what the server is for.
const instructions = "Tidemark receives a tenant's CRM webhooks and keeps each record's revisions exactly once and in order. " +
	"These tools read the tenant of your API token: records and their timelines, the event history, webhook deliveries, " +
	"revision conflicts, alerts and the change feed; a read-write token also resolves conflicts and replays deliveries. " +
	"Lists come in pages: pass next_cursor back as cursor (read_changes: as after) for the next one."

// newServer is a server with the read tools, and the write tools too when
// write is set.
func newServer(t tools, write bool) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "tidemark", Title: "Tidemark", Version: "v1"},
		&sdk.ServerOptions{Instructions: instructions})
	t.addReads(s)
	if write {
		t.addWrites(s)
	}
	return s
}
