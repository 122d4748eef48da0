package providers

import (
	"net/http"

	"github.com/tidemark/tidemark/domain"
)

// reconnects are the tenant's installs whose tokens HubSpot refused to
// renew, of providerID alone unless it is 0: each is a banner asking an
// owner to install the app again.
func (h Pages) reconnects(r *http.Request, providerID int64) ([]domain.AppInstall, error) {
	installs, err := h.Store.TenantInstalls(r.Context(), h.tenant(r).ID)
	if err != nil {
		return nil, err
	}
	var out []domain.AppInstall
	for _, in := range installs {
		if in.Status == domain.InstallNeedsReconnect && (providerID == 0 || in.ProviderID == providerID) {
			out = append(out, in)
		}
	}
	return out, nil
}
