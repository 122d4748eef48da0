package providers

import (
	"net/http"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/views"
)

// cdcView is the Change Data Capture section of provider p's page; nil
// for a kind without it.
func (h Pages) cdcView(r *http.Request, p domain.ProviderSummary) (*views.CDCView, error) {
	if !provider.ChangeDataCapture(p.Kind) {
		return nil, nil
	}
	ctx, tenantID := r.Context(), h.tenant(r).ID
	st, _, err := h.Store.CDCStream(ctx, tenantID, p.ID)
	if err != nil {
		return nil, err
	}
	info, set, err := h.Store.APICredentialsInfo(ctx, tenantID, p.ID)
	if err != nil {
		return nil, err
	}
	return &views.CDCView{Stream: st, Now: h.Now(), ConnectedApp: set && info.Secret == pull.SecretClient}, nil
}

// HandleSetCDC turns the provider's Change Data Capture on or off, keeping
// its channel and address (set on the command line). Turning it on
// without the connected app's credentials is refused with a message.
func (h Pages) HandleSetCDC(w http.ResponseWriter, r *http.Request) {
	p, _, ok := h.currentProvider(w, r)
	if !ok {
		return
	}
	back := h.providerURL(r, p.Name) + "#cdc"
	if !provider.ChangeDataCapture(p.Kind) {
		h.Console.RedirectWithFlash(w, r, back, "error", "Change Data Capture is Salesforce's: provider kind "+p.Kind+" has none.")
		return
	}
	t := h.tenant(r)
	cur, _, err := h.Store.CDCStream(r.Context(), t.ID, p.ID)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	cfg := cur.CDCConfig
	cfg.Enabled = r.PostFormValue("enabled") == "true"
	_, err = h.Store.SetCDC(r.Context(), t.ID, p.ID, cfg)
	if formRefusal(err) {
		h.Console.RedirectWithFlash(w, r, back, "error", "Cannot turn Change Data Capture on: "+domain.ErrorMessage(err)+".")
		return
	}
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Log.InfoContext(r.Context(), "provider CDC set", "tenant", t.Slug, "provider", p.Name, "enabled", cfg.Enabled, "by", by(r))
	msg := "Change Data Capture is off: the stream's position is kept for when it is turned on again."
	if cfg.Enabled {
		msg = "Change Data Capture is on: a node subscribes to " + cfg.Channel + " within a minute."
	}
	h.Console.RedirectWithFlash(w, r, back, "ok", msg)
}
