package domain

import (
	"context"
	"time"
)

// AuditRetention is how long audit entries are kept at least; only
// retention may delete them, and nothing may update them.
const AuditRetention = 400 * 24 * time.Hour

// Actor kinds: who made a change.
const (
	ActorOperator = "operator" // a person signed in to the console
	ActorToken    = "token"    // an API token
	ActorCLI      = "cli"      // the tidemark command, with the database's authority
)

// Actor is who makes a change, as the audit log records it.
type Actor struct {
	Kind    string // ActorOperator, ActorToken or ActorCLI
	Name    string // the operator's email, the token's name, or the OS user of the CLI
	Address string // the client address, empty for the CLI
	// ID is the operator's or the token's id, 0 for the CLI: a replay job
	// re-checks its actor by it.
	ID int64
}

type actorKey struct{}

// WithActor returns ctx carrying a as the author of the changes made with it.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the actor of ctx, if one was set.
func ActorFrom(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}

// AuditEntry is one recorded change. Summary says what changed (before and
// after where that helps) and never holds a secret.
type AuditEntry struct {
	ID            int64
	At            time.Time
	TenantID      int64  // 0 for changes outside any tenant (operators, sign-ins)
	TenantSlug    string // "" outside any tenant
	Actor         string
	ActorKind     string
	Action        string
	Target        string
	Summary       string
	ClientAddress string
}

// Actions the providers, scopes, conflicts, operators, members, tokens and
// reconciliation record.
const (
	AuditConflictResolve     = "conflict_resolve"
	AuditProviderCreate      = "provider_create"
	AuditProviderRotate      = "provider_rotate"
	AuditProviderRetire      = "provider_retire"
	AuditProviderUpdate      = "provider_update"
	AuditProviderSecretShown = "provider_secret_shown"
	AuditScopeUpdate         = "scope_update"
	AuditOperatorAdmin       = "operator_admin"
	AuditOperatorDisable     = "operator_disable"
	AuditOperatorEnable      = "operator_enable"
	AuditOperatorPassword    = "operator_password"
	AuditOperatorSignOut     = "operator_sign_out"
	AuditOperatorCreate      = "operator_create"
	AuditSignIn              = "sign_in"
	AuditMemberAdd           = "member_add"
	AuditMemberRole          = "member_role"
	AuditMemberRemove        = "member_remove"
	AuditTokenCreate         = "token_create"
	AuditTokenRevoke         = "token_revoke"
	// Single sign-on's setup and rules (identity.SSOService), outside any
	// tenant; an admin marked break-glass.
	AuditSSOSet             = "sso_set"
	AuditSSODisable         = "sso_disable"
	AuditSSOMap             = "sso_map"
	AuditSSOUnmap           = "sso_unmap"
	AuditOperatorBreakGlass = "operator_break_glass"
	// AuditReconciliationRun is a reconciliation an admin ran from the
	// console; its target is "every workspace".
	AuditReconciliationRun = "reconciliation_run"
)

// AuditQuery narrows the audit log; zero fields match everything.
type AuditQuery struct {
	// TenantID is the tenant whose entries are listed (0: the changes
	// outside any tenant). AllTenants lists every entry instead, for admins.
	TenantID   int64
	AllTenants bool
	Actor      string    // the actor's name exactly: an email, a token's name
	Action     string    // exactly
	From       time.Time // at or after
	Before     time.Time // before
}

// AuditService reads the audit log. Entries are written only by the
// services whose changes they record, in the same transaction.
type AuditService interface {
	// AuditLog lists the entries q selects, newest first, and the cursor of
	// the next page ("" on the last). A malformed cursor is EINVALID.
	AuditLog(ctx context.Context, q AuditQuery, page Page) ([]AuditEntry, string, error)
	// AuditLogPage is AuditLog paged both ways, counted when page.Count asks.
	AuditLogPage(ctx context.Context, q AuditQuery, page Page) ([]AuditEntry, PageInfo, error)
	// AuditActions lists the actions recorded among the entries q's tenant
	// selects (its other filters are ignored), sorted, for a filter's choices.
	AuditActions(ctx context.Context, q AuditQuery) ([]string, error)
}

// Role is what a member may do within a tenant; each role may do what the
// ones before it may.
type Role string

const (
	RoleViewer   Role = "viewer"   // reads every page of the tenant
	RoleOperator Role = "operator" // also resolves conflicts and replays deliveries
	RoleOwner    Role = "owner"    // also providers, secrets, scopes, API tokens and members
)
