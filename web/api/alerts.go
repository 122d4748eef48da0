package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/web/httpx"
)

// alertRuleJSON is a rule's setting; its window a Go duration ("6h0m0s").
type alertRuleJSON struct {
	Rule      alerting.Rule `json:"rule"`
	Enabled   bool          `json:"enabled"`
	Threshold int64         `json:"threshold"`
	Window    string        `json:"window"`
}

func newAlertRuleJSON(c alerting.Config) alertRuleJSON {
	return alertRuleJSON{Rule: c.Rule, Enabled: c.Enabled, Threshold: c.Threshold, Window: c.Window.String()}
}

// alertJSON is one alert; resolved_at is null while it fires, provider
// null for a rule that is not per provider.
type alertJSON struct {
	ID         int64          `json:"id"`
	Rule       alerting.Rule  `json:"rule"`
	Provider   *string        `json:"provider"`
	Summary    string         `json:"summary"`
	Value      int64          `json:"value"`
	Threshold  int64          `json:"threshold"`
	Window     string         `json:"window"`
	StartedAt  jsonTime       `json:"started_at"`
	ResolvedAt *jsonTime      `json:"resolved_at"`
	State      alerting.State `json:"state"`
}

func newAlertJSON(a alerting.Alert) alertJSON {
	return alertJSON{ID: a.ID, Rule: a.Rule, Provider: optionalString(a.Provider), Summary: a.Summary, Value: a.Value,
		Threshold: a.Threshold, Window: a.Window.String(), StartedAt: jsonTime(a.StartedAt),
		ResolvedAt: optionalTime(a.ResolvedAt), State: a.State()}
}

// handleAlertRules answers GET alert-rules: every rule, in one page.
func (h alertHandlers) handleAlertRules(w http.ResponseWriter, r *http.Request) {
	rules, err := h.store.AlertRules(r.Context(), tokenTenant(r.Context()).ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]alertRuleJSON, len(rules))
	for i, c := range rules {
		out[i] = newAlertRuleJSON(c)
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"rules": out, "next_cursor": nil})
}

// alertRule reads the {rule} rule's setting; an unknown rule is
// ENOTFOUND.
func (h alertHandlers) alertRule(r *http.Request) (alerting.Config, error) {
	rule := alerting.Rule(chi.URLParam(r, "rule"))
	if !alerting.Known(rule) {
		return alerting.Config{}, alerting.Check(alerting.Config{Rule: rule})
	}
	rules, err := h.store.AlertRules(r.Context(), tokenTenant(r.Context()).ID)
	if err != nil {
		return alerting.Config{}, err
	}
	for _, c := range rules {
		if c.Rule == rule {
			return c, nil
		}
	}
	return alerting.Config{}, alerting.Check(alerting.Config{Rule: rule})
}

// handleAlertRule answers GET alert-rules/{rule}.
func (h alertHandlers) handleAlertRule(w http.ResponseWriter, r *http.Request) {
	c, err := h.alertRule(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, newAlertRuleJSON(c))
}

// maxAlertRuleRequest bounds a rule's request body.
const maxAlertRuleRequest = 4 << 10

// alertRuleExample is what a 400 about the body shows.
const alertRuleExample = `{"enabled": true, "threshold": 20, "window": "5m"}`

// handleSetAlertRule answers PUT alert-rules/{rule} with the rule's new
// setting. Each field is optional and keeps its value when left out;
// unknown fields are refused.
func (h alertHandlers) handleSetAlertRule(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Enabled   *bool   `json:"enabled"`
		Threshold *int64  `json:"threshold"`
		Window    *string `json:"window"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAlertRuleRequest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.Decode(&struct{}{}) != io.EOF {
		var typeErr *json.UnmarshalTypeError
		msg := "body must be a JSON object such as " + alertRuleExample
		switch {
		case errors.As(err, &typeErr) && typeErr.Field == "threshold":
			msg = "threshold must be a whole number of at least 1"
		case errors.As(err, &typeErr) && typeErr.Field == "window":
			msg = `window must be a duration such as "90s", "5m" or "6h"`
		case errors.As(err, &typeErr) && typeErr.Field == "enabled":
			msg = "enabled must be true or false"
		case err != nil && strings.HasPrefix(err.Error(), "json: unknown field "):
			msg = strings.TrimPrefix(err.Error(), "json: ") + "; the fields are enabled, threshold and window"
		}
		httpx.WriteError(w, http.StatusBadRequest, msg)
		return
	}
	c, err := h.alertRule(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if req.Enabled != nil {
		c.Enabled = *req.Enabled
	}
	if req.Threshold != nil {
		c.Threshold = *req.Threshold
	}
	if req.Window != nil {
		if c.Window, err = alerting.ParseWindow(*req.Window); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	ctx := r.Context()
	if c, err = h.store.SetAlertRule(ctx, tokenTenant(ctx).ID, c); err != nil {
		h.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, newAlertRuleJSON(c))
}

// handleAlerts answers GET alerts?state=firing|resolved: the tenant's
// alerts newest first, keyset pages.
func (h alertHandlers) handleAlerts(w http.ResponseWriter, r *http.Request) {
	state, err := alerting.ParseState(r.URL.Query().Get("state"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	listJSON(h, w, r, "alerts", func(ctx context.Context, p domain.Page) ([]alerting.Alert, string, error) {
		list, cursors, err := h.store.Alerts(ctx, tokenTenant(ctx).ID, state, p)
		return list, cursors.Next, err
	}, newAlertJSON)
}
