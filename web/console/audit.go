package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// auditPageSize is how many entries one page of the audit log shows.
const auditPageSize = 50

const adminAuditPath = "/admin/audit"

func (h auditPages) handleTenantAudit(w http.ResponseWriter, r *http.Request) {
	t := currentTenant(r.Context())
	h.renderAudit(w, r, domain.AuditQuery{TenantID: t.ID}, "/t/"+t.Slug+"/audit", "audit")
}

// handleAdminAudit shows every tenant's entries, and those outside any
// tenant (operators, sign-ins); the route table lets only admins reach it.
func (h auditPages) handleAdminAudit(w http.ResponseWriter, r *http.Request) {
	h.renderAudit(w, r, domain.AuditQuery{AllTenants: true}, adminAuditPath, "admin-audit")
}

// renderAudit shows one page of the entries q selects, narrowed by the
// request's filters. Filters the operator got wrong, and searches too
// broad to finish in time, are explained above the results.
func (h auditPages) renderAudit(w http.ResponseWriter, r *http.Request, q domain.AuditQuery, path, nav string) {
	ctx := r.Context()
	values := r.URL.Query()
	f := views.AuditFilters{Actor: strings.TrimSpace(values.Get("actor")), Action: values.Get("action"),
		From: values.Get("from"), To: values.Get("to")}
	p := views.AuditPage{Path: path, AllTenants: q.AllTenants, Filters: f}
	var err error
	if p.Actions, err = h.audit.AuditActions(ctx, q); err != nil {
		h.consoleError(w, r, err)
		return
	}
	page := domain.Page{Limit: auditPageSize, Cursor: values.Get("cursor")}
	if page.Cursor != "" {
		p.FirstURL = path + auditQueryString(f, "")
	}
	status := http.StatusOK
	err = auditFilter(&q, f)
	if err == nil {
		var next string
		p.Entries, next, err = h.audit.AuditLog(ctx, q, page)
		if next != "" {
			p.NextURL = path + auditQueryString(f, next)
		}
	}
	switch {
	case errors.Is(err, domain.ErrReadTimeout):
		status, p.Error = http.StatusServiceUnavailable, domain.ErrReadTimeout.Message
	case domain.ErrorCode(err) == domain.EINVALID:
		status, p.Error = http.StatusBadRequest, domain.ErrorMessage(err)
	case err != nil:
		h.consoleError(w, r, err)
		return
	}
	h.render(w, r, status, views.AuditLogView(h.layout(r, "Audit log", nav), p))
}

// auditFilter reads the form's filters into q. Times are datetime-local
// values in UTC; "to" includes the whole minute (or second) it names.
func auditFilter(q *domain.AuditQuery, f views.AuditFilters) error {
	q.Actor, q.Action = f.Actor, f.Action
	if f.From != "" {
		from, _, err := parseLocalTime("from", f.From)
		if err != nil {
			return err
		}
		q.From = from
	}
	if f.To != "" {
		to, precision, err := parseLocalTime("to", f.To)
		if err != nil {
			return err
		}
		q.Before = to.Add(precision)
	}
	return nil
}

// auditQueryString carries the filters (and the cursor, when set) into a
// page link.
func auditQueryString(f views.AuditFilters, cursor string) string {
	v := url.Values{}
	for _, kv := range [][2]string{{"actor", f.Actor}, {"action", f.Action}, {"from", f.From}, {"to", f.To},
		{"cursor", cursor}} {
		if kv[1] != "" {
			v.Set(kv[0], kv[1])
		}
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}
