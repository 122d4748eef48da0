package console

import (
	"net/http"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/httpx"
)

// handleRecordReset forgets the record's revision once its id is typed.
func (h recordPages) handleRecordReset(w http.ResponseWriter, r *http.Request) {
	ctx, ref := r.Context(), httpx.RecordRef(r)
	if err := domain.ConfirmRepair(ref.ObjectID, r.PostFormValue("confirm")); err != nil {
		h.renderTimeline(w, r, ref, http.StatusUnprocessableEntity, views.RepairForms{Failed: "reset", Error: domain.ErrorMessage(err)})
		return
	}
	if _, err := h.records.ResetRecord(ctx, currentTenant(ctx).ID, ref); err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.redirectWithFlash(w, r, currentTenantURL(r, views.TimelinePath(ref)), "ok",
		"Reset "+ref.ObjectType+" "+ref.ObjectID+": the next event applies, whatever its revision.")
}

// handleRecordErase erases the record's content once its id is typed.
func (h recordPages) handleRecordErase(w http.ResponseWriter, r *http.Request) {
	ctx, ref := r.Context(), httpx.RecordRef(r)
	if err := domain.ConfirmRepair(ref.ObjectID, r.PostFormValue("confirm")); err != nil {
		h.renderTimeline(w, r, ref, http.StatusUnprocessableEntity, views.RepairForms{Failed: "erase", Error: domain.ErrorMessage(err)})
		return
	}
	if _, err := h.records.EraseRecord(ctx, currentTenant(ctx).ID, ref); err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.redirectWithFlash(w, r, currentTenantURL(r, views.TimelinePath(ref)), "ok",
		"Erased "+ref.ObjectType+" "+ref.ObjectID+": its snapshots and payloads are gone; its outcomes stay.")
}

// renderTimeline shows a record's timeline, with the repair forms for
// owners; status and forms carry a refused confirmation.
func (h recordPages) renderTimeline(w http.ResponseWriter, r *http.Request, ref domain.RecordRef, status int, forms views.RepairForms) {
	ctx := r.Context()
	tl, err := h.records.RecordTimeline(ctx, currentTenant(ctx).ID, ref, timelineLimit)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	p := views.TimelinePage{Ref: ref, Record: tl.Record, Entries: views.NewTimelineItems(tl.Entries), Limit: timelineLimit,
		Badges: tl.Badges, Back: directoryBack(r)}
	l := h.layout(r, ref.ObjectType+" "+ref.ObjectID, "records")
	if l.Can(domain.RoleOwner) {
		p.Repair = &forms
	}
	h.render(w, r, status, views.TimelineView(l, p))
}

func (h recordPages) handleLeadErasePage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, views.LeadEraseView(h.layout(r, "Erase a lead", "people"),
		views.LeadErasePage{Email: r.URL.Query().Get("email")}))
}

// handleLeadErase erases a lead once its email is typed twice alike.
func (h recordPages) handleLeadErase(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	email := domain.NormalizeEmail(r.PostFormValue("email"))
	err := domain.ConfirmRepair(email, domain.NormalizeEmail(r.PostFormValue("confirm")))
	if err == nil {
		_, err = h.records.EraseLead(ctx, currentTenant(ctx).ID, email)
	}
	switch {
	case err == nil:
		h.redirectWithFlash(w, r, currentTenantURL(r, "/leads/erase"), "ok",
			"Erased the lead: the person and the content of their signups are gone.")
	case domain.ErrorCode(err) == domain.EINVALID || domain.ErrorCode(err) == domain.ENOTFOUND:
		h.render(w, r, http.StatusUnprocessableEntity, views.LeadEraseView(h.layout(r, "Erase a lead", "people"),
			views.LeadErasePage{Email: email, Error: domain.ErrorMessage(err)}))
	default:
		h.consoleError(w, r, err)
	}
}

func currentTenantURL(r *http.Request, path string) string {
	return "/t/" + currentTenant(r.Context()).Slug + path
}
