package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// repairRoutes registers the owner's record repair: reset and erase of a
// record, erase of a lead. Each needs a typed confirmation.
func (s *Server) repairRoutes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(s.requireRole(domain.RoleOwner))
		r.Post("/records/{provider}/{object_type}/{object_id}/reset", s.handleRecordReset)
		r.Post("/records/{provider}/{object_type}/{object_id}/erase", s.handleRecordErase)
		r.Get("/leads/erase", s.handleLeadErasePage)
		r.Post("/leads/erase", s.handleLeadErase)
	})
}

func recordRef(r *http.Request) domain.RecordRef {
	return domain.RecordRef{Provider: pathParam(r, "provider"), ObjectType: pathParam(r, "object_type"),
		ObjectID: pathParam(r, "object_id")}
}

// handleRecordReset forgets the record's revision once its id is typed.
func (s *Server) handleRecordReset(w http.ResponseWriter, r *http.Request) {
	ctx, ref := r.Context(), recordRef(r)
	if err := domain.ConfirmRepair(ref.ObjectID, r.PostFormValue("confirm")); err != nil {
		s.renderTimeline(w, r, ref, http.StatusUnprocessableEntity, views.RepairForms{Failed: "reset", Error: domain.ErrorMessage(err)})
		return
	}
	if _, err := s.records.ResetRecord(ctx, currentTenant(ctx).ID, ref); err != nil {
		s.consoleError(w, r, err)
		return
	}
	s.redirectWithFlash(w, r, currentTenantURL(r, views.TimelinePath(ref)), "ok",
		"Reset "+ref.ObjectType+" "+ref.ObjectID+": the next event applies, whatever its revision.")
}

// handleRecordErase erases the record's content once its id is typed.
func (s *Server) handleRecordErase(w http.ResponseWriter, r *http.Request) {
	ctx, ref := r.Context(), recordRef(r)
	if err := domain.ConfirmRepair(ref.ObjectID, r.PostFormValue("confirm")); err != nil {
		s.renderTimeline(w, r, ref, http.StatusUnprocessableEntity, views.RepairForms{Failed: "erase", Error: domain.ErrorMessage(err)})
		return
	}
	if _, err := s.records.EraseRecord(ctx, currentTenant(ctx).ID, ref); err != nil {
		s.consoleError(w, r, err)
		return
	}
	s.redirectWithFlash(w, r, currentTenantURL(r, views.TimelinePath(ref)), "ok",
		"Erased "+ref.ObjectType+" "+ref.ObjectID+": its snapshots and payloads are gone; its outcomes stay.")
}

// renderTimeline shows a record's timeline, with the repair forms for
// owners; status and forms carry a refused confirmation.
func (s *Server) renderTimeline(w http.ResponseWriter, r *http.Request, ref domain.RecordRef, status int, forms views.RepairForms) {
	ctx := r.Context()
	tl, err := s.records.RecordTimeline(ctx, currentTenant(ctx).ID, ref, timelineLimit)
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	p := views.TimelinePage{Ref: ref, Record: tl.Record, Entries: views.NewTimelineItems(tl.Entries), Limit: timelineLimit,
		Badges: tl.Badges, Back: directoryBack(r)}
	l := s.layout(r, ref.ObjectType+" "+ref.ObjectID, "records")
	if l.Can(domain.RoleOwner) {
		p.Repair = &forms
	}
	s.render(w, r, status, views.TimelineView(l, p))
}

func (s *Server) handleLeadErasePage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, views.LeadEraseView(s.layout(r, "Erase a lead", "people"),
		views.LeadErasePage{Email: r.URL.Query().Get("email")}))
}

// handleLeadErase erases a lead once its email is typed twice alike.
func (s *Server) handleLeadErase(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	email := domain.NormalizeEmail(r.PostFormValue("email"))
	err := domain.ConfirmRepair(email, domain.NormalizeEmail(r.PostFormValue("confirm")))
	if err == nil {
		_, err = s.records.EraseLead(ctx, currentTenant(ctx).ID, email)
	}
	switch {
	case err == nil:
		s.redirectWithFlash(w, r, currentTenantURL(r, "/leads/erase"), "ok",
			"Erased the lead: the person and the content of their signups are gone.")
	case domain.ErrorCode(err) == domain.EINVALID || domain.ErrorCode(err) == domain.ENOTFOUND:
		s.render(w, r, http.StatusUnprocessableEntity, views.LeadEraseView(s.layout(r, "Erase a lead", "people"),
			views.LeadErasePage{Email: email, Error: domain.ErrorMessage(err)}))
	default:
		s.consoleError(w, r, err)
	}
}

func currentTenantURL(r *http.Request, path string) string {
	return "/t/" + currentTenant(r.Context()).Slug + path
}
