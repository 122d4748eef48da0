package providers

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// scopeForm shows a stored scope's TTL in days when it is whole days.
func scopeForm(sc domain.Scope) views.ScopeForm {
	f := views.ScopeForm{ObjectType: sc.ObjectType, Action: sc.Action, IdentifierRule: sc.IdentifierRule.String(), Enabled: sc.Enabled}
	day := 24 * time.Hour
	if sc.TTL%day == 0 {
		f.TTLValue, f.TTLUnit = strconv.FormatInt(int64(sc.TTL/day), 10), "days"
	} else {
		f.TTLValue, f.TTLUnit = strconv.FormatFloat(sc.TTL.Hours(), 'f', -1, 64), "hours"
	}
	return f
}

// parseScopeForm reads a submitted scope; every refusal is EINVALID with a
// message for the form.
func parseScopeForm(f views.ScopeForm) (domain.Scope, error) {
	sc := domain.Scope{ScopeName: domain.ScopeName{ObjectType: f.ObjectType, Action: f.Action}, Enabled: f.Enabled}
	if err := domain.ValidateScopeName(sc.ScopeName); err != nil {
		return sc, err
	}
	n, err := strconv.ParseFloat(f.TTLValue, 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) || n <= 0 {
		return sc, domain.Errorf(domain.EINVALID, "TTL must be a positive number of hours or days, got %q", f.TTLValue)
	}
	unit := map[string]time.Duration{"hours": time.Hour, "days": 24 * time.Hour}[f.TTLUnit]
	if unit == 0 {
		return sc, domain.Errorf(domain.EINVALID, "TTL unit must be hours or days")
	}
	if n*float64(unit) > float64(10*domain.MaxTTL) {
		n = float64(10*domain.MaxTTL) / float64(unit) // beyond any bound, without overflowing a Duration
	}
	sc.TTL = time.Duration(n * float64(unit)).Round(time.Second)
	if err := domain.ValidateTTL(sc.TTL); err != nil {
		return sc, err
	}
	sc.IdentifierRule, err = domain.ParseIdentifierRule(f.IdentifierRule)
	return sc, err
}

// HandleSaveScope adds a scope or changes one, and confirms it.
func (h Pages) HandleSaveScope(w http.ResponseWriter, r *http.Request) {
	p, k, ok := h.currentProvider(w, r)
	if !ok {
		return
	}
	f := views.ScopeForm{
		ObjectType:     strings.TrimSpace(r.PostFormValue("object_type")),
		Action:         strings.TrimSpace(r.PostFormValue("action")),
		TTLValue:       strings.TrimSpace(r.PostFormValue("ttl")),
		TTLUnit:        r.PostFormValue("ttl_unit"),
		IdentifierRule: strings.TrimSpace(r.PostFormValue("identifier_rule")),
		Enabled:        r.PostFormValue("enabled") != "",
		New:            r.PostFormValue("new") != "",
	}
	sc, err := parseScopeForm(f)
	if err == nil {
		err = h.Store.SaveProviderScope(r.Context(), h.tenant(r).ID, p.ID, sc)
	}
	if formRefusal(err) {
		f.Error = domain.ErrorMessage(err)
		h.renderProvider(w, r, http.StatusUnprocessableEntity, p, k, refusedForm{scope: f})
		return
	}
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	state := "enabled"
	if !sc.Enabled {
		state = "disabled"
	}
	saved := scopeForm(sc)
	// Back to the saved scope's row, marked, with the flash at the top.
	to := h.providerURL(r, p.Name) + "?saved=" + url.QueryEscape(sc.ScopeName.String()) + "#scope-row-" + sc.ScopeName.String()
	h.Console.RedirectWithFlash(w, r, to, "ok", fmt.Sprintf("Saved scope %s: TTL %s %s, identifier %s, %s.",
		sc.ScopeName, saved.TTLValue, saved.TTLUnit, sc.IdentifierRule, state))
}
