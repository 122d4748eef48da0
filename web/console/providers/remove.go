package providers

import (
	"fmt"
	"net/http"
	"strings"
)

// HandleRemoveProvider removes the provider, an owner's act confirmed by
// typing its name; with erase checked its history is erased too. Then
// the providers list, with what was done.
func (h Pages) HandleRemoveProvider(w http.ResponseWriter, r *http.Request) {
	p, _, ok := h.currentProvider(w, r)
	if !ok {
		return
	}
	if strings.TrimSpace(r.PostFormValue("confirm_name")) != p.Name {
		h.Console.RedirectWithFlash(w, r, h.providerURL(r, p.Name)+"#remove", "error",
			"Provider "+p.Name+" is not removed: type its name to confirm.")
		return
	}
	t, erase := h.tenant(r), r.PostFormValue("erase") == "true"
	rm, err := h.Store.RemoveProvider(r.Context(), t.ID, p.ID, erase)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Log.InfoContext(r.Context(), "provider removed", "tenant", t.Slug, "provider", p.Name, "erase", erase, "by", by(r))
	msg := fmt.Sprintf("Provider %s is removed: its webhook URL answers 404 and its secrets and credentials are deleted. "+
		"Its history stays, shown as %q.", p.Name, rm.RemovedAs)
	if rm.Erased != nil {
		msg = fmt.Sprintf("Provider %s is removed: its webhook URL answers 404, its secrets and credentials are deleted, "+
			"and its history is erased (%d records, %d events, %d delivery bodies).", p.Name, rm.Erased.Records, rm.Erased.Events, rm.Erased.Bodies)
	}
	h.Console.RedirectWithFlash(w, r, "/t/"+t.Slug+"/providers", "ok", msg)
}
