package lists

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// AdminAuditPath is the path of every workspace's audit log.
const AdminAuditPath = "/admin/audit"

// HandleTenantAudit shows the tenant's audit log.
func (h Pages) HandleTenantAudit(w http.ResponseWriter, r *http.Request) {
	t := h.Console.Membership(r).Tenant
	h.renderAudit(w, r, domain.AuditQuery{TenantID: t.ID}, "/t/"+t.Slug+"/audit", "audit")
}

// HandleAdminAudit shows every tenant's entries, and those outside any
// tenant (operators, sign-ins); the route table lets only admins reach it.
func (h Pages) HandleAdminAudit(w http.ResponseWriter, r *http.Request) {
	h.renderAudit(w, r, domain.AuditQuery{AllTenants: true}, AdminAuditPath, "admin-audit")
}

// renderAudit shows one page of the entries q selects, narrowed by the
// request's filters. Filters the operator got wrong, and searches too
// broad to finish in time, are explained above the results.
func (h Pages) renderAudit(w http.ResponseWriter, r *http.Request, q domain.AuditQuery, path, nav string) {
	ctx := r.Context()
	values := r.URL.Query()
	f := views.AuditFilters{Actor: strings.TrimSpace(values.Get("actor")), Action: values.Get("action"),
		From: values.Get("from"), To: values.Get("to")}
	p := views.AuditPage{Path: path, AllTenants: q.AllTenants, Filters: f}
	var err error
	if p.Actions, err = h.Store.AuditActions(ctx, q); err != nil {
		h.Console.Error(w, r, err)
		return
	}
	page := listPage(values)
	page.Limit = PageSize
	status := http.StatusOK
	err = auditFilter(&q, f)
	if err == nil {
		var info domain.PageInfo
		p.Entries, info, err = h.Store.AuditLogPage(ctx, q, page)
		p.Pages = pages(page, info, len(p.Entries), func(cursor, before string) string {
			return path + withPosition(auditValues(f), "", cursor, before)
		})
	}
	switch {
	case errors.Is(err, domain.ErrReadTimeout):
		status, p.Error = http.StatusServiceUnavailable, domain.ErrReadTimeout.Message
	case domain.ErrorCode(err) == domain.EINVALID:
		status, p.Error = http.StatusBadRequest, domain.ErrorMessage(err)
	case err != nil:
		h.Console.Error(w, r, err)
		return
	}
	h.Console.Render(w, r, status, views.AuditLogView(h.Console.Layout(r, "Audit log", nav), p))
}

// auditFilter reads the form's filters into q. Times are datetime-local
// values in UTC; "to" includes the whole minute (or second) it names.
func auditFilter(q *domain.AuditQuery, f views.AuditFilters) error {
	q.Actor, q.Action = f.Actor, f.Action
	var err error
	q.From, q.Before, err = ParseLocalRange(f.From, f.To)
	return err
}

// auditValues are the filters as a page link's query values.
func auditValues(f views.AuditFilters) url.Values {
	v := url.Values{}
	for _, kv := range [][2]string{{"actor", f.Actor}, {"action", f.Action}, {"from", f.From}, {"to", f.To}} {
		if kv[1] != "" {
			v.Set(kv[0], kv[1])
		}
	}
	return v
}
