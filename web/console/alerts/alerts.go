// Package alerts is the console's alerts page (/t/{tenant}/alerts): the
// alerts firing now, their history paged both ways, and the rules, which
// owners change there. It is a page family of web/console: web/console
// registers its routes behind the session, the tenant and cross-origin protection (the rule form
// behind the owner role too) and hands it the page frame through Console.
// The banner of firing alerts on every page is the frame's (web/console's
// layout).
package alerts

import (
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/console/shell"
)

// Pages serves the alerts page.
type Pages struct {
	Console shell.Console
	Store   Store
	Log     *slog.Logger
}

// Store is what the alerts page reads and changes.
type Store interface {
	alerting.Service
}

// historyShown is how many alerts a page of the history lists.
const historyShown = 25

// Path is the alerts page inside a tenant.
const Path = "/alerts"

// HandlePage shows the alerts page; ?state= filters the history,
// ?cursor= and ?before= page it.
func (p Pages) HandlePage(w http.ResponseWriter, r *http.Request) {
	p.render(w, r, http.StatusOK, views.AlertRuleForm{})
}

// render shows the page with form, a refused rule form, in its row.
func (p Pages) render(w http.ResponseWriter, r *http.Request, status int, form views.AlertRuleForm) {
	ctx, tenant := r.Context(), p.Console.Membership(r).Tenant
	q := r.URL.Query()
	v := views.AlertsPage{Form: form}
	state, err := alerting.ParseState(q.Get("state"))
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	v.State = string(state)
	page := domain.Page{Limit: historyShown, Cursor: q.Get("cursor"), Before: q.Get("before")}
	var cursors domain.PageCursors
	if v.Firing, err = p.Store.FiringAlerts(ctx, tenant.ID); err == nil {
		if v.History, cursors, err = p.Store.Alerts(ctx, tenant.ID, state, page); err == nil {
			v.Rules, err = p.Store.AlertRules(ctx, tenant.ID)
		}
	}
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	v.Pages = pages(page, cursors, func(cursor, before string) string {
		u := url.Values{}
		if state != "" {
			u.Set("state", string(state))
		}
		if cursor != "" {
			u.Set("cursor", cursor)
		}
		if before != "" {
			u.Set("before", before)
		}
		link := "/t/" + tenant.Slug + Path
		if len(u) > 0 {
			link += "?" + u.Encode()
		}
		return link + "#history"
	})
	p.Console.Render(w, r, status, views.AlertsView(p.Console.Layout(r, "Alerts", "alerts"), v))
}

// pages are the history's pager links.
func pages(page domain.Page, c domain.PageCursors, link func(cursor, before string) string) views.Pages {
	var v views.Pages
	if c.Prev != "" || page.Cursor != "" || page.Before != "" {
		v.Newest = link("", "")
	}
	if c.Prev != "" {
		v.Newer = link("", c.Prev)
	}
	if c.Next != "" {
		v.Older = link(c.Next, "")
	}
	return v
}

// HandleSetRule stores an owner's setting of the {rule} rule, from the
// whole form (enabled, threshold, window), audited; a refused value is
// shown in the rule's row.
func (p Pages) HandleSetRule(w http.ResponseWriter, r *http.Request) {
	m := p.Console.Membership(r)
	rule := alerting.Rule(chi.URLParam(r, "rule"))
	if !alerting.Known(rule) {
		p.Console.Error(w, r, alerting.Check(alerting.Config{Rule: rule}))
		return
	}
	form := views.AlertRuleForm{Rule: rule, Enabled: r.PostFormValue("enabled") != "",
		Threshold: strings.TrimSpace(r.PostFormValue("threshold")), Window: strings.TrimSpace(r.PostFormValue("window"))}
	c := alerting.Config{Rule: rule, Enabled: form.Enabled}
	threshold, err := strconv.ParseInt(form.Threshold, 10, 64)
	if err != nil {
		err = domain.Errorf(domain.EINVALID, "threshold must be a whole number of at least 1, not %q", form.Threshold)
	}
	c.Threshold = threshold
	if err == nil {
		c.Window, err = alerting.ParseWindow(form.Window)
	}
	if err == nil {
		c, err = p.Store.SetAlertRule(r.Context(), m.Tenant.ID, c)
	}
	if domain.ErrorCode(err) == domain.EINVALID {
		form.Error = domain.ErrorMessage(err)
		p.render(w, r, http.StatusUnprocessableEntity, form)
		return
	}
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	by := ""
	if a, ok := domain.ActorFrom(r.Context()); ok {
		by = a.Name
	}
	p.Log.Info("alert rule set", "tenant", m.Tenant.Slug, "rule", rule, "by", by, "setting", alerting.Describe(c))
	p.Console.RedirectWithFlash(w, r, "/t/"+m.Tenant.Slug+Path+"#rules", "ok",
		"Rule "+string(rule)+" saved: "+ruleSentence(c)+".")
}

// ruleSentence says a setting in words: "enabled, threshold 50, window
// 10m".
func ruleSentence(c alerting.Config) string {
	state := "enabled"
	if !c.Enabled {
		state = "disabled"
	}
	return state + ", threshold " + strconv.FormatInt(c.Threshold, 10) + ", window " + views.AlertWindow(c.Window)
}
