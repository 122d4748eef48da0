package destinations

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/httpx"
)

// attemptsShown is how many attempts a page of the detail view lists.
const attemptsShown = 20

// listPath and detailPath are the console paths of the pages.
func (p Pages) listPath(r *http.Request) string {
	return "/t/" + p.Console.Membership(r).Tenant.Slug + "/destinations"
}

func (p Pages) detailPath(r *http.Request, id int64) string {
	return p.listPath(r) + "/" + strconv.FormatInt(id, 10)
}

// HandleDetail shows one destination with a page of its attempts, newest
// first; ?attempts= is the cursor of an older page.
func (p Pages) HandleDetail(w http.ResponseWriter, r *http.Request) {
	p.renderDetail(w, r, http.StatusOK, views.DestinationPage{})
}

// renderDetail shows the {id} destination with what v already holds: a
// secret just rotated, or a refused rewind.
func (p Pages) renderDetail(w http.ResponseWriter, r *http.Request, status int, v views.DestinationPage) {
	ctx, tenantID := r.Context(), p.Console.Membership(r).Tenant.ID
	id, err := httpx.DestinationID(r)
	if err == nil {
		v.Destination, err = p.Store.Destination(ctx, tenantID, id)
	}
	cursor := r.URL.Query().Get("attempts")
	var next string
	if err == nil {
		v.Attempts, next, err = p.Store.DestinationAttempts(ctx, tenantID, id, domain.Page{Limit: attemptsShown, Cursor: cursor})
	}
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	if next != "" {
		v.OlderURL = p.detailPath(r, id) + "?attempts=" + url.QueryEscape(next) + "#attempts"
	}
	if cursor != "" {
		v.NewestURL = p.detailPath(r, id) + "#attempts"
	}
	v.Now = p.Now()
	title := "Destination " + strconv.FormatInt(id, 10)
	p.Console.Render(w, r, status, views.DestinationView(p.Console.Layout(r, title, "destinations"), v))
}

// action runs an owner's change of the {id} destination, which returns
// what to tell them, and goes back to where the form was: the list, or the
// destination's page.
func (p Pages) action(w http.ResponseWriter, r *http.Request, verb string, change func(tenantID, id int64) (string, error)) {
	id, err := httpx.DestinationID(r)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	back := p.detailPath(r, id)
	if r.PostFormValue("back") == "list" {
		back = p.listPath(r)
	}
	flash, err := change(p.Console.Membership(r).Tenant.ID, id)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	p.logChange(r, "destination "+verb, id)
	p.Console.RedirectWithFlash(w, r, back, "ok", flash)
}

// HandlePause stops sending; changes keep being taken into its queue.
func (p Pages) HandlePause(w http.ResponseWriter, r *http.Request) {
	p.action(w, r, "paused", func(tenantID, id int64) (string, error) {
		return fmt.Sprintf("Destination %d paused: nothing is sent to it until it is resumed.", id),
			p.Store.PauseDestination(r.Context(), tenantID, id)
	})
}

// HandleResume sends again, retrying the pending changes at once.
func (p Pages) HandleResume(w http.ResponseWriter, r *http.Request) {
	p.action(w, r, "resumed", func(tenantID, id int64) (string, error) {
		return fmt.Sprintf("Destination %d resumed: its pending changes are retried now.", id),
			p.Store.ResumeDestination(r.Context(), tenantID, id)
	})
}

// HandleDelete deletes a destination with its queue, secrets and attempts.
func (p Pages) HandleDelete(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.DestinationID(r)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	tenantID := p.Console.Membership(r).Tenant.ID
	d, err := p.Store.Destination(r.Context(), tenantID, id)
	if err == nil {
		err = p.Store.DeleteDestination(r.Context(), tenantID, id)
	}
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	p.logChange(r, "destination deleted", id, "target", d.RedactedTarget())
	p.Console.RedirectWithFlash(w, r, p.listPath(r), "ok",
		fmt.Sprintf("Destination %d (%s) deleted; nothing more is sent to it.", id, d.RedactedTarget()))
}

// HandleRewind sends again every change after the cursor given, "" being
// the start of the feed: every change still kept. A cursor that is not one,
// or is past the newest change, is refused in the form.
func (p Pages) HandleRewind(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.DestinationID(r)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	after := strings.TrimSpace(r.PostFormValue("after"))
	position, err := stream.ParseCursor(after)
	if err != nil {
		err = domain.Errorf(domain.EINVALID, "%q is not a cursor of the change feed, such as %s; "+
			"leave it empty to send every change still kept", after, stream.FormatCursor(1042))
	} else {
		err = p.Store.RewindDestination(r.Context(), p.Console.Membership(r).Tenant.ID, id, position)
	}
	if domain.ErrorCode(err) == domain.EINVALID {
		p.renderDetail(w, r, http.StatusUnprocessableEntity, views.DestinationPage{Rewind: after, RewindError: domain.ErrorMessage(err)})
		return
	}
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	from := "every change still kept"
	if position > 0 {
		from = "every change after " + after
	}
	p.logChange(r, "destination rewound", id, "after", after)
	p.Console.RedirectWithFlash(w, r, p.detailPath(r, id), "ok",
		fmt.Sprintf("Destination %d rewound: %s is sent again; what it had pending is taken again in order.", id, from))
}

// HandleRotate makes a new signing secret and shows it, this once; the
// previous one keeps signing for stream.DestinationSecretGrace.
func (p Pages) HandleRotate(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.DestinationID(r)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	secret, err := p.Store.RotateDestinationSecret(r.Context(), p.Console.Membership(r).Tenant.ID, id)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	p.logChange(r, "destination secret rotated", id)
	w.Header().Set("Cache-Control", "no-store") // the page holds the secret
	p.renderDetail(w, r, http.StatusOK, views.DestinationPage{Secret: secret})
}
