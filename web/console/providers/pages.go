// Package providers is the console's provider pages
// (/t/{tenant}/providers): the list with the connect form, one provider's
// page with its endpoint, secrets, API credentials, Change Data Capture,
// recent deliveries and scopes, and the owners' actions on them (connect,
// rotate, retire, test event, API credentials, the CDC switch, scopes), and
// its backfills (started and cancelled by operators too). It is a page family of web/console, which registers
// its routes, behind the session, the tenant, the roles and cross-origin
// protection, and hands it the page frame through Console.
package providers

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/web/console/shell"
)

// Store is what the provider pages read and change.
type Store interface {
	domain.ProviderService
	domain.ProviderRemover // the owners' Remove provider
	domain.EventService    // the outcome of a test event
	// The providers' API credentials, for backfill.
	pull.CredentialStore
	pull.JobStore // the backfill section
	// The Change Data Capture section and its switch.
	CDCStream(ctx context.Context, tenantID, providerID int64) (domain.CDCStream, bool, error)
	SetCDC(ctx context.Context, tenantID, providerID int64, c domain.CDCConfig) (domain.CDCStream, error)
	// The apps an owner may install by OAuth (web/console/apps).
	Apps(ctx context.Context) ([]domain.App, error)
	// The tenant's installs, whose needs_reconnect a banner shows.
	TenantInstalls(ctx context.Context, tenantID int64) ([]domain.AppInstall, error)
}

// Pages serves the provider pages.
type Pages struct {
	Console shell.Console
	Store   Store
	// Webhook is the receiver, through which test events are sent in-process.
	Webhook   http.Handler
	PublicURL string // the base URL providers call; "" to build it from each request
	Log       *slog.Logger
	Now       func() time.Time
}

// tenant is the request's tenant.
func (h Pages) tenant(r *http.Request) domain.Tenant { return h.Console.Membership(r).Tenant }

// by names the operator making a change, for the log.
func by(r *http.Request) string {
	a, _ := domain.ActorFrom(r.Context())
	return a.Name
}

// formRefusal reports whether err is a refusal the operator can fix in the
// form they submitted, rather than an error page.
func formRefusal(err error) bool {
	code := domain.ErrorCode(err)
	return code == domain.EINVALID || code == domain.ECONFLICT
}
