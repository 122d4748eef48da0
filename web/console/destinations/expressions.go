package destinations

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/shape"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/httpx"
)

// HandleExpressions saves the {id} destination's filter and transform
// (empty removes one), or, with preview, shows what they would make of
// the workspace's newest changes without saving. Expressions that do not
// compile are refused in the form.
func (p Pages) HandleExpressions(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.DestinationID(r)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	form := views.ExpressionsForm{Filter: strings.TrimSpace(r.PostFormValue("filter")),
		Transform: strings.TrimSpace(r.PostFormValue("transform"))}
	if r.PostFormValue("preview") != "" {
		preview := p.preview(r, form.Filter, form.Transform)
		p.renderDetail(w, r, http.StatusOK, views.DestinationPage{Expressions: &form, Preview: &preview})
		return
	}
	_, err = p.Store.UpdateDestination(r.Context(), p.Console.Membership(r).Tenant.ID, id,
		stream.DestinationUpdate{Filter: &form.Filter, Transform: &form.Transform})
	if domain.ErrorCode(err) == domain.EINVALID {
		form.Error = domain.ErrorMessage(err)
		p.renderDetail(w, r, http.StatusUnprocessableEntity, views.DestinationPage{Expressions: &form})
		return
	}
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	p.logChange(r, "destination filter and transform set", id)
	p.Console.RedirectWithFlash(w, r, p.detailPath(r, id), "ok",
		fmt.Sprintf("Destination %d: filter and transform saved; the sender uses them within seconds.", id))
}

// preview tries filter and transform on the workspace's newest changes,
// as the API's test-expression does.
func (p Pages) preview(r *http.Request, filter, transform string) views.ExpressionPreview {
	tried, _, err := shape.Try(r.Context(), p.Store, p.Console.Membership(r).Tenant.ID, filter, transform, nil, shape.DefaultPreviewLimit)
	if err != nil {
		if domain.ErrorCode(err) != domain.EINVALID {
			p.Log.ErrorContext(r.Context(), "destination preview", "err", err)
		}
		return views.ExpressionPreview{Error: domain.ErrorMessage(err)}
	}
	rows := make([]views.PreviewRow, len(tried))
	for i, t := range tried {
		rows[i] = views.PreviewRow{ID: t.Change.ID(), Type: string(t.Change.Type), Matched: t.Matched, Data: string(t.Data), Error: t.Error}
	}
	return views.ExpressionPreview{Rows: rows}
}
