package records

import (
	"net/http"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/httpx"
)

// HandleRecordReset forgets the record's revision once its id is typed.
func (h Pages) HandleRecordReset(w http.ResponseWriter, r *http.Request) {
	ctx, ref := r.Context(), httpx.RecordRef(r)
	if err := domain.ConfirmRepair(ref.ObjectID, r.PostFormValue("confirm")); err != nil {
		h.renderTimeline(w, r, ref, http.StatusUnprocessableEntity, views.RepairForms{Failed: "reset", Error: domain.ErrorMessage(err)})
		return
	}
	if _, err := h.Store.ResetRecord(ctx, h.tenant(r).ID, ref); err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Console.RedirectWithFlash(w, r, h.tenantURL(r, views.TimelinePath(ref)), "ok",
		"Reset "+ref.ObjectType+" "+ref.ObjectID+": the next event applies, whatever its revision.")
}

// HandleRecordErase erases the record's content once its id is typed.
func (h Pages) HandleRecordErase(w http.ResponseWriter, r *http.Request) {
	ctx, ref := r.Context(), httpx.RecordRef(r)
	if err := domain.ConfirmRepair(ref.ObjectID, r.PostFormValue("confirm")); err != nil {
		h.renderTimeline(w, r, ref, http.StatusUnprocessableEntity, views.RepairForms{Failed: "erase", Error: domain.ErrorMessage(err)})
		return
	}
	if _, err := h.Store.EraseRecord(ctx, h.tenant(r).ID, ref); err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Console.RedirectWithFlash(w, r, h.tenantURL(r, views.TimelinePath(ref)), "ok",
		"Erased "+ref.ObjectType+" "+ref.ObjectID+": its snapshots and payloads are gone; its outcomes stay.")
}

// Timeline shows a record's timeline; the people pages show a lead no
// signup names with it.
func (h Pages) Timeline(w http.ResponseWriter, r *http.Request, ref domain.RecordRef) {
	h.renderTimeline(w, r, ref, http.StatusOK, views.RepairForms{})
}

// renderTimeline shows a record's timeline, with the repair forms for
// owners; status and forms carry a refused confirmation.
func (h Pages) renderTimeline(w http.ResponseWriter, r *http.Request, ref domain.RecordRef, status int, forms views.RepairForms) {
	ctx := r.Context()
	tl, err := h.Store.RecordTimeline(ctx, h.tenant(r).ID, ref, timelineLimit)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	p := views.TimelinePage{Ref: ref, Record: tl.Record, Entries: views.NewTimelineItems(tl.Entries), Limit: timelineLimit,
		Badges: tl.Badges, Back: directoryBack(r)}
	l := h.Console.Layout(r, ref.ObjectType+" "+ref.ObjectID, "records")
	if l.Can(domain.RoleOwner) {
		p.Repair = &forms
	}
	h.Console.Render(w, r, status, views.TimelineView(l, p))
}

// HandleLeadErasePage shows the form that erases a lead.
func (h Pages) HandleLeadErasePage(w http.ResponseWriter, r *http.Request) {
	h.Console.Render(w, r, http.StatusOK, views.LeadEraseView(h.Console.Layout(r, "Erase a lead", "people"),
		views.LeadErasePage{Email: r.URL.Query().Get("email")}))
}

// HandleLeadErase erases a lead once its email is typed twice alike.
func (h Pages) HandleLeadErase(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	email := domain.NormalizeEmail(r.PostFormValue("email"))
	err := domain.ConfirmRepair(email, domain.NormalizeEmail(r.PostFormValue("confirm")))
	if err == nil {
		_, err = h.Store.EraseLead(ctx, h.tenant(r).ID, email)
	}
	switch {
	case err == nil:
		h.Console.RedirectWithFlash(w, r, h.tenantURL(r, "/leads/erase"), "ok",
			"Erased the lead: the person and the content of their signups are gone.")
	case domain.ErrorCode(err) == domain.EINVALID || domain.ErrorCode(err) == domain.ENOTFOUND:
		h.Console.Render(w, r, http.StatusUnprocessableEntity, views.LeadEraseView(h.Console.Layout(r, "Erase a lead", "people"),
			views.LeadErasePage{Email: email, Error: domain.ErrorMessage(err)}))
	default:
		h.Console.Error(w, r, err)
	}
}

// tenantURL is path in the request's tenant.
func (h Pages) tenantURL(r *http.Request, path string) string {
	return "/t/" + h.tenant(r).Slug + path
}
